/*
 * itimer.c -- the itimer engine: setitimer(ITIMER_PROF), one
 * process-wide timer, the classic of gperftools.  The kernel checks it from
 * the tick and its signals carry no overrun count, so above the tick rate
 * it sends fewer signals than asked for; each sample is weighed by the CPU
 * its thread used since its previous one (the handler reads the thread's
 * CPU clock), so the CPU is still accounted, on fewer samples.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "engine.h"
#include "base/libc.h"
#include "sig/sigprog.h"
#include "threads.h"

static int itimer_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	if (signo != SIGPROF) {
		snprintf(why, len, "setitimer(ITIMER_PROF) can only send SIGPROF, not signal %d", signo);
		return -EINVAL;
	}
	return 0;
}

static int itimer_arm(struct cp_thread *t, int signo, uint64_t period_ns)
{
	return 0; /* the timer itself is process-wide */
}

static void itimer_disarm(struct cp_thread *t)
{
}

/* How long after the stop a SIGPROF from the kernel is taken for one of
 * ours, still in flight, rather than the program's own timer's. */
#define GRACE_NS 1000000000ull

/* The program took ITIMER_PROF. */
static _Atomic int yielded;

/* One process-wide timer: the program's now.  Every SIGPROF from here on
 * is the program's, and stopping leaves the timer alone. */
static const char *itimer_program_set_itimer(void)
{
	cp_sig.engine = CP_SIG_NONE;
	atomic_store(&yielded, 1);
	atomic_store(&cp_prog.itimer_grace_ns, 0);
	return "the program set ITIMER_PROF itself: the itimer engine stopped sampling then";
}

static int itimer_start(const struct cp_engine_conf *c)
{
	atomic_store(&yielded, 0);
	/* Until the timer stops, every SIGPROF from the kernel is ours, also
	 * while the profile is being stopped (active already lowered). */
	atomic_store(&cp_prog.itimer_grace_ns, UINT64_MAX);
	uint64_t period_ns = c->period_ns;
	struct itimerval v = {
		.it_interval = { (time_t)(period_ns / 1000000000u), (suseconds_t)(period_ns % 1000000000u / 1000u) },
	};
	if (v.it_interval.tv_sec == 0 && v.it_interval.tv_usec == 0)
		v.it_interval.tv_usec = 1;
	v.it_value = v.it_interval;
	int e = cp_threads_begin(&cp_engine_itimer, c);
	if (e == 0 && cp_real_setitimer(ITIMER_PROF, &v, NULL) < 0)
		e = -errno;
	if (e < 0)
		cp_threads_end();
	return e;
}

static void itimer_stop(void)
{
	if (atomic_load(&yielded)) {
		cp_threads_end();
		return;
	}
	/* From here on a SIGPROF from the kernel is ours only for a while:
	 * after that it is the program's own timer's. */
	struct itimerval v = { { 0, 0 }, { 0, 0 } };
	cp_real_setitimer(ITIMER_PROF, &v, NULL);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	atomic_store(&cp_prog.itimer_grace_ns, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + GRACE_NS);
	cp_threads_end();
}

const struct cp_engine cp_engine_itimer = {
	.name = CP_ENGINE_ITIMER,
	.signal_source = CP_SIG_ITIMER,
	.fixed_signal = SIGPROF,
	.tick_driven = 1,
	.probe = itimer_probe,
	.start = itimer_start,
	.stop = itimer_stop,
	.stats = cp_threads_stats,
	.forget = cp_threads_forget,
	.program_set_itimer = itimer_program_set_itimer,
	.arm = itimer_arm,
	.disarm = itimer_disarm,
};
