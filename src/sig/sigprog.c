/*
 * sigprog.c -- SIGNAL CONTEXT.  Delivering the sampling signal to the
 * program when it is not ours (sigprog.h).  Masks and dispositions are
 * changed with the raw system calls (64-bit kernel signal sets), which
 * touch nothing of libc's.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "sigprog.h"

struct cp_prog cp_prog;
__thread uint64_t cp_prog_blocked __attribute__((tls_model("initial-exec")));

/* Sends sig, with the siginfo it came with, again: to the calling thread
 * if it was sent to a thread (tgkill), else to the process, for the
 * kernel to give to a thread that does not block it or that waits for it
 * in sigwait (it blocks it in this one once the handler returns).  Only a
 * process's main thread may queue a signal to the process that looks
 * like kill()'s or the kernel's: elsewhere it arrives as sigqueue()'s. */
static void requeue(int sig, siginfo_t *si)
{
	long pid = syscall(SYS_getpid), tid = syscall(SYS_gettid);
	if (si->si_code == SI_TKILL) {
		syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, si);
		return;
	}
	siginfo_t copy = *si;
	if (copy.si_code >= 0 && tid != pid)
		copy.si_code = SI_QUEUE;
	syscall(SYS_rt_sigqueueinfo, pid, sig, &copy);
}

/* The kernel's struct sigaction (the same layout on x86-64 and arm64). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* The first 64 signals of a libc sigset_t, as the kernel has them. */
static uint64_t set64(const sigset_t *s)
{
	uint64_t v;
	__builtin_memcpy(&v, s, sizeof v);
	return v;
}

static uint64_t bit(int sig)
{
	return 1ull << (sig - 1);
}

void cp_prog_set(int sig, const struct sigaction *a)
{
	struct cp_prog_sig *p = &cp_prog.sig[sig];
	unsigned next = atomic_load_explicit(&p->cur, memory_order_relaxed) + 1;
	p->act[next % CP_PROG_SLOTS] = *a;
	atomic_store_explicit(&p->cur, next, memory_order_release);
}

/* Signal context. */
void cp_prog_deliver(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *a = cp_prog_current(sig);
	int siginfo = (a->sa_flags & SA_SIGINFO) != 0;
	void (*h)(int) = a->sa_handler;
	void (*ha)(int, siginfo_t *, void *) = a->sa_sigaction;

	if (cp_prog_blocked & bit(sig)) {
		/* Blocked, as the program believes: pending and blocked in
		 * fact once this handler returns, until it unblocks it (or
		 * takes it with sigwait or a signalfd). */
		uint64_t m = set64(&((ucontext_t *)uc)->uc_sigmask) | bit(sig);
		__builtin_memcpy(&((ucontext_t *)uc)->uc_sigmask, &m, sizeof m);
		requeue(sig, si);
		return;
	}
	if (!siginfo && h == SIG_IGN)
		return;
	if ((!siginfo && h == SIG_DFL) || (siginfo && !ha)) {
		/* The default action of SIGPROF and of the real-time signals
		 * is to terminate: restore it and send the signal again; it
		 * is blocked until this handler returns, and then kills. */
		struct ksigaction dfl = { 0 };
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
		requeue(sig, si);
		return;
	}
	/* The program's handler runs with the mask it asked for: the mask
	 * of the interrupted code, its sa_mask, and sig itself unless
	 * SA_NODEFER.  Ours blocked everything meanwhile. */
	uint64_t mask = set64(&((ucontext_t *)uc)->uc_sigmask) | set64(&a->sa_mask);
	if (!(a->sa_flags & SA_NODEFER))
		mask |= bit(sig);
	mask &= ~(bit(SIGKILL) | bit(SIGSTOP));
	if (a->sa_flags & SA_RESETHAND) {
		struct sigaction d = *a;
		d.sa_flags &= ~SA_SIGINFO;
		d.sa_handler = SIG_DFL;
		cp_prog_set(sig, &d);
	}
	uint64_t all = ~0ull, old;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, &old, sizeof mask);
	if (siginfo)
		ha(sig, si, uc);
	else
		h(sig);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof all);
}
