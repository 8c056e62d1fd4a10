/*
 * engine_itimer.c -- the itimer engine: setitimer(ITIMER_PROF), one
 * process-wide timer, the classic of gperftools.  The kernel checks it from
 * the tick and its signals carry no overrun count, so above the tick rate
 * it sends fewer signals than asked for; each sample is weighed by the CPU
 * its thread used since its previous one (the handler reads the thread's
 * CPU clock), so the CPU is still accounted, on fewer samples.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "engine.h"

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
	return cp_start_weights(t); /* the timer itself is process-wide */
}

static void itimer_disarm(struct cp_thread *t)
{
}

static int itimer_start(int signo, uint64_t period_ns)
{
	struct itimerval v = {
		.it_interval = { (time_t)(period_ns / 1000000000u), (suseconds_t)(period_ns % 1000000000u / 1000u) },
	};
	if (v.it_interval.tv_sec == 0 && v.it_interval.tv_usec == 0)
		v.it_interval.tv_usec = 1;
	v.it_value = v.it_interval;
	return setitimer(ITIMER_PROF, &v, NULL) < 0 ? -errno : 0;
}

static void itimer_stop(void)
{
	struct itimerval v = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &v, NULL);
}

const struct cp_engine cp_engine_itimer = {
	.name = "itimer",
	.kind = CP_ENGINE_ITIMER,
	.probe = itimer_probe,
	.arm = itimer_arm,
	.disarm = itimer_disarm,
	.start = itimer_start,
	.stop = itimer_stop,
};
