/*
 * work_kernel.c -- programs whose CPU is partly in the kernel, each
 * function timing its own CPU with the thread's CPU clock around its
 * calls: the truth tests/e2e/t_kernel_time.sh holds a profile's shares
 * to.  The clock is read once between calls, a system call of a
 * microsecond or two on a virtual machine against calls of tens to
 * hundreds: each call's time holds one read's worth of them, which a
 * profile puts in the caller, so what a read costs (read_cost(), measured
 * at the start) is taken off each call's time.
 *
 * Usage: work_kernel MODE [ARGS...]
 *   syscalls MS        one thread, for MS ms of its CPU: sys_pipe writes
 *                      32 KiB into a pipe and reads it back, twice (almost
 *                      all of it in the kernel), then user_spin works
 *                      about 50 us in user mode.
 *   bursty THREADS MS  THREADS threads, each for MS ms of its CPU: 100,
 *                      200 or 300 us of work in burst_a, burst_b or burst_c
 *                      (picked at random), then a 100 us sleep: a thread
 *                      that wakes some 3,000 times a second.
 *   outlive MS         a tree whose CPU is partly out of the command's
 *                      rusage: the process forks a keeper, which forks a
 *                      worker that burns MS ms in outlive_work and ends,
 *                      reaped by the keeper; the keeper then lives on 3 s
 *                      more, past the command, which burns MS/4 ms in
 *                      outlive_main and exits without waiting for it.
 *                      Prints only process_cpu_ns, the command's own.
 * Prints "truth FUNCTION NS" per function, then "process_cpu_ns NS", the
 * process's CPU at the end of the work.  With READY set in the environment, for
 * `cpuprof record -p`: writes the process's ID to the file it names
 * (whole, by a rename), works only once it gets SIGUSR1, and when the work
 * is done and reported keeps every thread until a second SIGUSR1 (the
 * kernel's count of a thread that has ended is gone).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int64_t clock_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t thread_ns(void)
{
	return clock_of(CLOCK_THREAD_CPUTIME_ID);
}

static volatile uint64_t sink;

/* What one read of the thread's CPU clock costs, by that clock: the
 * least over a few rounds of many reads. */
static int64_t read_cost(void)
{
	int64_t best = INT64_MAX;
	for (int round = 0; round < 5; round++) {
		int64_t t0 = thread_ns(), t = t0;
		for (int i = 0; i < 200; i++)
			t = thread_ns();
		if ((t - t0) / 200 < best)
			best = (t - t0) / 200;
	}
	return best;
}

static uint64_t spin(uint64_t x, unsigned steps)
{
	for (unsigned i = 0; i < steps; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* ---- syscalls ---- */

static int pipefd[2];
static char buf[32768];

__attribute__((noinline)) void sys_pipe(void)
{
	for (int round = 0; round < 2; round++) {
		if (write(pipefd[1], buf, sizeof buf) != (ssize_t)sizeof buf)
			exit(3);
		size_t got = 0;
		while (got < sizeof buf) {
			ssize_t n = read(pipefd[0], buf + got, sizeof buf - got);
			if (n <= 0)
				exit(3);
			got += (size_t)n;
		}
	}
}

__attribute__((noinline)) void user_spin(void)
{
	sink = spin(sink, 40000);
}

static void syscalls(long ms)
{
	if (pipe(pipefd) != 0)
		exit(3);
	int64_t cost = read_cost();
	int64_t in_sys = 0, in_user = 0, start = thread_ns(), t0 = start;
	while (t0 - start < ms * 1000000) {
		sys_pipe();
		int64_t t1 = thread_ns();
		user_spin();
		int64_t t2 = thread_ns();
		in_sys += t1 - t0 - cost;
		in_user += t2 - t1 - cost;
		t0 = t2;
	}
	printf("truth sys_pipe %lld\ntruth user_spin %lld\n", (long long)in_sys, (long long)in_user);
}

/* ---- bursty ---- */

#define BURST_NS 100000
#define SLEEP_NS 100000

__attribute__((noinline)) uint64_t burst_a(uint64_t x, int64_t until)
{
	while (thread_ns() < until)
		x = spin(x, 2000);
	return x;
}

__attribute__((noinline)) uint64_t burst_b(uint64_t x, int64_t until)
{
	while (thread_ns() < until)
		x = spin(x, 2000);
	return x;
}

__attribute__((noinline)) uint64_t burst_c(uint64_t x, int64_t until)
{
	while (thread_ns() < until)
		x = spin(x, 2000);
	return x;
}

static uint64_t (*const bursts[3])(uint64_t, int64_t) = { burst_a, burst_b, burst_c };
static const char *const burst_names[3] = { "burst_a", "burst_b", "burst_c" };
static _Atomic int64_t burst_truth[3];
static long burst_ms;
/* READY: the threads done, and whether they may end. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int done_threads, may_end = 1;

static void *burster(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	int64_t cost = read_cost();
	int64_t mine[3] = { 0 }, done = 0, t0 = thread_ns();
	uint64_t x = seed;
	while (done < burst_ms * 1000000) {
		int f = (int)(rand_r(&seed) % 3);
		x = bursts[f](x, t0 + (int64_t)BURST_NS * (f + 1));
		int64_t t1 = thread_ns();
		mine[f] += t1 - t0 - cost;
		done += t1 - t0;
		nanosleep(&(struct timespec){ 0, SLEEP_NS }, NULL);
		t0 = thread_ns();
	}
	sink = x;
	for (int f = 0; f < 3; f++)
		burst_truth[f] += mine[f];
	pthread_mutex_lock(&gate);
	done_threads++;
	pthread_cond_broadcast(&gate_cv);
	while (!may_end)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
	return NULL;
}

static void report_cpu(void)
{
	printf("process_cpu_ns %lld\n", (long long)clock_of(CLOCK_PROCESS_CPUTIME_ID));
	fflush(stdout);
}

static void wait_for_signal(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	int sig;
	sigwait(&set, &sig);
}

static void bursty(int threads, long ms)
{
	pthread_t t[64];
	burst_ms = ms;
	may_end = getenv("READY") == NULL;
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, burster, (void *)(uintptr_t)(i + 1)) != 0)
			exit(3);
	pthread_mutex_lock(&gate);
	while (done_threads < threads)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
	for (int f = 0; f < 3; f++)
		printf("truth %s %lld\n", burst_names[f], (long long)burst_truth[f]);
	report_cpu();
	if (!may_end) {
		wait_for_signal();
		pthread_mutex_lock(&gate);
		may_end = 1;
		pthread_cond_broadcast(&gate_cv);
		pthread_mutex_unlock(&gate);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
}

/* ---- outlive ---- */

static inline __attribute__((always_inline)) void burn_ms(long ms)
{
	int64_t until = thread_ns() + ms * 1000000;
	while (thread_ns() < until)
		sink = spin(sink, 2000);
}

__attribute__((noinline)) void outlive_work(long ms)
{
	burn_ms(ms);
}

__attribute__((noinline)) void outlive_main(long ms)
{
	burn_ms(ms);
}

static void outlive(long ms)
{
	int go[2];
	if (pipe(go) != 0)
		exit(3);
	pid_t keeper = fork();
	if (keeper < 0)
		exit(3);
	if (keeper == 0) {
		close(go[0]);
		pid_t worker = fork();
		if (worker == 0) {
			outlive_work(ms);
			_exit(0);
		}
		waitpid(worker, NULL, 0);
		close(go[1]); /* the command may end now */
		sleep(3);
		_exit(0);
	}
	close(go[1]);
	char c;
	while (read(go[0], &c, 1) > 0)
		;
	outlive_main(ms / 4);
}

/* READY: says where the process is, and waits to be told to go (SIGUSR1
 * stays blocked, for wait_for_signal). */
static void wait_for_go(void)
{
	const char *ready = getenv("READY");
	if (!ready)
		return;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", ready);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, ready) != 0)
		exit(3);
	wait_for_signal();
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "syscalls") == 0) {
		wait_for_go();
		syscalls(atol(argv[2]));
		report_cpu();
		if (getenv("READY"))
			wait_for_signal();
	} else if (argc == 3 && strcmp(argv[1], "outlive") == 0) {
		outlive(atol(argv[2]));
		report_cpu();
	} else if (argc == 4 && strcmp(argv[1], "bursty") == 0 && atoi(argv[2]) >= 1 && atoi(argv[2]) <= 64) {
		wait_for_go();
		bursty(atoi(argv[2]), atol(argv[3]));
	} else {
		fprintf(stderr, "usage: work_kernel syscalls MS | bursty THREADS MS | outlive MS\n");
		return 2;
	}
	return 0;
}
