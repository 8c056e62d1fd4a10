/*
 * sigprog.h -- SIGNAL CONTEXT.  What the program asked for the sampling
 * signal, and its delivery: cpuprof's handler stays installed for the
 * signal (while a timer engine samples with it, and after, so that a
 * straggler of ours never meets the default action), and every delivery
 * that is not ours gets the disposition the program set, as if cpuprof
 * were not there.  The program's sigaction() calls on the signal land
 * here (interpose.c), not in the kernel.
 */
#ifndef CPUPROF_SIGPROG_H
#define CPUPROF_SIGPROG_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#define CP_PROG_SLOTS 4u
#define CP_PROG_NSIG 65

/* One signal's disposition as the program set it: act[cur % CP_PROG_SLOTS].
 * A writer fills the next slot and then moves `cur`, so a handler reading
 * the current one is not disturbed by the next change (nor by three). */
struct cp_prog_sig {
	struct sigaction act[CP_PROG_SLOTS];
	_Atomic unsigned cur;
};

struct cp_prog {
	/* Signals whose disposition cpuprof keeps for the program: bit
	 * sig - 1.  Once a signal engine has sampled with a signal, it stays
	 * here for the life of the process. */
	_Atomic uint64_t managed;
	struct cp_prog_sig sig[CP_PROG_NSIG];
	/* The itimer engine's signals carry no cookie: SIGPROF from the
	 * kernel before this CLOCK_MONOTONIC instant is a straggler of ours
	 * (UINT64_MAX while its timer runs). */
	_Atomic uint64_t itimer_grace_ns;
};

extern struct cp_prog cp_prog;

/* The managed signals the calling thread's program code believes it has
 * blocked (bit sig - 1): cpuprof leaves the one it samples with unblocked
 * in fact, and delivers a foreign instance of it as the program expects,
 * by making it pending and blocked.  initial-exec TLS, so the handler may
 * read it. */
extern __thread uint64_t cp_prog_blocked __attribute__((tls_model("initial-exec")));

/* Does cpuprof keep sig's disposition for the program?  Signal context. */
static inline int cp_prog_manages(int sig)
{
	return sig > 0 && sig < CP_PROG_NSIG &&
	       (atomic_load_explicit(&cp_prog.managed, memory_order_acquire) >> (sig - 1) & 1);
}

/* The disposition the program wants now for sig.  Signal context. */
static inline const struct sigaction *cp_prog_current(int sig)
{
	const struct cp_prog_sig *p = &cp_prog.sig[sig];
	return &p->act[atomic_load_explicit(&p->cur, memory_order_acquire) % CP_PROG_SLOTS];
}

/* Makes *a the program's disposition of sig (normal context). */
void cp_prog_set(int sig, const struct sigaction *a);

/* Delivers signal sig (with its siginfo and context) as the program's
 * disposition and mask say: leaves it pending if the program believes it
 * blocked, calls its handler with its mask, ignores it, or takes the
 * default action (termination, for every signal cpuprof samples with: the
 * process dies of sig when the handler returns).  Signal context. */
void cp_prog_deliver(int sig, siginfo_t *si, void *uc);

#endif
