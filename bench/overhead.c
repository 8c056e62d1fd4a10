/*
 * overhead.c -- the fixed-work workload for measuring what a profiler
 * costs.  The work (STEPS million LCG steps in all, split evenly among
 * THREADS threads) is done by hot() at the bottom of a chain of 48 calls
 * (descend() calling itself), so every sample has a 48-frame stack to
 * walk.  Each thread goes down once per chunk of 4 million steps (a few
 * ms) and comes back up, so the stack is 48 deep nearly all the time.
 *
 * Usage: overhead THREADS MSTEPS
 * Prints the lines of report_run().
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "clocks.h"

#define DEPTH 48
#define CHUNK 4000000ull

static volatile uint64_t sink;
static uint64_t per_thread;

__attribute__((noinline)) uint64_t hot(uint64_t x, uint64_t n) { return spin(x, n); }

/* Calls itself until `depth` frames are on the stack, then runs hot().
 * The empty asm after the call keeps gcc from turning the recursion into
 * a loop. */
__attribute__((noinline)) uint64_t descend(int depth, uint64_t x, uint64_t n)
{
	uint64_t r = depth <= 1 ? hot(x, n) : descend(depth - 1, x, n);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static void *worker(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	for (uint64_t done = 0; done < per_thread; done += CHUNK)
		x = descend(DEPTH - 1, x, per_thread - done < CHUNK ? per_thread - done : CHUNK);
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	long msteps = argc > 2 ? atol(argv[2]) : 1000;
	if (argc != 3 || threads < 1 || threads > 256 || msteps < 1) {
		fprintf(stderr, "usage: overhead THREADS MSTEPS\n");
		return 2;
	}
	per_thread = (uint64_t)msteps * 1000000 / (uint64_t)threads;

	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	pthread_t th[256];
	if (threads == 1) {
		worker((void *)1);
	} else {
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1))) {
				perror("pthread_create");
				return 1;
			}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	}
	report_run(cpu0, mono0);
	return 0;
}
