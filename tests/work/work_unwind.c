/*
 * work_unwind.c -- workloads with known call chains for the unwinding
 * tests, built twice (build/tests/work_unwind with frame pointers,
 * build/tests/work_unwind_nofp with -fomit-frame-pointer) and run under
 * `cpuprof record`.  Each spends MS milliseconds of CPU time in one hot
 * function whose callers are fixed:
 *
 *   leaf            main -> chain_a -> chain_b -> chain_c (a frameless leaf)
 *   deep N          main -> recurse x N -> deep_leaf
 *   qsort           main -> sort_driver -> qsort (libc) -> ... -> cmp_hot
 *   dlopen LIB      main -> dl_driver -> dl_entry -> dl_mid -> dl_hot, the
 *                   last three in LIB, loaded once profiling runs
 *   signal          main -> sig_outer -> interrupted_leaf, interrupted by
 *                   SIGUSR1 from a helper thread every 2 ms of wall time
 *                   once the previous one is handled (no timer the
 *                   profiler's could alias with, no pile-up under load):
 *                   on_signal -> sig_hot, on the same stack
 *
 * Usage: work_unwind SCENARIO [ARG] [MS]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noipa))

static volatile uint64_t sink;
static int ms = 600;

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A frameless leaf: no calls, a tight loop. */
NOINLINE uint64_t chain_c(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

NOINLINE uint64_t chain_b(uint64_t n)
{
	uint64_t r = chain_c(n);
	sink = r; /* no tail call */
	return r + 1;
}

NOINLINE uint64_t chain_a(uint64_t n)
{
	uint64_t r = chain_b(n);
	sink = r;
	return r + 1;
}

NOINLINE uint64_t deep_leaf(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	return x;
}

NOINLINE uint64_t recurse(int depth, uint64_t n)
{
	uint64_t r = depth <= 1 ? deep_leaf(n) : recurse(depth - 1, n);
	sink = r; /* no tail call, no accumulator loop */
	return r ^ (uint64_t)depth;
}

/* The comparator qsort calls: made expensive so that it is hot. */
NOINLINE int cmp_hot(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b, h = x ^ y;
	for (int i = 0; i < 200; i++)
		h = h * 6364136223846793005ull + 1;
	sink = h;
	return x < y ? -1 : x > y;
}

NOINLINE void sort_driver(uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (i * 2654435761u) % 1000003;
	qsort(v, n, sizeof *v, cmp_hot);
	sink = v[0];
}

NOINLINE uint64_t dl_driver(uint64_t (*entry)(uint64_t), uint64_t n)
{
	uint64_t r = entry(n);
	sink = r;
	return r + 1;
}

/* The signal scenario: the handler's work is the hot function. */
NOINLINE uint64_t sig_hot(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 3202034522624059733ull + 1;
	return x;
}

static _Atomic unsigned handled;
static _Atomic int signal_stop;

static void on_signal(int sig)
{
	(void)sig;
	sink = sig_hot(1000000);
	atomic_fetch_add(&handled, 1);
}

/* Signals the main thread every 2 ms, once it has handled the last one. */
static void *signaller(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;
	unsigned sent = 0;
	while (!atomic_load(&signal_stop)) {
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
		if (atomic_load(&handled) == sent) {
			sent++;
			pthread_kill(main_thread, SIGUSR1);
		}
	}
	return NULL;
}

NOINLINE uint64_t interrupted_leaf(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 3;
	return x;
}

NOINLINE void sig_outer(double end)
{
	while (cpu_ms() < end)
		sink = interrupted_leaf(1000000);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "leaf";
	const char *arg = argc > 2 ? argv[2] : NULL;
	if (argc > 3)
		ms = atoi(argv[3]);
	double end = cpu_ms() + ms;

	if (!strcmp(what, "leaf")) {
		while (cpu_ms() < end)
			sink = chain_a(2000000);
	} else if (!strcmp(what, "deep")) {
		int depth = arg ? atoi(arg) : 200;
		while (cpu_ms() < end)
			sink = recurse(depth, 2000000);
	} else if (!strcmp(what, "qsort")) {
		static uint64_t v[20000];
		while (cpu_ms() < end)
			sort_driver(v, sizeof v / sizeof v[0]);
	} else if (!strcmp(what, "dlopen")) {
		void *h = dlopen(arg, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "work_unwind: %s\n", dlerror());
			return 2;
		}
		uint64_t (*entry)(uint64_t) = (uint64_t(*)(uint64_t))dlsym(h, "dl_entry");
		if (!entry) {
			fprintf(stderr, "work_unwind: no dl_entry in %s\n", arg);
			return 2;
		}
		while (cpu_ms() < end)
			sink = dl_driver(entry, 2000000);
	} else if (!strcmp(what, "signal")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGUSR1, &sa, NULL);
		pthread_t self = pthread_self(), th;
		pthread_create(&th, NULL, signaller, &self);
		sig_outer(end);
		atomic_store(&signal_stop, 1);
		pthread_join(th, NULL);
	} else {
		fprintf(stderr, "usage: work_unwind leaf|deep [N]|qsort|dlopen LIB|signal [ARG] [MS]\n");
		return 2;
	}
	printf("work_unwind %s done\n", what);
	return 0;
}
