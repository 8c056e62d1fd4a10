/*
 * work_offcpu.c -- threads that wait where a profile of off-CPU time
 * must find them, each timing its own waits with CLOCK_MONOTONIC around
 * the call that blocks and printing the total: the truth that
 * tests/e2e/t_offcpu.sh holds `cpuprof record --off-cpu` and
 * CPUPROF_OFF_CPU=1 to.  Every wait is in a function of its own name,
 * which calls the C library (never inlined, never a tail call).
 *
 * Usage: work_offcpu MODE [ARGS...]
 *   kinds MS           four threads each blocked about MS ms in all, in
 *                      four rounds: block_sleep (nanosleep), block_read
 *                      (a read from a pipe another thread writes into
 *                      later), block_mutex (a pthread mutex another thread
 *                      holds), block_cond (a condition variable another
 *                      thread signals later); then burn 50 ms in burn_cpu.
 *                      Prints "KIND FUNCTION MS" per kind, MS as the
 *                      thread measured it.
 *   crowd THREADS MS   THREADS threads each burn MS ms of their own CPU
 *                      in crowd_burn, more threads than CPUs: each waits
 *                      for a CPU.  Prints "crowd crowd_burn waiting MS cpu
 *                      MS": their lifetimes less their CPU, summed.
 *   deep DEPTH MS      burn 100 ms in deep_burn, then sleep MS ms in
 *                      deep_sleep, at the end of DEPTH calls of
 *                      deep_frame, each with 256 bytes of its own: a stack
 *                      deeper than a sample copies.  Prints "deep
 *                      deep_sleep MS" as measured.
 *   hop MS             sleep 1 ms at a time in hop_sleep, MS ms in all,
 *                      moving to the next CPU before each sleep (its
 *                      affinity): every wait leaves one CPU and comes back
 *                      on another.  Prints "hop hop_sleep MS" as measured.
 *   pingpong ROUNDS US
 *                      two threads pass a byte back and forth over pipes
 *                      ROUNDS times, each doing US microseconds of work
 *                      (pong_work) before it answers: two switch-outs a
 *                      round.  Prints the rounds a second, the switches a
 *                      second (the process's, by getrusage), its CPU and
 *                      wall time, its user and system time and switches
 *                      (bench/offcpu/run.sh).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 4

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static volatile uint64_t sink;

/* Burns ns of the calling thread's CPU. */
__attribute__((noinline)) static void burn_cpu(int64_t ns)
{
	int64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	uint64_t x = sink;
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/* ---- kinds ---- */

static int64_t round_ns;
static pthread_barrier_t round_start;
static int pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go;
static int64_t blocked[4];

/* The barrier between rounds: its own waits are not the kinds'. */
__attribute__((noinline)) static void rendezvous(void)
{
	pthread_barrier_wait(&round_start);
}

__attribute__((noinline)) static int64_t block_sleep(void)
{
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	sleep_ns(round_ns);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

__attribute__((noinline)) static int64_t block_read(void)
{
	char c;
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
		;
	return now_ns(CLOCK_MONOTONIC) - t0;
}

__attribute__((noinline)) static int64_t block_mutex(void)
{
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	pthread_mutex_lock(&lock);
	int64_t t = now_ns(CLOCK_MONOTONIC) - t0;
	pthread_mutex_unlock(&lock);
	return t;
}

__attribute__((noinline)) static int64_t block_cond(void)
{
	pthread_mutex_lock(&cond_lock);
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	while (!go)
		pthread_cond_wait(&cond, &cond_lock);
	int64_t t = now_ns(CLOCK_MONOTONIC) - t0;
	go = 0;
	pthread_mutex_unlock(&cond_lock);
	return t;
}

static void *sleeper(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		blocked[0] += block_sleep();
	}
	return arg;
}

static void *reader(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		blocked[1] += block_read();
	}
	return arg;
}

/* The other side of each wait: a write, an unlock, a signal, each a
 * round's time after the round began. */
__attribute__((noinline)) static void feed_pipe(void)
{
	sleep_ns(round_ns);
	if (write(pipefd[1], "x", 1) != 1)
		abort();
}

static void *writer(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		feed_pipe();
	}
	return arg;
}

__attribute__((noinline)) static void hold_mutex(void)
{
	pthread_mutex_lock(&lock);
	atomic_store(&held, 1);
	sleep_ns(round_ns);
	atomic_store(&held, 0);
	pthread_mutex_unlock(&lock);
}

static void *holder(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		hold_mutex();
	}
	return arg;
}

/* Waits (sleeping, in a function of its own) until the holder has the
 * lock: then the wait in block_mutex is the holder's sleep. */
__attribute__((noinline)) static void until_held(void)
{
	while (!atomic_load(&held))
		sleep_ns(100000);
}

static void *waiter(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		until_held();
		blocked[2] += block_mutex();
	}
	return arg;
}

__attribute__((noinline)) static void signal_cond(void)
{
	sleep_ns(round_ns);
	pthread_mutex_lock(&cond_lock);
	go = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&cond_lock);
}

static void *signaller(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		signal_cond();
	}
	return arg;
}

static void *cond_waiter(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		rendezvous();
		blocked[3] += block_cond();
	}
	return arg;
}

static int kinds(int64_t ms)
{
	void *(*fn[])(void *) = { sleeper, reader, writer, holder, waiter, signaller, cond_waiter };
	enum { N = sizeof fn / sizeof fn[0] };
	pthread_t t[N];
	round_ns = ms * 1000000 / ROUNDS;
	if (pipe(pipefd) < 0 || pthread_barrier_init(&round_start, NULL, N) != 0)
		return 1;
	for (int i = 0; i < N; i++)
		if (pthread_create(&t[i], NULL, fn[i], NULL) != 0)
			return 1;
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	burn_cpu(50000000);
	static const char *const names[4][2] = { { "sleep", "block_sleep" }, { "pipe", "block_read" },
						 { "mutex", "block_mutex" }, { "cond", "block_cond" } };
	for (int i = 0; i < 4; i++)
		printf("%s %s %.3f\n", names[i][0], names[i][1], (double)blocked[i] / 1e6);
	return 0;
}

/* ---- crowd ---- */

static int64_t crowd_ns;
static int64_t crowd_wait, crowd_cpu;
static pthread_mutex_t crowd_lock = PTHREAD_MUTEX_INITIALIZER;

/* Burns crowd_ns of its thread's CPU among more threads than CPUs; adds
 * up how long it lived less that CPU: its waits for a CPU. */
__attribute__((noinline)) static void crowd_burn(void)
{
	int64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	burn_cpu(crowd_ns);
	int64_t life = now_ns(CLOCK_MONOTONIC) - t0, cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	pthread_mutex_lock(&crowd_lock);
	crowd_wait += life - cpu;
	crowd_cpu += cpu;
	pthread_mutex_unlock(&crowd_lock);
}

static void *crowd_thread(void *arg)
{
	crowd_burn();
	return arg;
}

static int crowd(int n, int64_t ms)
{
	pthread_t t[64];
	crowd_ns = ms * 1000000;
	if (n < 1 || n > 64)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, crowd_thread, NULL) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("crowd crowd_burn waiting %.3f cpu %.3f\n", (double)crowd_wait / 1e6, (double)crowd_cpu / 1e6);
	return 0;
}

/* ---- deep ---- */

__attribute__((noinline)) static void deep_burn(void)
{
	burn_cpu(100000000);
	sink++; /* not a tail call */
}

__attribute__((noinline)) static int64_t deep_sleep(int64_t ms)
{
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	sleep_ns(ms * 1000000);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

__attribute__((noinline)) static int64_t deep_frame(int depth, int64_t ms)
{
	volatile char pad[256];
	pad[0] = (char)depth;
	/* The burn beside the sleep, not under it: waits for a CPU while
	 * it burns are not the sleep's. */
	if (depth == 0)
		deep_burn();
	int64_t t = depth > 0 ? deep_frame(depth - 1, ms) : deep_sleep(ms);
	return t + pad[0] - (char)depth; /* not a tail call */
}

/* ---- hop ---- */

__attribute__((noinline)) static int64_t hop_sleep(void)
{
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	sleep_ns(1000000);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

static int hop(int64_t ms)
{
	cpu_set_t all, one;
	if (sched_getaffinity(0, sizeof all, &all) < 0)
		return 1;
	int64_t slept = 0;
	for (int i = 0; slept < ms * 1000000; i++) {
		/* The next CPU this thread may run on. */
		int n = CPU_COUNT(&all), k = i % n, c = -1;
		while (k >= 0)
			k -= CPU_ISSET(++c, &all) ? 1 : 0;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		sched_setaffinity(0, sizeof one, &one);
		slept += hop_sleep();
	}
	sched_setaffinity(0, sizeof all, &all);
	printf("hop hop_sleep %.3f\n", (double)slept / 1e6);
	return 0;
}

/* ---- pingpong ---- */

static int ping[2], pong[2];
static int64_t work_ns;

__attribute__((noinline)) static void pong_work(void)
{
	burn_cpu(work_ns);
}

static void *ponger(void *arg)
{
	char c;
	while (read(ping[0], &c, 1) == 1 && c) {
		pong_work();
		if (write(pong[1], &c, 1) != 1)
			break;
	}
	return arg;
}

static int pingpong(long rounds, int64_t us)
{
	pthread_t t;
	work_ns = us * 1000;
	if (pipe(ping) < 0 || pipe(pong) < 0 || pthread_create(&t, NULL, ponger, NULL) != 0)
		return 1;
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	int64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	char c = 'x';
	for (long i = 0; i < rounds; i++) {
		pong_work();
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	}
	c = 0;
	if (write(ping[1], &c, 1) != 1)
		return 1;
	pthread_join(t, NULL);
	int64_t wall = now_ns(CLOCK_MONOTONIC) - t0, cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	getrusage(RUSAGE_SELF, &r1);
	long sw = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
	double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6;
	double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	printf("pingpong rounds %ld rounds_per_s %.0f switches_per_s %.0f cpu_s %.3f wall_s %.3f user_s %.3f sys_s %.3f "
	       "switches %ld\n", rounds, (double)rounds / ((double)wall / 1e9), (double)sw / ((double)wall / 1e9),
	       (double)cpu / 1e9, (double)wall / 1e9, user, sys, sw);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "kinds"))
		return kinds(atol(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "crowd"))
		return crowd(atoi(argv[2]), atol(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "deep")) {
		printf("deep deep_sleep %.3f\n", (double)deep_frame(atoi(argv[2]), atol(argv[3])) / 1e6);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "hop"))
		return hop(atol(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "pingpong"))
		return pingpong(atol(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: work_offcpu kinds MS | crowd THREADS MS | deep DEPTH MS | hop MS | pingpong ROUNDS US\n");
	return 2;
}
