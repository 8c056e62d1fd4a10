/*
 * timer.c -- the timer engine: a POSIX timer (timer_create) on each
 * thread's own CPU clock, signalling that thread (SIGEV_THREAD_ID).  The
 * kernel checks CPU timers from the scheduler tick only, so at rates above
 * the tick it fires late (and under contention seldom); the handler weighs
 * each sample by the CPU time the thread used since its previous sample,
 * read from the thread's CPU clock, which keeps the totals right.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "threads.h"

static int make_timer(pid_t tid, int signo, uint64_t period_ns, timer_t *out)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = signo;
	ev.sigev_value.sival_ptr = &cp_sig; /* the handler's cookie */
	ev._sigev_un._tid = tid;
	if (timer_create(cp_thread_cpu_clock(tid), &ev, out) < 0)
		return -errno;
	struct itimerspec its = {
		.it_interval = { (time_t)(period_ns / 1000000000u), (long)(period_ns % 1000000000u) },
	};
	its.it_value = its.it_interval;
	if (timer_settime(*out, 0, &its, NULL) < 0) {
		int e = -errno;
		timer_delete(*out);
		return e;
	}
	return 0;
}

static int timer_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	timer_t t;
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = signo;
	ev._sigev_un._tid = gettid();
	if (timer_create(cp_thread_cpu_clock(gettid()), &ev, &t) < 0) {
		int e = -errno;
		snprintf(why, len, "timer_create: %s", strerror(errno));
		return e;
	}
	timer_delete(t);
	return 0;
}

/* What the engine keeps in a thread's slot (cp_thread.engine_state). */
struct timer_state {
	timer_t id;
	int armed;
};
_Static_assert(sizeof(struct timer_state) <= sizeof(((struct cp_thread *)0)->engine_state),
	       "the timer's state does not fit in a thread's slot");

static struct timer_state *state_of(struct cp_thread *t)
{
	return (struct timer_state *)(void *)t->engine_state;
}

static int timer_arm(struct cp_thread *t, int signo, uint64_t period_ns)
{
	struct timer_state *s = state_of(t);
	int e = make_timer(t->tid, signo, period_ns, &s->id);
	if (e == 0)
		s->armed = 1;
	return e;
}

static void timer_disarm(struct cp_thread *t)
{
	struct timer_state *s = state_of(t);
	if (s->armed) {
		timer_delete(s->id);
		s->armed = 0;
	}
}

static int timer_start(const struct cp_engine_conf *c)
{
	return cp_threads_begin(&cp_engine_timer, c);
}

const struct cp_engine cp_engine_timer = {
	.name = CP_ENGINE_TIMER,
	.signal_source = CP_SIG_TIMER,
	.tick_driven = 1,
	.probe = timer_probe,
	.start = timer_start,
	.stop = cp_threads_end,
	.stats = cp_threads_stats,
	.forget = cp_threads_forget,
	.arm = timer_arm,
	.disarm = timer_disarm,
};
