/*
 * choose.c -- the engines in the order "auto" tries them, and the choice
 * (choose.h).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "choose.h"
#include "sampling_signal.h"

/* Where the kernel's timers are fine: the task clock fires on time and
 * needs no PMU, and like hw it sends no signal; then the timers. */
static const struct cp_engine *const best_first[] = { &cp_engine_perf, &cp_engine_timer, &cp_engine_itimer, NULL };
/* ... and where they are tick-bound.  There sleeps end at ticks and every
 * timer fires at one, so threads that work less than a tick between
 * sleeps are sampled at the same moments of their work: only a hardware
 * counter's overflow lands anywhere in it.  Then the timer engine: its
 * signal comes on the way out of the kernel and charges the system call
 * that was running, where the task clock's (user mode only unless
 * privileged) raises nothing. */
static const struct cp_engine *const tick_bound[] = { &cp_engine_hw, &cp_engine_timer, &cp_engine_perf,
						      &cp_engine_itimer, NULL };
static const struct cp_engine *const all[] = { &cp_engine_perf, &cp_engine_hw, &cp_engine_timer, &cp_engine_itimer,
					       NULL };

/* Appends "name: reason" to why[len] after "; " if it has something. */
static void add_reason(char *why, size_t len, const char *name, const char *reason)
{
	size_t used = strlen(why);
	if (used + 1 >= len)
		return;
	snprintf(why + used, len - used, "%s%s: %s", used ? "; " : "", name, reason);
}

/* Probes e with its signal; 0, or a negative errno with the reason. */
static int try_engine(const struct cp_engine *e, int asked, uint64_t period, int *signo, char *why, size_t len)
{
	*signo = 0;
	if (e->signal_source == CP_SIG_NONE)
		return e->probe(0, period, why, len);
	*signo = cp_signal_choose(e, asked, 0, why, len);
	int rc = *signo ? e->probe(*signo, period, why, len) : -ENODEV;
	/* A real-time signal of our own choice that the system cannot
	 * deliver (qemu-user has no host signal for SIGRTMAX-1 and SIGRTMAX)
	 * is refused by timer_create with EINVAL: try the free ones below. */
	while (rc == -EINVAL && !asked && !e->fixed_signal && *signo >= SIGRTMIN) {
		int next = cp_signal_choose(e, 0, *signo, why, len);
		if (!next)
			break;
		*signo = next;
		rc = e->probe(*signo, period, why, len);
	}
	return rc;
}

const struct cp_engine *cp_engine_choose(const char *want, int asked, uint64_t period_ns, long timer_res_ns,
					 int *signo, char *why, size_t len)
{
	int automatic = !strcmp(want, "auto");
	const struct cp_engine *const *order = !automatic ? all : timer_res_ns > CP_TICK_BOUND_NS ? tick_bound
												  : best_first;
	why[0] = '\0';
	if (order == tick_bound)
		snprintf(why, len, "the kernel's timers are tick-bound (resolution %ld ns): hw and timer tried before perf",
			 timer_res_ns);
	for (size_t i = 0; order[i]; i++) {
		const struct cp_engine *e = order[i];
		if (!automatic && strcmp(want, e->name) != 0)
			continue;
		char reason[256] = "";
		if (try_engine(e, asked, period_ns, signo, reason, sizeof reason) == 0)
			return e;
		add_reason(why, len, e->name, reason[0] ? reason : "does not work here");
	}
	return NULL;
}
