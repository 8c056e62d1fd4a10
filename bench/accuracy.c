/*
 * accuracy.c -- the accuracy workload: the ground truth a profile is judged
 * against.  THREADS threads each call four leaf functions whose costs are
 * 1, 2, 3 and 4 units (so about 10/20/30/40% of the time), picked at random
 * so that no sampling period can alias with the pattern, and measure every
 * call's own CPU time with the thread CPU clock.  "busy" calls back to
 * back; "bursty" works about 200 us of CPU, then sleeps 100 us (the seed's
 * sleep-heavy pattern, where tick-driven timers miss threads that sleep
 * before each tick).  Every thread works CPU_MS/THREADS milliseconds of
 * leaf CPU time.
 *
 * The thread CPU clock is read once between calls, so each measured call
 * also holds one clock_gettime (about 0.5 us against calls of 80-320 us).
 *
 * Usage: accuracy busy|bursty THREADS CPU_MS
 * Prints "leaf NAME NS" per leaf, then the lines of report_run().
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"

/* LCG steps in one unit of leaf work: about 80 us on a 2-3 GHz x86_64. */
#define UNIT 60000ull
#define NLEAF 4
#define BURST_NS 200000
#define SLEEP_NS 100000

static volatile uint64_t sink;

__attribute__((noinline)) uint64_t leaf_a(uint64_t x) { return spin(x, 1 * UNIT); }
__attribute__((noinline)) uint64_t leaf_b(uint64_t x) { return spin(x, 2 * UNIT); }
__attribute__((noinline)) uint64_t leaf_c(uint64_t x) { return spin(x, 3 * UNIT); }
__attribute__((noinline)) uint64_t leaf_d(uint64_t x) { return spin(x, 4 * UNIT); }

static uint64_t (*const leaves[NLEAF])(uint64_t) = { leaf_a, leaf_b, leaf_c, leaf_d };
static const char *const names[NLEAF] = { "leaf_a", "leaf_b", "leaf_c", "leaf_d" };

static int bursty;
static int64_t per_thread_ns;
static _Atomic int64_t truth[NLEAF];

struct worker_arg {
	uint64_t seed;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	uint64_t rng = a->seed | 1, x = a->seed;
	int64_t mine[NLEAF] = { 0 }, done = 0, burst = 0;
	int64_t t0 = thread_cpu_ns();
	while (done < per_thread_ns) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		int i = (int)(rng % NLEAF);
		x = leaves[i](x);
		int64_t t1 = thread_cpu_ns();
		mine[i] += t1 - t0;
		done += t1 - t0;
		burst += t1 - t0;
		if (bursty && burst >= BURST_NS) {
			burst = 0;
			nanosleep(&(struct timespec){ 0, SLEEP_NS }, NULL);
			t1 = thread_cpu_ns();
		}
		t0 = t1;
	}
	sink += x;
	for (int i = 0; i < NLEAF; i++)
		atomic_fetch_add(&truth[i], mine[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "busy") && strcmp(argv[1], "bursty"))) {
		fprintf(stderr, "usage: accuracy busy|bursty THREADS CPU_MS\n");
		return 2;
	}
	bursty = !strcmp(argv[1], "bursty");
	int threads = atoi(argv[2]);
	long cpu_ms = atol(argv[3]);
	if (threads < 1 || threads > 256 || cpu_ms < 1) {
		fprintf(stderr, "accuracy: THREADS must be 1..256 and CPU_MS >= 1\n");
		return 2;
	}
	per_thread_ns = cpu_ms * 1000000 / threads;

	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	struct worker_arg args[256];
	pthread_t th[256];
	for (int i = 0; i < threads; i++)
		args[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
	if (threads == 1) {
		worker(&args[0]);
	} else {
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, worker, &args[i])) {
				perror("pthread_create");
				return 1;
			}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	}
	for (int i = 0; i < NLEAF; i++)
		printf("leaf %s %lld\n", names[i], (long long)atomic_load(&truth[i]));
	report_run(cpu0, mono0);
	return 0;
}
