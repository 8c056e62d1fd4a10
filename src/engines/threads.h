/*
 * threads.h -- the registry of the threads a signal engine samples:
 * arming the threads that exist when a profile starts, the ones
 * pthread_create() makes later and the ones that register themselves;
 * releasing a thread's timer when it exits.  The perf engines need none of
 * it (the kernel hands their events down to new threads).  Not signal
 * context.
 */
#ifndef CPUPROF_THREADS_H
#define CPUPROF_THREADS_H

#include <pthread.h>
#include <stdint.h>

#include "engine.h"

/* Starts arming threads with signal engine e: every thread in
 * /proc/self/task but the keeper, and from now on every new thread.
 * Returns 0 if any thread was armed, else the first error. */
int cp_threads_begin(const struct cp_engine *e, const struct cp_engine_conf *c);
/* Stops arming new threads (the handler must already be inactive and
 * drained), disarms and releases every slot. */
void cp_threads_end(void);
/* Registers and arms the calling thread if a profile is arming threads.
 * 0, or a negative errno. */
int cp_threads_register_self(void);
/* Releases the slots of threads that have exited without telling us, and
 * reads the CPU clocks of the threads whose exit we cannot hook. */
void cp_threads_sweep(void);
/* The counts so far; unsampled_ns includes the live threads' CPU since
 * their last sample. */
void cp_threads_stats(struct cp_engine_stats *s);
/* While on, the threads the program makes (through pthread_create) log
 * their CPU clock as they end; off empties the log. */
void cp_threads_exit_clocks(int on);
/* Hands the ends logged since the last call to fn, and forgets them. */
void cp_threads_take_exit_clocks(void (*fn)(pid_t tid, uint64_t cpu_ns));
/* In a child after fork(): forget every slot without touching the
 * parent's timers (a child has none), and take back the lock a thread
 * that is not in the child may have held.  Called after every fork, with
 * or without a profile; twice is harmless. */
void cp_threads_forget(void);
/* For pthread_create's interposer (src/process/interpose.c): if the new
 * thread must arm itself or keep the program's view of its mask before it
 * runs *fn(*arg), points *fn and *arg at cpuprof's start routine and its
 * argument and returns 1; the caller passes them to the real
 * pthread_create, and to cp_threads_unwrap(*arg) if that fails. */
int cp_threads_wrap(void *(**fn)(void *), void **arg);
void cp_threads_unwrap(void *arg);
/* Creates a thread of the profiler's own that is never sampled and has
 * every signal blocked. */
int cp_threads_spawn_internal(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
