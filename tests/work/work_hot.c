/*
 * work_hot.c -- a workload with known hot spots, run under `cpuprof record`
 * by the end-to-end tests.  Each of THREADS threads (the main thread
 * included when THREADS is 1) spends MS milliseconds of its own CPU time,
 * three quarters in hot_leaf() and one quarter in warm_leaf(), each called
 * through a chain of three functions (main or worker -> *_top -> *_mid ->
 * *_leaf).
 *
 * Usage: work_hot [THREADS [MS [EXIT_STATUS [how]]]]
 *   how: "return" (default), "exit-thread" (exit() from a worker thread),
 *        "scribble" (clobber the frame-pointer register while working),
 *        "fork" (a forked child works too, then exit()s),
 *        "sigkill" (SIGKILL itself once it has worked),
 *        "fork-exec" (a forked child runs `work_hot 1 MS` by exec),
 *        "phases" (each thread runs hot_top alone for the first MS/2
 *        milliseconds of wall time, then warm_top alone until MS: the
 *        profile's first half is hot_leaf's, its second warm_leaf's),
 *        "main-too" (main works as well, beside THREADS threads, so that
 *        main -> worker -> hot_top -> ... is one of the stacks)
 * With WORK_HOT_CPU=1 in its environment it also times every call of
 * hot_top and warm_top with the thread CPU clock, and prints, before
 * "work_hot done", "work_hot cpu PROCESS HOT WARM": its process CPU clock
 * at the end of main and the two functions' CPU, in ns (the ground truth
 * the profile is checked against); and, in every process (a forked child
 * too, which prints nothing else), "work_hot worked PID NS": its pid and
 * the CPU of its calls of hot_top and warm_top, in ns.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ms = 500, status, exit_from_thread, scribble, fork_child, exec_child, main_too, sigkill, phases;

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile uint64_t sink;

/* A macro, not an inline function: profiles carry inlined functions as
 * frames of their own (tests/work/work_inline.c is about those), and here the
 * leaf must be the function that burns the time. */
#define spin(n) __extension__({                                             \
	uint64_t n_ = (n), x_ = n_;                                         \
	for (uint64_t i_ = 0; i_ < n_; i_++)                                \
		x_ = x_ * 6364136223846793005ull + 1442695040888963407ull;  \
	x_;                                                                 \
})

/* Call lengths vary at random around 3:1, so that no rhythm of the work
 * can lock to the rhythm of a tick-driven timer: a strict 0.4 ms cycle
 * against a 4 ms tick would sample the same phase of it every time. */
static __thread uint64_t rng = 88172645463325252ull;
static uint64_t jitter(uint64_t mean)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return mean / 2 + rng % mean; /* uniform in [mean/2, 3*mean/2) */
}

__attribute__((noinline)) uint64_t hot_leaf(void) { return spin(jitter(300000)); }
__attribute__((noinline)) uint64_t warm_leaf(void) { return spin(jitter(100000)); }
__attribute__((noinline)) uint64_t hot_mid(void) { return hot_leaf() + 1; }
__attribute__((noinline)) uint64_t warm_mid(void) { return warm_leaf() + 1; }
__attribute__((noinline)) uint64_t hot_top(void) { return hot_mid() + 1; }
__attribute__((noinline)) uint64_t warm_top(void) { return warm_mid() + 1; }

/* Runs the hot and warm chains with rbp holding garbage: a profiler that
 * trusts frame pointers must not crash here. */
__attribute__((noinline)) static void scribbled_round(void)
{
#if defined(__x86_64__)
	/* Keep rbp/rbx, skip the red zone, align the stack for the calls. */
	__asm__ volatile("push %%rbp\n\t"
			 "push %%rbx\n\t"
			 "mov %%rsp, %%rbx\n\t"
			 "sub $128, %%rsp\n\t"
			 "and $-16, %%rsp\n\t"
			 "mov $0x10, %%rbp\n\t"
			 "call hot_top\n\t"
			 "mov $0xdeadbeef0, %%rbp\n\t"
			 "call warm_top\n\t"
			 "mov %%rbx, %%rsp\n\t"
			 "pop %%rbx\n\t"
			 "pop %%rbp\n\t"
			 :
			 :
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
#else
	sink += hot_top() + warm_top();
#endif
}

static int timed;
static _Atomic uint64_t hot_ns, warm_ns;

static uint64_t ns_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall time, ms. */
static double wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* "phases": hot_top for the first half of ms in wall time, warm_top for
 * the second. */
static void phased(void)
{
	double start = wall_ms();
	while (wall_ms() < start + ms / 2.0)
		sink += hot_top();
	while (wall_ms() < start + ms)
		sink += warm_top();
}

__attribute__((noinline)) static void *worker(void *arg)
{
	if (phases) {
		phased();
		return NULL;
	}
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end) {
		if (timed) {
			uint64_t t0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
			sink += hot_top();
			uint64_t t1 = ns_of(CLOCK_THREAD_CPUTIME_ID);
			sink += warm_top();
			uint64_t t2 = ns_of(CLOCK_THREAD_CPUTIME_ID);
			hot_ns += t1 - t0;
			warm_ns += t2 - t1;
		} else if (scribble)
			scribbled_round();
		else
			sink += hot_top() + warm_top();
	}
	if (exit_from_thread && arg == (void *)1)
		exit(status);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	if (argc > 2)
		ms = atoi(argv[2]);
	if (argc > 3)
		status = atoi(argv[3]);
	if (argc > 4) {
		exit_from_thread = !strcmp(argv[4], "exit-thread");
		scribble = !strcmp(argv[4], "scribble");
		main_too = !strcmp(argv[4], "main-too");
		fork_child = !strcmp(argv[4], "fork");
		exec_child = !strcmp(argv[4], "fork-exec");
		sigkill = !strcmp(argv[4], "sigkill");
		phases = !strcmp(argv[4], "phases");
	}
	timed = getenv("WORK_HOT_CPU") != NULL;
	pid_t child = -1;
	if (fork_child || exec_child) {
		fflush(stdout);
		child = fork();
		if (child == 0 && exec_child) {
			execl("/proc/self/exe", argv[0], "1", argv[2], (char *)NULL);
			_exit(127);
		}
		if (child == 0) {
			worker(NULL);
			if (timed)
				printf("work_hot worked %d %llu\n", (int)getpid(),
				       (unsigned long long)(hot_ns + warm_ns));
			exit(0);
		}
	}
	if (threads <= 1 && !exit_from_thread) {
		worker(NULL);
	} else {
		pthread_t th[256];
		if (threads > 256)
			threads = 256;
		for (int i = 0; i < threads; i++)
			pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 1));
		if (main_too)
			worker(NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	}
	if (child > 0) {
		int st;
		waitpid(child, &st, 0);
	}
	if (sigkill)
		kill(getpid(), SIGKILL);
	if (timed)
		printf("work_hot worked %d %llu\n", (int)getpid(), (unsigned long long)(hot_ns + warm_ns));
	if (timed)
		printf("work_hot cpu %llu %llu %llu\n", (unsigned long long)ns_of(CLOCK_PROCESS_CPUTIME_ID),
		       (unsigned long long)hot_ns, (unsigned long long)warm_ns);
	printf("work_hot done\n");
	return status;
}
