/*
 * scale.c -- the scale workload: PATHS distinct call stacks, so that the
 * profile a profiler writes at exit holds that many distinct stacks.  Ten
 * functions f0..f9 call one another through a table; path p runs the
 * chain of functions named by its decimal digits (5 digits for 100,000
 * paths), under 20 frames of padding so that stacks are about 30 deep as
 * in real programs, and spends US_PER_PATH microseconds of CPU at the
 * bottom.  THREADS threads share the paths (thread t takes p = t mod
 * THREADS).  With a sampling period a little shorter than US_PER_PATH
 * every path is sampled at least once.
 *
 * Usage: scale THREADS PATHS US_PER_PATH
 * Prints "paths N", then the lines of report_run().
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "clocks.h"

#define PAD 20
#define FANOUT 10

static volatile uint64_t sink;
static int levels, threads;
static long paths;
static uint64_t steps_per_path;

typedef uint64_t (*level_fn)(int level, long path, uint64_t x);
static const level_fn table[FANOUT];

/* The digit of `path` that picks the function at `level` (1 = first). */
static int digit(long path, int level)
{
	for (int i = level; i < levels; i++)
		path /= FANOUT;
	return (int)(path % FANOUT);
}

/* Each f<N> either works (at the last level) or calls the function the
 * path names for the next level; the empty asm keeps the call a call. */
#define LEVEL_FN(N)                                                                        \
	__attribute__((noinline)) uint64_t f##N(int level, long path, uint64_t x)          \
	{                                                                                  \
		uint64_t r = level == levels ? spin(x, steps_per_path)                     \
					     : table[digit(path, level + 1)](level + 1, path, x); \
		__asm__ volatile("" : "+r"(r));                                            \
		return r + N;                                                              \
	}
LEVEL_FN(0) LEVEL_FN(1) LEVEL_FN(2) LEVEL_FN(3) LEVEL_FN(4)
LEVEL_FN(5) LEVEL_FN(6) LEVEL_FN(7) LEVEL_FN(8) LEVEL_FN(9)
static const level_fn table[FANOUT] = { f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 };

/* PAD frames of padding above the path's own functions. */
__attribute__((noinline)) uint64_t pad(int n, long path, uint64_t x)
{
	uint64_t r = n <= 1 ? table[digit(path, 1)](1, path, x) : pad(n - 1, path, x);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static void *worker(void *arg)
{
	long t = (long)(intptr_t)arg;
	uint64_t x = (uint64_t)t + 1;
	for (long p = t; p < paths; p += threads)
		x = pad(PAD, p, x);
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: scale THREADS PATHS US_PER_PATH\n");
		return 2;
	}
	threads = atoi(argv[1]);
	paths = atol(argv[2]);
	long us = atol(argv[3]);
	if (threads < 1 || threads > 256 || paths < 1 || paths > 100000000 || us < 1) {
		fprintf(stderr, "scale: THREADS 1..256, PATHS 1..1e8, US_PER_PATH >= 1\n");
		return 2;
	}
	levels = 1;
	for (long n = FANOUT; n < paths; n *= FANOUT)
		levels++;

	/* Calibrate: LCG steps per microsecond of this thread's CPU. */
	int64_t c0 = thread_cpu_ns();
	sink += spin(1, 20000000);
	double per_us = 20000000.0 / ((double)(thread_cpu_ns() - c0) / 1000.0);
	steps_per_path = (uint64_t)(per_us * (double)us);

	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	pthread_t th[256];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("paths %ld\n", paths);
	report_run(cpu0, mono0);
	return 0;
}
