/*
 * engine.h -- the sampling engines: each makes the kernel send the sampling
 * signal to a thread after every period of that thread's CPU time.  One
 * file per mechanism (engine_perf.c: perf and hw, engine_timer.c,
 * engine_itimer.c), one ops table per engine; cpuprof.c tries them best
 * first.
 */
#ifndef CPUPROF_ENGINE_H
#define CPUPROF_ENGINE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sig/sigstate.h"

struct cp_engine {
	const char *name;
	enum cp_engine_kind kind;
	/* Checks that the engine works here, before anything is armed.
	 * Returns 0, or a negative errno with the reason in why[len]. */
	int (*probe)(int signo, uint64_t period_ns, char *why, size_t len);
	/* Makes the kernel signal thread t->tid every period of its CPU time.
	 * Called with the registry lock held, after the handler is installed. */
	int (*arm)(struct cp_thread *t, int signo, uint64_t period_ns);
	/* Undoes arm(); no signal from this thread's arming follows it. */
	void (*disarm)(struct cp_thread *t);
	/* Process-wide start and stop (NULL when the engine has none). */
	int (*start)(int signo, uint64_t period_ns);
	void (*stop)(void);
};

extern const struct cp_engine cp_engine_perf, cp_engine_hw, cp_engine_timer, cp_engine_itimer;

/* Is `name` "auto" or an engine's name? */
int cp_engine_known(const char *name);

/* The CPU-time clock of any thread of this process, by thread id: the
 * kernel's encoding, ~tid << 3 | CPUCLOCK_PERTHREAD (4) | CPUCLOCK_SCHED
 * (2), which pthread_getcpuclockid() builds for a pthread. */
static inline clockid_t cp_thread_cpu_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6u);
}

/* The CPU time thread tid of this process has used, into *ns.  Returns 0,
 * or a negative errno (EINVAL once the thread is gone). */
static inline int cp_thread_cpu_ns(pid_t tid, uint64_t *ns)
{
	struct timespec now;
	if (clock_gettime(cp_thread_cpu_clock(tid), &now) < 0)
		return -errno;
	*ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	return 0;
}

/* Starts t's sample weights at the CPU time its thread has used so far
 * (the handler weighs each sample by the CPU used since t->last_ns).
 * Returns 0 or a negative errno. */
static inline int cp_start_weights(struct cp_thread *t)
{
	int e = cp_thread_cpu_ns(t->tid, &t->last_ns);
	t->seen_ns = t->last_ns;
	return e;
}

#endif
