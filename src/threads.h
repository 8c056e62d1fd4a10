/*
 * threads.h -- the registry of sampled threads: arming the threads that
 * exist when a profile starts, the ones pthread_create() makes later and
 * the ones that register themselves; releasing a thread's timer or event
 * when it exits.  Not signal context.
 */
#ifndef CPUPROF_THREADS_H
#define CPUPROF_THREADS_H

#include <stdint.h>

#include "engine.h"

struct cp_thread_stats {
	uint64_t armed;       /* threads armed during the profile */
	uint64_t unarmed;     /* threads the engine could not arm */
	int first_error;      /* negative errno of the first failure */
	/* CPU the armed threads used after their last sample (or after
	 * being armed, if none came): no sample stands for it. */
	uint64_t unsampled_ns;
};

/* Allocates the thread table (once per process).  0 or -ENOMEM. */
int threads_init(void);
/* Starts arming threads with engine e: the calling thread, every thread
 * in /proc/self/task, and from now on every new thread. */
void threads_begin(const struct cp_engine *e, int signo, uint64_t period_ns);
/* Stops arming new threads (the handler must already be inactive and
 * drained), disarms and releases every slot. */
void threads_end(void);
/* Registers and arms the calling thread if a profile is arming threads. */
int threads_register_self(void);
/* Releases the slots of threads that have exited without telling us. */
void threads_sweep(void);
/* The counts so far; unsampled_ns includes the live threads' CPU since
 * their last sample. */
struct cp_thread_stats threads_stats(void);
/* In a child after fork(): forget every slot without touching the
 * parent's timers or events (the child's copies of perf fds are closed). */
void threads_forget_after_fork(void);
/* Creates a thread of the profiler's own that is never sampled and has
 * every signal blocked. */
int threads_spawn_internal(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
