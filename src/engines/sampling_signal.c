/*
 * sampling_signal.c -- the sampling signal of the timer and itimer
 * engines (sampling_signal.h).  Which signals are usable is decided here
 * once, for the library, LD_PRELOAD and the CLI alike.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/libc.h"
#include "sampling_signal.h"
#include "sig/sigprog.h"

static _Atomic int sampling_signo;


/* The disposition the program has for sig: the one cpuprof keeps for it,
 * or the kernel's. */
static void program_disposition(int sig, struct sigaction *out)
{
	if (cp_prog_manages(sig)) {
		*out = *cp_prog_current(sig);
		return;
	}
	memset(out, 0, sizeof *out);
	cp_real_sigaction(sig, NULL, out);
}

/* Does the program have a disposition of its own for sig? */
static int program_uses(int sig)
{
	struct sigaction cur;
	program_disposition(sig, &cur);
	if (cur.sa_flags & SA_SIGINFO)
		return cur.sa_sigaction != NULL;
	return cur.sa_handler != SIG_DFL;
}

int cp_signal_choose(const struct cp_engine *e, int asked, int below, char *why, size_t len)
{
	if (asked)
		return asked;
	if (e->fixed_signal) {
		if (program_uses(e->fixed_signal)) {
			snprintf(why, len, "the program has its own disposition of signal %d, the only one it can send",
				 e->fixed_signal);
			return 0;
		}
		return e->fixed_signal;
	}
	if (!below && !program_uses(SIGPROF))
		return SIGPROF;
	/* Libraries that take a real-time signal usually start at SIGRTMIN:
	 * search from the top. */
	for (int s = (below ? below : SIGRTMAX + 1) - 1; s >= SIGRTMIN; s--)
		if (!program_uses(s))
			return s;
	snprintf(why, len, "SIGPROF has the program's handler and no real-time signal is free");
	return 0;
}

/* Installs cpuprof's handler for sig, with the flags of the program's own
 * handler that matter to the code it interrupts. */
static int install_ours(int sig)
{
	const struct sigaction *p = cp_prog_current(sig);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = cp_sig_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	int has_handler = (p->sa_flags & SA_SIGINFO) ? p->sa_sigaction != NULL
						     : p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN;
	if (has_handler) {
		if (!(p->sa_flags & SA_RESTART))
			sa.sa_flags &= ~SA_RESTART;
		sa.sa_flags |= p->sa_flags & SA_ONSTACK;
	}
	/* Nothing may interrupt the handler: a handler of the program that
	 * longjmps out would leave a sample half taken. */
	sigfillset(&sa.sa_mask);
	return cp_real_sigaction(sig, &sa, NULL);
}

void cp_signal_apply(int sig)
{
	const struct sigaction *p = cp_prog_current(sig);
	int ignored = !(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_IGN;
	if (ignored && atomic_load(&sampling_signo) != sig) {
		struct sigaction ign;
		memset(&ign, 0, sizeof ign);
		ign.sa_handler = SIG_IGN;
		cp_real_sigaction(sig, &ign, NULL);
		return;
	}
	install_ours(sig);
}

int cp_signal_take(int sig)
{
	if (!cp_prog_manages(sig)) {
		struct sigaction cur;
		memset(&cur, 0, sizeof cur);
		if (cp_real_sigaction(sig, NULL, &cur) < 0)
			return -EINVAL;
		cp_prog_set(sig, &cur);
		atomic_fetch_or(&cp_prog.managed, 1ull << (sig - 1));
	}
	atomic_store(&sampling_signo, sig);
	if (install_ours(sig) < 0) {
		atomic_store(&sampling_signo, 0);
		cp_signal_apply(sig);
		return -EINVAL;
	}
	return 0;
}

void cp_signal_discard_pending(int sig)
{
	/* Setting SIG_IGN discards what is pending in every thread. */
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	cp_real_sigaction(sig, &ign, NULL);
	cp_signal_apply(sig);
}

void cp_signal_release(int sig)
{
	atomic_store(&sampling_signo, 0);
	struct sigaction cur;
	memset(&cur, 0, sizeof cur);
	if (cp_real_sigaction(sig, NULL, &cur) == 0 &&
	    (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != cp_sig_handler)) {
		/* The program replaced our handler behind the interposed
		 * sigaction (glibc's __sigaction, or the system call, as
		 * runtimes with signal code of their own do): the signal is
		 * its own now, as it set it. */
		cp_prog_set(sig, &cur);
		return;
	}
	cp_signal_discard_pending(sig);
}

int cp_signal_sampling(void)
{
	return atomic_load(&sampling_signo);
}
