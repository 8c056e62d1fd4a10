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
 * With READY (for `cpuprof record -p`, which attaches to a process that
 * already runs), the threads are made first and wait: the program writes
 * its PID to the file READY (whole, by a rename) and works only when it
 * gets SIGUSR1, so that a profiler attached before the signal sees all of
 * the work (report_run()'s work phase starts at the signal); when the work
 * is done and reported, every thread stays, idle, until a second SIGUSR1,
 * so that the profiler can detach from threads that still exist (the
 * kernel's counts of a thread that has ended are gone).
 *
 * Usage: accuracy busy|bursty THREADS CPU_MS [READY]
 * Prints "leaf NAME NS" per leaf, then the lines of report_run().
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* READY mode: the stage the process is in, which main moves on at each
 * SIGUSR1: 0 waiting to work, 1 working, 2 free to end (without READY, 2
 * from the start); and the threads whose work is done. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int stage = 2, finished;

static void set_stage(int s)
{
	pthread_mutex_lock(&gate_mu);
	stage = s;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

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

/* A thread of its own: it works from stage 1 on, then waits, alive, for
 * stage 2. */
static void *thread_main(void *p)
{
	pthread_mutex_lock(&gate_mu);
	while (stage < 1)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	worker(p);
	pthread_mutex_lock(&gate_mu);
	finished++;
	pthread_cond_broadcast(&gate_cv);
	while (stage < 2)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	return NULL;
}

/* Writes this process's PID to the file `ready`: a temporary file renamed
 * into place, so that a reader never sees it half written. */
static int say_ready(const char *ready)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", ready);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, ready) != 0) {
		perror(ready);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc != 4 && argc != 5) || (strcmp(argv[1], "busy") && strcmp(argv[1], "bursty"))) {
		fprintf(stderr, "usage: accuracy busy|bursty THREADS CPU_MS [READY]\n");
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
	const char *ready = argc == 5 ? argv[4] : NULL;
	/* SIGUSR1, blocked in every thread, is taken with sigwait. */
	sigset_t go;
	int sig;
	sigemptyset(&go);
	sigaddset(&go, SIGUSR1);
	if (ready) {
		pthread_sigmask(SIG_BLOCK, &go, NULL);
		stage = 0;
	}

	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	struct worker_arg args[256];
	pthread_t th[256];
	for (int i = 0; i < threads; i++)
		args[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
	if (threads > 1)
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, thread_main, &args[i])) {
				perror("pthread_create");
				return 1;
			}
	if (ready) {
		if (say_ready(ready) < 0 || sigwait(&go, &sig) != 0)
			return 1;
		cpu0 = process_cpu_ns();
		mono0 = mono_ns();
		set_stage(1);
	}
	if (threads == 1) {
		worker(&args[0]);
	} else if (!ready) {
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	} else {
		pthread_mutex_lock(&gate_mu);
		while (finished < threads)
			pthread_cond_wait(&gate_cv, &gate_mu);
		pthread_mutex_unlock(&gate_mu);
	}
	for (int i = 0; i < NLEAF; i++)
		printf("leaf %s %lld\n", names[i], (long long)atomic_load(&truth[i]));
	report_run(cpu0, mono0);
	if (ready) {
		if (sigwait(&go, &sig) != 0)
			return 1;
		set_stage(2);
		for (int i = 0; threads > 1 && i < threads; i++)
			pthread_join(th[i], NULL);
	}
	return 0;
}
