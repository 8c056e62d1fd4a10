/*
 * workload.c -- the tick-bound VM's accuracy workload (see workload.h).
 * Each leaf is a multiply-xorshift loop in a section of its own, so its
 * code range is known at run time (__start_/__stop_ symbols) and a handler
 * or a profile reader can tell the leaves apart by address alone.  Each
 * leaf call is timed with the thread CPU clock; the cost of the clock
 * reads themselves (a system call) is measured once and subtracted, so the
 * truth holds the leaves' own CPU.
 */
#include "workload.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEAF_SECTION(s) __attribute__((noinline, noclone, used, section(s)))

/* The three leaves: same loop, different constants (so no compiler folds
 * them into one), n iterations each. */
LEAF_SECTION("wl_leaf_a") uint64_t leaf_a(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

LEAF_SECTION("wl_leaf_b") uint64_t leaf_b(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 2862933555777941757ull + 3037000493ull;
		x ^= x >> 31;
	}
	return x;
}

LEAF_SECTION("wl_leaf_c") uint64_t leaf_c(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 3935559000370003845ull + 2691343689449507681ull;
		x ^= x >> 27;
	}
	return x;
}

extern const char __start_wl_leaf_a[], __stop_wl_leaf_a[];
extern const char __start_wl_leaf_b[], __stop_wl_leaf_b[];
extern const char __start_wl_leaf_c[], __stop_wl_leaf_c[];

const char *const wl_leaf_name[WL_LEAVES] = { "leaf_a", "leaf_b", "leaf_c" };
__thread volatile sig_atomic_t wl_in_sleep;
void (*wl_thread_start)(int index);
void (*wl_thread_end)(int index);

static uint64_t (*const leaf_fn[WL_LEAVES])(uint64_t, uint64_t) = { leaf_a, leaf_b, leaf_c };

void wl_leaf_range(int leaf, uintptr_t *lo, uintptr_t *hi)
{
	static const char *const b[WL_LEAVES][2] = {
		{ __start_wl_leaf_a, __stop_wl_leaf_a },
		{ __start_wl_leaf_b, __stop_wl_leaf_b },
		{ __start_wl_leaf_c, __stop_wl_leaf_c },
	};
	*lo = (uintptr_t)b[leaf][0];
	*hi = (uintptr_t)b[leaf][1];
}

int wl_leaf_of(uintptr_t pc)
{
	for (int i = 0; i < WL_LEAVES; i++) {
		uintptr_t lo, hi;
		wl_leaf_range(i, &lo, &hi);
		if (pc >= lo && pc < hi)
			return i;
	}
	return -1;
}

/* The clock c, in nanoseconds. */
static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Shared by the workers: the configuration, iterations per leaf unit, the
 * clock-read cost to subtract, the start barrier and the totals. */
static struct {
	const struct wl_config *c;
	uint64_t unit_iters, read_ns;
	pthread_barrier_t go;
	pthread_mutex_t lock;
	struct wl_result *r;
} W;

static volatile uint64_t sink;

struct worker {
	pthread_t th;
	int index;
};

/* One worker: waits for the others, then rounds of leaf_a, leaf_b, leaf_c
 * (each timed with the thread CPU clock), with a sleep after each round
 * in the sleepy pattern, until it has used cpu_s of CPU; adds its totals
 * to the result under the lock. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct wl_config *c = W.c;
	uint64_t leaf[WL_LEAVES] = { 0 }, bursts = 0, sleeps = 0, eintr = 0, slept = 0, x = (uint64_t)w->index + 1;
	const uint64_t target = (uint64_t)(c->cpu_s * 1e9);
	const struct timespec nap = { (time_t)(c->sleep_us / 1000000), (long)(c->sleep_us % 1000000) * 1000 };

	pthread_barrier_wait(&W.go);
	if (wl_thread_start)
		wl_thread_start(w->index);
	uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID), t = start;
	while (t - start < target) {
		for (int i = 0; i < WL_LEAVES; i++) {
			x = leaf_fn[i](W.unit_iters * (uint64_t)(i + 1), x);
			uint64_t t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			leaf[i] += t1 - t > W.read_ns ? t1 - t - W.read_ns : 0;
			t = t1;
		}
		bursts++;
		if (c->sleepy) {
			uint64_t w0 = clock_ns(CLOCK_MONOTONIC);
			wl_in_sleep = 1;
			int e = clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
			wl_in_sleep = 0;
			slept += clock_ns(CLOCK_MONOTONIC) - w0;
			sleeps++;
			eintr += e == EINTR;
			t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		}
	}
	if (wl_thread_end)
		wl_thread_end(w->index);
	uint64_t used = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	sink = x;

	pthread_mutex_lock(&W.lock);
	for (int i = 0; i < WL_LEAVES; i++)
		W.r->leaf_ns[i] += leaf[i];
	W.r->threads_ns += used;
	W.r->bursts += bursts;
	W.r->sleeps += sleeps;
	W.r->eintr += eintr;
	W.r->sleep_wall_ns += slept;
	pthread_mutex_unlock(&W.lock);
	return NULL;
}

/* qsort() order for uint64_t. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Measures the leaves' speed and the cost of a clock read on the calling
 * thread.  The leaf_a CPU spent here is added to leaf_a's truth. */
static void calibrate(struct wl_result *r)
{
	uint64_t d[31];
	for (int i = 0; i < 31; i++) {
		uint64_t a = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		d[i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - a;
	}
	qsort(d, 31, sizeof *d, cmp_u64);
	W.read_ns = d[15];

	uint64_t n = 1000, x = 1;
	for (;;) {
		uint64_t a = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		x = leaf_a(n, x);
		uint64_t used = clock_ns(CLOCK_THREAD_CPUTIME_ID) - a;
		r->leaf_ns[0] += used > W.read_ns ? used - W.read_ns : 0;
		r->calib_ns += used > W.read_ns ? used - W.read_ns : 0;
		if (used >= 20000000 || n >= (1ull << 40)) {
			r->iters_per_us = (double)n * 1000.0 / (double)used;
			break;
		}
		n *= 4;
	}
	sink = x;
	W.unit_iters = (uint64_t)(r->iters_per_us * W.c->unit_us);
	if (W.unit_iters == 0)
		W.unit_iters = 1;
}

int wl_run(const struct wl_config *c, struct wl_result *r)
{
	struct worker w[WL_MAX_THREADS];
	memset(r, 0, sizeof *r);
	r->main_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t self0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	W.c = c;
	W.r = r;
	pthread_mutex_init(&W.lock, NULL);
	pthread_barrier_init(&W.go, NULL, (unsigned)c->threads + 1);
	calibrate(r);

	uint64_t wall0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < c->threads; i++) {
		w[i].index = i;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "workload: pthread_create failed\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&W.go);
	for (int i = 0; i < c->threads; i++)
		pthread_join(w[i].th, NULL);
	r->wall_ns = clock_ns(CLOCK_MONOTONIC) - wall0;
	r->process_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	r->own_ns = r->threads_ns + clock_ns(CLOCK_THREAD_CPUTIME_ID) - self0;
	return 0;
}

int wl_parse(int argc, char **argv, struct wl_config *c)
{
	*c = (struct wl_config){ .threads = 1, .sleepy = 0, .cpu_s = 1.0, .unit_us = 40, .sleep_us = 200 };
	int opt;
	while ((opt = getopt(argc, argv, "+t:p:s:u:z:")) != -1) {
		switch (opt) {
		case 't': c->threads = atoi(optarg); break;
		case 'p': c->sleepy = strcmp(optarg, "sleepy") == 0; break;
		case 's': c->cpu_s = atof(optarg); break;
		case 'u': c->unit_us = (unsigned)atoi(optarg); break;
		case 'z': c->sleep_us = (unsigned)atoi(optarg); break;
		default: goto usage;
		}
	}
	if (c->threads < 1 || c->threads > WL_MAX_THREADS || c->cpu_s <= 0 || c->unit_us < 1)
		goto usage;
	return optind;
usage:
	fprintf(stderr, "usage: %s [-t THREADS] [-p busy|sleepy] [-s CPU_S_PER_THREAD] [-u UNIT_US] [-z SLEEP_US]\n",
		argv[0]);
	return -1;
}

void wl_print(FILE *f, const struct wl_config *c, const struct wl_result *r)
{
	fprintf(f,
		"truth threads=%d pattern=%s cpu_s=%g unit_us=%u sleep_us=%u wall_ns=%llu process_ns=%llu main_ns=%llu "
		"threads_ns=%llu own_ns=%llu leaf_a_ns=%llu leaf_b_ns=%llu leaf_c_ns=%llu bursts=%llu sleeps=%llu eintr=%llu "
		"sleep_wall_ns=%llu read_ns=%llu calib_ns=%llu iters_per_us=%.1f\n",
		c->threads, c->sleepy ? "sleepy" : "busy", c->cpu_s, c->unit_us, c->sleep_us,
		(unsigned long long)r->wall_ns, (unsigned long long)r->process_ns, (unsigned long long)r->main_ns,
		(unsigned long long)r->threads_ns, (unsigned long long)r->own_ns, (unsigned long long)r->leaf_ns[0],
		(unsigned long long)r->leaf_ns[1], (unsigned long long)r->leaf_ns[2],
		(unsigned long long)r->bursts, (unsigned long long)r->sleeps, (unsigned long long)r->eintr,
		(unsigned long long)r->sleep_wall_ns, (unsigned long long)W.read_ns, (unsigned long long)r->calib_ns, r->iters_per_us);
	for (int i = 0; i < WL_LEAVES; i++) {
		uintptr_t lo, hi;
		wl_leaf_range(i, &lo, &hi);
		fprintf(f, "range %s %#llx %#llx\n", wl_leaf_name[i], (unsigned long long)lo,
			(unsigned long long)hi);
	}
}
