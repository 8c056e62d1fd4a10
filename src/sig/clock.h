/*
 * clock.h -- a clock's reading in nanoseconds: the one helper for every
 * clock the profiler reads.  It lives with the signal-context code, which
 * uses it too: clock_gettime is async-signal-safe (a vDSO call for the
 * monotonic and thread clocks).
 */
#ifndef CPUPROF_CLOCK_H
#define CPUPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t cp_clock_ns(clockid_t c)
{
	struct timespec ts = { 0, 0 };
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_MONOTONIC, the clock perf's records carry (use_clockid). */
static inline uint64_t cp_mono_ns(void)
{
	return (uint64_t)cp_clock_ns(CLOCK_MONOTONIC);
}

#endif
