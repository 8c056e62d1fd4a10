/*
 * fixed.c -- the gperftools drop-in's benchmark workload (run.sh): fixed
 * work, MSTEPS million LCG steps split evenly among THREADS threads, run
 * between ProfilerStart(FILE) and ProfilerStop() of gperftools/profiler.h
 * (FILE "-": no profile, the baseline).  It is built against gperftools'
 * own library and run on either library unchanged.  The work is in
 * hot_leaf(), called from hot_mid() from hot_top() in chunks of a few ms.
 *
 * Prints the process's CPU time (CLOCK_PROCESS_CPUTIME_ID, every thread,
 * the profiler's own included) and wall time from just after the start
 * to just before the stop: "work_cpu_ns N" and "work_wall_ns N".
 */
#include <gperftools/profiler.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK 4000000ull

static int64_t ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t per_thread;
static volatile uint64_t sink;

__attribute__((noinline)) uint64_t hot_leaf(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) uint64_t hot_mid(uint64_t x, uint64_t n)
{
	uint64_t r = hot_leaf(x, n);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

__attribute__((noinline)) uint64_t hot_top(uint64_t x, uint64_t n)
{
	uint64_t r = hot_mid(x, n);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static void *worker(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	for (uint64_t done = 0; done < per_thread; done += CHUNK)
		x = hot_top(x, per_thread - done < CHUNK ? per_thread - done : CHUNK);
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4 || atoi(argv[1]) < 1 || atoi(argv[1]) > 64 || atol(argv[2]) < 1) {
		fprintf(stderr, "usage: fixed THREADS MSTEPS FILE|-\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	per_thread = (uint64_t)atol(argv[2]) * 1000000 / (uint64_t)threads;
	const char *file = strcmp(argv[3], "-") ? argv[3] : NULL;
	if (file && !ProfilerStart(file)) {
		fprintf(stderr, "fixed: ProfilerStart(%s) failed\n", file);
		return 1;
	}
	int64_t cpu0 = ns(CLOCK_PROCESS_CPUTIME_ID), wall0 = ns(CLOCK_MONOTONIC);
	pthread_t th[64];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	int64_t cpu1 = ns(CLOCK_PROCESS_CPUTIME_ID), wall1 = ns(CLOCK_MONOTONIC);
	if (file)
		ProfilerStop();
	printf("work_cpu_ns %lld\n", (long long)(cpu1 - cpu0));
	printf("work_wall_ns %lld\n", (long long)(wall1 - wall0));
	return 0;
}
