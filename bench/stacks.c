/*
 * stacks.c -- a workload whose stacks keep changing, for the benchmark of
 * `cpuprof record --every` over a long run (bench/run.py's part `every`):
 * THREADS threads, each for SECONDS of wall time, walk down a chain of
 * calls through 64 distinct functions, each step's function and the
 * chain's depth (1 to 48) drawn at random, and spin a few microseconds at
 * the bottom; a walk's way down is its stack, and with 64 choices a step
 * nearly every sample's stack is one no window has had yet, so the tables
 * a profiler keeps per distinct stack grow with its samples unless it
 * empties them.
 *
 * Usage: stacks [THREADS [SECONDS]]  (4, 10)
 * Prints clocks.h's closing report and "walks N".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "clocks.h"

#define NFUNCS 64
#define MAX_DEPTH 48

struct walk {
	uint64_t rng;
	uint64_t sink;
};

static uint64_t next(struct walk *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

typedef uint64_t step_fn(struct walk *, int);
static step_fn *const funcs[NFUNCS];

/* The bottom of a walk: 2 to 34 us of arithmetic. */
static __attribute__((noinline)) uint64_t bottom(struct walk *w)
{
	uint64_t n = 2000 + next(w) % 32000, x = w->rng;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* One step down: the next function at random, or the bottom; its result
 * used after the call, so that no call is a tail call. */
static inline uint64_t down(struct walk *w, int depth)
{
	uint64_t r = depth <= 0 ? bottom(w) : funcs[next(w) % NFUNCS](w, depth - 1);
	w->sink += r;
	return r ^ (uint64_t)depth;
}

#define F(i) \
	static __attribute__((noinline)) uint64_t f##i(struct walk *w, int depth) { return down(w, depth) + i; }
#define F8(a) F(a##0) F(a##1) F(a##2) F(a##3) F(a##4) F(a##5) F(a##6) F(a##7)
F8(1) F8(2) F8(3) F8(4) F8(5) F8(6) F8(7) F8(8)
#define R8(a) f##a##0, f##a##1, f##a##2, f##a##3, f##a##4, f##a##5, f##a##6, f##a##7
static step_fn *const funcs[NFUNCS] = { R8(1), R8(2), R8(3), R8(4), R8(5), R8(6), R8(7), R8(8) };

static double seconds = 10;

static void *worker(void *arg)
{
	struct walk w = { .rng = 0x9e3779b97f4a7c15ull * (uintptr_t)arg + 1 };
	int64_t end = mono_ns() + (int64_t)(seconds * 1e9);
	uint64_t walks = 0;
	while (mono_ns() < end)
		for (int i = 0; i < 64; i++, walks++)
			down(&w, 1 + (int)(next(&w) % MAX_DEPTH));
	return (void *)(uintptr_t)walks;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		seconds = atof(argv[2]);
	if (threads < 1 || threads > 256 || !(seconds > 0)) {
		fprintf(stderr, "usage: stacks [THREADS [SECONDS]]\n");
		return 2;
	}
	pthread_t t[256];
	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) {
			perror("pthread_create");
			return 1;
		}
	uint64_t walks = 0;
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		walks += (uintptr_t)r;
	}
	printf("walks %llu\n", (unsigned long long)walks);
	report_run(cpu0, mono0);
	return 0;
}
