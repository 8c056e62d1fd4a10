/*
 * work_grow.c -- the workload of `cpuprof diff`'s end-to-end test: a loop
 * that calls steady() and grow_me() in turn, steady with a fixed amount
 * of work and grow_me with FACTOR times as much, until the process has
 * used MS milliseconds of CPU.  With FACTOR 1 each has half the CPU; with
 * FACTOR 1.5 grow_me does 1.5 times the work and has 60% of it.
 *
 * Usage: work_grow [MS [FACTOR]]   (defaults: 1000, 1)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* A macro, not an inline function: the function that calls it must be
 * the leaf that burns the time. */
#define spin(n) __extension__({                                             \
	uint64_t n_ = (n), x_ = n_;                                         \
	for (uint64_t i_ = 0; i_ < n_; i_++)                                \
		x_ = x_ * 6364136223846793005ull + 1442695040888963407ull;  \
	x_;                                                                 \
})

__attribute__((noinline)) uint64_t steady(uint64_t n) { return spin(n); }
__attribute__((noinline)) uint64_t grow_me(uint64_t n) { return spin(n); }

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 1000, factor = argc > 2 ? atof(argv[2]) : 1;
	const uint64_t unit = 200000;
	double end = cpu_ms() + ms;
	while (cpu_ms() < end) {
		sink += steady(unit);
		sink += grow_me((uint64_t)(unit * factor));
	}
	printf("work_grow done\n");
	return 0;
}
