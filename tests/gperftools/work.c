/*
 * work.c -- a program written against gperftools/profiler.h, for the
 * drop-in's end-to-end tests (tests/t_gperftools_*.sh), which build it
 * themselves in each way a program meets libprofiler: against gperftools'
 * own library (then run on ours), against our install, statically.  It
 * links nothing of cpuprof's directly and knows nothing of it: whatever
 * it shows, gperftools' library would be asked the same.
 *
 * Usage: work MODE ARGS..., MS a CPU time in milliseconds:
 *   env THREADS MS [STATUS]  main runs hot_main 2*MS and warm_main MS/2,
 *                            THREADS threads run worker_a, worker_b, ...
 *                            MS each, none calls ProfilerRegisterThread();
 *                            prints "cpu_ms N" (the process's CPU time),
 *                            exits with STATUS
 *   api FILE MS              ProfilerStart twice, Stop twice, Flush, the
 *                            state between, one line each (no counts:
 *                            the same text under any library)
 *   fork MS                  parent_work, a child runs child_work and
 *                            exits, parent_work again
 *   forkexec MS              a child execs this program: `child MS`
 *   child MS                 exec_child_work
 *   switch SIG MS            raises SIG four times, each time waiting
 *                            until profiling is on (off): switch_first,
 *                            (gap), switch_second, (tail) between
 *   flushrace FILE ROUNDS    starts and stops ROUNDS profiles while a
 *                            thread signals itself and the main thread
 *                            as fast as it can, and the handler calls
 *                            ProfilerFlush(): in the thread that stops,
 *                            in the middle of its stop, too
 *   state FILE MS            prints samples_gathered after MS of work at
 *                            the rate asked for, and cpu_ms
 *   ownsigprof FILE MS       with a SIGPROF handler of its own, profiles
 *                            hot_main; prints how often its handler ran
 */
#define _GNU_SOURCE
#include <gperftools/profiler.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Burns `ms` of the calling thread's CPU time in the function named fn. */
#define BURNER(fn)                                                             \
	__attribute__((noinline)) void fn(double ms)                           \
	{                                                                      \
		static volatile unsigned long long sink;                       \
		double end = cpu_ms(CLOCK_THREAD_CPUTIME_ID) + ms;             \
		unsigned long long x = 1;                                      \
		while (cpu_ms(CLOCK_THREAD_CPUTIME_ID) < end)                  \
			for (int i = 0; i < 100000; i++)                        \
				x = x * 6364136223846793005ull + 1;            \
		sink += x;                                                     \
	}

BURNER(hot_main)
BURNER(warm_main)
BURNER(worker_a)
BURNER(worker_b)
BURNER(worker_c)
BURNER(worker_d)
BURNER(parent_work)
BURNER(child_work)
BURNER(exec_child_work)
BURNER(switch_first)
BURNER(switch_second)
BURNER(unprofiled_work)
BURNER(race_work)

static double work_ms;
static void (*const workers[])(double) = { worker_a, worker_b, worker_c, worker_d };

static void *worker(void *arg)
{
	workers[(size_t)arg % 4](work_ms);
	return NULL;
}

static int env_mode(int threads, double ms, int status)
{
	pthread_t th[64];
	work_ms = ms;
	for (int i = 0; i < threads && i < 64; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(size_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	hot_main(2 * ms);
	warm_main(ms / 2);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(th[i], NULL);
	printf("cpu_ms %.0f\n", cpu_ms(CLOCK_PROCESS_CPUTIME_ID));
	printf("work done\n");
	return status;
}

static void print_state(const char *when)
{
	struct ProfilerState st;
	memset(&st, 0x55, sizeof st);
	ProfilerGetCurrentState(&st);
	printf("%s: enabled=%d all_threads=%d name=%s started=%s\n", when, st.enabled,
	       ProfilingIsEnabledForAllThreads(), st.profile_name,
	       st.start_time == 0 ? "0" : st.start_time > time(NULL) - 60 ? "now" : "wrong");
}

static int api_mode(const char *file, double ms)
{
	print_state("before");
	ProfilerStop(); /* without a start */
	ProfilerFlush();
	printf("start: %d\n", ProfilerStart(file) != 0);
	printf("start again: %d\n", ProfilerStart(file) != 0);
	ProfilerRegisterThread();
	ProfilerEnable();
	ProfilerDisable();
	hot_main(ms);
	ProfilerFlush();
	print_state("running");
	ProfilerStop();
	ProfilerStop();
	ProfilerFlush();
	print_state("stopped");
	printf("start into no directory: %d\n", ProfilerStart("/nonexistent-dir/x.prof") != 0);
	print_state("after");
	return 0;
}

static int fork_mode(double ms, int exec_it, const char *self)
{
	parent_work(ms);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		if (exec_it) {
			char arg[32];
			snprintf(arg, sizeof arg, "%.0f", ms);
			execl(self, self, "child", arg, (char *)NULL);
			perror("execl");
			_exit(127);
		}
		child_work(ms);
		printf("child %d done\n", (int)getpid());
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	parent_work(ms);
	printf("child %d exited %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	printf("work done\n");
	return 0;
}

/* Waits (up to 30 s) until profiling is on or off. */
static int wait_enabled(int on)
{
	for (int i = 0; i < 30000; i++) {
		if (!!ProfilingIsEnabledForAllThreads() == on)
			return 0;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	fprintf(stderr, "profiling did not turn %s\n", on ? "on" : "off");
	return -1;
}

static int switch_mode(int sig, double ms)
{
	void (*const phase[])(double) = { switch_first, unprofiled_work, switch_second, unprofiled_work };
	for (int i = 0; i < 4; i++) {
		raise(sig);
		if (wait_enabled(i % 2 == 0) < 0)
			return 1;
		phase[i](ms);
	}
	printf("work done\n");
	return 0;
}

static volatile sig_atomic_t flushes;

static void flush_on_signal(int sig)
{
	ProfilerFlush();
	flushes++;
}

static volatile int race_over;
static pthread_t main_thread;

static void *flusher(void *unused)
{
	while (!race_over) {
		pthread_kill(main_thread, SIGUSR1);
		raise(SIGUSR1);
		race_work(0.05);
	}
	return NULL;
}

static int flushrace_mode(const char *file, int rounds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = flush_on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	pthread_t th;
	if (pthread_create(&th, NULL, flusher, NULL) != 0)
		return 1;
	for (int r = 0; r < rounds; r++) {
		if (!ProfilerStart(file)) {
			fprintf(stderr, "round %d: ProfilerStart failed\n", r);
			return 1;
		}
		race_work(20);
		ProfilerStop();
	}
	race_over = 1;
	pthread_join(th, NULL);
	printf("flushrace done: %d rounds, %s\n", rounds, flushes > 100 ? "many flushes" : "few flushes");
	return 0;
}

static int state_mode(const char *file, double ms)
{
	if (!ProfilerStart(file))
		return 1;
	double c0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
	hot_main(ms);
	double c1 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
	/* The samples may wait in a buffer for a moment (cpuprof reads
	 * them in batches): what the state says once it stops changing
	 * (for 0.2 s; 10 s at most). */
	struct ProfilerState st;
	int last = -1;
	for (int i = 0; i < 50; i++) {
		nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
		ProfilerGetCurrentState(&st);
		if (st.samples_gathered == last)
			break;
		last = st.samples_gathered;
	}
	printf("samples %d\n", st.samples_gathered);
	printf("profiled_cpu_ms %.0f\n", c1 - c0);
	ProfilerStop();
	return 0;
}

static volatile sig_atomic_t own_sigprofs;

static void own_sigprof(int sig)
{
	own_sigprofs++;
}

static int ownsigprof_mode(const char *file, double ms)
{
	signal(SIGPROF, own_sigprof);
	printf("start: %d\n", ProfilerStart(file) != 0);
	hot_main(ms);
	ProfilerStop();
	printf("own SIGPROF handler ran %d times\n", (int)own_sigprofs);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "env") && argc >= 4)
		return env_mode(atoi(argv[2]), atof(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
	if (!strcmp(m, "api") && argc == 4)
		return api_mode(argv[2], atof(argv[3]));
	if (!strcmp(m, "fork") && argc == 3)
		return fork_mode(atof(argv[2]), 0, argv[0]);
	if (!strcmp(m, "forkexec") && argc == 3)
		return fork_mode(atof(argv[2]), 1, "/proc/self/exe");
	if (!strcmp(m, "child") && argc == 3) {
		exec_child_work(atof(argv[2]));
		printf("exec child %d done\n", (int)getpid());
		return 0;
	}
	if (!strcmp(m, "switch") && argc == 4)
		return switch_mode(atoi(argv[2]), atof(argv[3]));
	if (!strcmp(m, "flushrace") && argc == 4)
		return flushrace_mode(argv[2], atoi(argv[3]));
	if (!strcmp(m, "state") && argc == 4)
		return state_mode(argv[2], atof(argv[3]));
	if (!strcmp(m, "ownsigprof") && argc == 4)
		return ownsigprof_mode(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: work env|api|fork|forkexec|child|switch|flushrace|state|ownsigprof ARGS...\n");
	return 2;
}
