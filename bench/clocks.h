/*
 * clocks.h -- the clocks and the closing report shared by the benchmark
 * workloads: thread and process CPU time (the kernel's accounting),
 * CLOCK_MONOTONIC, and one "key value" line per measurement on stdout,
 * which bench/run.py reads.
 */
#ifndef BENCH_CLOCKS_H
#define BENCH_CLOCKS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

static inline int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
static inline int64_t process_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
static inline int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* Prints the lines every workload ends with: the process CPU and wall
 * time of its work phase, the process CPU so far, its peak RSS, and the
 * CLOCK_MONOTONIC instant the work ended (a profiler that writes at exit
 * takes its time after that). */
static inline void report_run(int64_t cpu0, int64_t mono0)
{
	int64_t cpu1 = process_cpu_ns(), mono1 = mono_ns();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("work_cpu_ns %lld\n", (long long)(cpu1 - cpu0));
	printf("work_wall_ns %lld\n", (long long)(mono1 - mono0));
	printf("process_cpu_ns %lld\n", (long long)cpu1);
	printf("maxrss_kb %ld\n", ru.ru_maxrss);
	printf("work_end_mono_ns %lld\n", (long long)mono1);
	fflush(stdout);
}

/* Spins n steps of a 64-bit LCG: pure register work, no memory. */
__attribute__((always_inline)) static inline uint64_t spin(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

#endif
