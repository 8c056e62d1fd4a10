/*
 * work_robust.c -- programs that profilers break, run under `cpuprof
 * record` by tests/e2e/t_robust.sh and tests/t_exec.sh.  Each mode checks its
 * own behaviour and exits 0 only if it saw what it would see without a
 * profiler; each burns its CPU in functions named for the mode, so that
 * the profile can be checked too.
 *
 * Usage: work_robust MODE [ARGS...]
 *   exec-self N         burn 150 ms, then exec itself with N-1 (0: stop)
 *   closefrom           close every descriptor above 2, then use files
 *                       opened on those numbers while threads come and go
 *   signal SIG HOW      burn 200 ms, then get SIG (TERM, INT, HUP, PIPE,
 *                       ALRM, PROF) the usual way; HOW is "default" (the
 *                       process must die of it: exit 3 if it survives) or
 *                       "handler" (its handler must run once)
 *   sigprof-main        its own SIGPROF handler and ITIMER_PROF at 100 Hz,
 *                       installed in main: prints its handler's rate
 *   spin THREADS MS     THREADS threads burn MS ms of CPU each
 *   longjmp MS          a SIGALRM handler (ITIMER_REAL at 2 kHz) that
 *                       siglongjmps out, for MS ms of CPU
 *   sleeps THREADS N [churn]
 *                       THREADS threads each do N rounds of work and a
 *                       short sleep, poll, epoll_wait, futex wait or
 *                       select: none may end early with EINTR (exit
 *                       status 3 if any did, 1 for any other failure); with
 *                       "churn", the THREADS only wait while short-lived
 *                       threads, born and ending, do the work
 *   end HOW             burn 500 ms, then end: exit, thread-exit (exit()
 *                       from a thread), _exit, INT, TERM, SEGV, ABRT, KILL
 *                       (die of that signal), exec (exec `end exit`)
 *   tree DEPTH HOW      burn 100 ms and fork a child that does the same
 *                       one level down, DEPTH levels; HOW: fork (the child
 *                       goes on without exec) or exec (it execs itself)
 *   server [ignore]     burn until a signal ends it (with "ignore",
 *                       SIGTERM, SIGINT and SIGHUP are ignored)
 *   spawn N             fork N children at once, each burns 50 ms
 *   orphan MS           fork a child that burns MS ms and prints "orphan
 *                       done"; burn 300 ms and exit without waiting for it
 *   dlchurn LIB N       N rounds of dlopen LIB, its dl_entry, dlclose
 *   fork-code LIB       fork a child that maps code of its own (LIB with
 *                       dlopen, and anonymous memory executable) and burns
 *                       200 ms; wait for it
 *   clearenv            exec itself (`end exit`) with an empty environment
 *   sigwait             block SIGPROF in main, start a thread that takes it
 *                       with sigwait and one that burns, kill(getpid(),
 *                       SIGPROF): the waiter must get it, nobody die of it
 *   scribble            under `cpuprof record`: burn 100 ms, write
 *                       nonsense over the layout in the header of
 *                       record's shared memory, burn 100 ms more
 *   api                 under `cpuprof record`: the library's own
 *                       cpuprof_flush() and cpuprof_stop() leave record's
 *                       profile alone (-EBUSY), then burn 300 ms
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm.h"

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double process_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile uint64_t sink;

/* Each burner's code differs (its line), so that no two are folded into
 * one function. */
#define BURNER(name)                                                           \
	__attribute__((noinline, noclone)) static void name(double ms)         \
	{                                                                      \
		double end = thread_cpu_ms() + ms;                             \
		uint64_t x = 1;                                                \
		while (thread_cpu_ms() < end)                                  \
			for (int i = 0; i < 20000; i++)                        \
				x = x * 6364136223846793005ull + __LINE__;     \
		sink += x;                                                     \
	}

BURNER(exec_work)
BURNER(scribble_work)
BURNER(closefrom_work)
BURNER(signal_work)
BURNER(sigprof_work)
BURNER(spin_work)
BURNER(longjmp_work)
BURNER(sleeps_work)
BURNER(end_work)
BURNER(tree_work)
BURNER(server_work)
BURNER(spawn_work)
BURNER(orphan_work)
BURNER(orphan_parent_work)
BURNER(sigwait_work)
BURNER(api_work)
BURNER(fork_code_work)

static void fail(const char *what)
{
	fprintf(stderr, "work_robust: %s\n", what);
	exit(1);
}

/* ---- exec-self ---- */

static int exec_self(int n, char **argv)
{
	exec_work(150);
	if (n <= 0) {
		printf("exec-self done\n");
		return 0;
	}
	char next[16];
	snprintf(next, sizeof next, "%d", n - 1);
	char *args[] = { argv[0], "exec-self", next, NULL };
	execv("/proc/self/exe", args);
	fail("execv failed");
	return 1;
}

/* ---- closefrom ---- */

static pthread_barrier_t go;

static void *short_thread(void *arg)
{
	closefrom_work(2);
	return NULL;
}

/* A thread that exists before the descriptors are closed, and ends after
 * the program has opened its own files on the numbers. */
static void *early_thread(void *arg)
{
	closefrom_work(2);
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&go);
	closefrom_work(20);
	return NULL;
}

static int closefrom_mode(void)
{
	pthread_t early[4];
	pthread_barrier_init(&go, NULL, 5);
	for (int i = 0; i < 4; i++)
		if (pthread_create(&early[i], NULL, early_thread, NULL) != 0)
			fail("pthread_create");
	pthread_barrier_wait(&go);
	/* A daemon or a spawner: nothing of anyone else's stays open. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	char in[] = "/tmp/work_robust.in.XXXXXX", out[] = "/tmp/work_robust.out.XXXXXX";
	int fi = mkstemp(in), fo = mkstemp(out), spare[8];
	if (fi < 0 || fo < 0)
		fail("mkstemp");
	unlink(in);
	unlink(out);
	/* Every low number is the program's now. */
	for (int i = 0; i < 8; i++)
		spare[i] = dup(fo);
	static const char data[] = "the program's own data, byte for byte";
	for (int i = 0; i < 41; i++)
		if (write(fi, data, sizeof data) != (ssize_t)sizeof data)
			fail("write input");
	if (lseek(fi, 0, SEEK_SET) != 0)
		fail("lseek");
	pthread_barrier_wait(&go);
	for (int round = 0; round < 40; round++) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, short_thread, NULL) != 0)
				fail("pthread_create");
		/* Read in sequence: a byte taken by anyone else shifts the rest. */
		char buf[sizeof data];
		if (read(fi, buf, sizeof buf) != (ssize_t)sizeof buf || memcmp(buf, data, sizeof data) != 0)
			fail("the input file read back wrong");
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		if (write(fo, data, sizeof data) != (ssize_t)sizeof data)
			fail("write to the output file failed");
		for (int i = 0; i < 8; i++)
			if (write(spare[i], "", 0) != 0)
				fail("a descriptor of the program's was closed under it");
	}
	for (int i = 0; i < 4; i++)
		pthread_join(early[i], NULL);
	char buf[sizeof data];
	if (pread(fo, buf, sizeof buf, 39 * sizeof data) != (ssize_t)sizeof buf || memcmp(buf, data, sizeof data))
		fail("the output file reads back wrong");
	for (int i = 0; i < 8; i++)
		if (close(spare[i]) != 0)
			fail("close failed: a descriptor was not the program's any more");
	if (close(fi) != 0 || close(fo) != 0)
		fail("close failed: a descriptor was not the program's any more");
	printf("closefrom done\n");
	return 0;
}

/* ---- signal ---- */

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	handled++;
}

static int signal_mode(const char *name, const char *how)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP },
		     { "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "PROF", SIGPROF } };
	int sig = 0;
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (!strcmp(name, sigs[i].name))
			sig = sigs[i].sig;
	if (!sig)
		fail("unknown signal");
	int own = !strcmp(how, "handler");
	if (own) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		if (sigaction(sig, &sa, NULL) != 0)
			fail("sigaction");
	}
	signal_work(200);
	if (sig == SIGPIPE) {
		int p[2];
		if (pipe(p) != 0)
			fail("pipe");
		close(p[0]);
		if (write(p[1], "x", 1) >= 0 || errno != EPIPE)
			fail("write to a closed pipe did not fail with EPIPE");
	} else if (sig == SIGALRM) {
		alarm(1);
		double end = process_cpu_ms() + 5000;
		while (!handled && process_cpu_ms() < end)
			signal_work(5);
	} else {
		kill(getpid(), sig);
	}
	if (!own) {
		fprintf(stderr, "work_robust: survived signal %s\n", name);
		return 3;
	}
	if (handled != 1) {
		fprintf(stderr, "work_robust: the handler of %s ran %d times\n", name, (int)handled);
		return 1;
	}
	printf("signal %s handled\n", name);
	return 0;
}

/* ---- sigprof-main ---- */

static volatile sig_atomic_t prof_ticks;

static void on_prof(int sig)
{
	prof_ticks++;
}

static int sigprof_main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		fail("sigaction");
	struct itimerval v = { { 0, 10000 }, { 0, 10000 } };
	if (setitimer(ITIMER_PROF, &v, NULL) != 0)
		fail("setitimer");
	double t0 = process_cpu_ms();
	sigprof_work(1000);
	double cpu = process_cpu_ms() - t0;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	printf("sigprof-main: %.0f ticks per CPU second\n", prof_ticks * 1000.0 / cpu);
	return 0;
}

/* ---- spin ---- */

static double spin_ms;

static void *spin_thread(void *arg)
{
	spin_work(spin_ms);
	return NULL;
}

static int spin_mode(int threads, double ms)
{
	spin_ms = ms;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		fail("1 to 64 threads");
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, spin_thread, NULL) != 0)
			fail("pthread_create");
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("spin done\n");
	return 0;
}

/* ---- longjmp ---- */

static sigjmp_buf jump;
static volatile sig_atomic_t jumps;

static void on_alarm(int sig)
{
	jumps++;
	siglongjmp(jump, 1);
}

static int longjmp_mode(double ms)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		fail("sigaction");
	double end = thread_cpu_ms() + ms;
	/* The jump target before the timer: its first signal, 500 us after
	 * setitimer, may come before any later line (under qemu-user, which
	 * translates that code first, on a busy machine it often did, and
	 * the handler jumped through an empty jump buffer: SIGSEGV). */
	if (sigsetjmp(jump, 1) == 0) {
		struct itimerval v = { { 0, 500 }, { 0, 500 } };
		if (setitimer(ITIMER_REAL, &v, NULL) != 0)
			fail("setitimer");
	}
	while (thread_cpu_ms() < end)
		longjmp_work(1);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("longjmp: %d jumps\n", (int)jumps);
	return 0;
}

/* ---- sleeps ---- */

static int sleep_rounds, sleeps_churn;
/* The exit status of a run in which some waits ended early. */
#define SLEEPS_CUT 3
static _Atomic int interrupted, waits;

static void count(int rc)
{
	waits++;
	if (rc < 0 && errno == EINTR)
		interrupted++;
}

static void *sleeper(void *arg)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		fail("epoll_create1");
	uint32_t word = 0;
	for (int i = 0; i < sleep_rounds; i++) {
		if (!sleeps_churn)
			sleeps_work(0.2); /* else the threads that churn burn */
		struct timespec ts = { 0, 100000 };
		struct epoll_event ev;
		struct timeval tv = { 0, 100 };
		switch (i % 5) {
		case 0: count(nanosleep(&ts, NULL)); break;
		case 1: count(poll(NULL, 0, 1)); break;
		case 2: count(epoll_wait(ep, &ev, 1, 1)); break;
		case 3: {
			long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
			count(r < 0 && errno == ETIMEDOUT ? 0 : (int)r);
			break;
		}
		case 4: count(select(0, NULL, NULL, NULL, &tv)); break;
		}
	}
	close(ep);
	return NULL;
}

static _Atomic int sleeps_over;

static void *short_lived(void *arg)
{
	sleeps_work(0.05);
	return NULL;
}

/* A thread being born or ending blocks every signal for a moment. */
static void *churner(void *arg)
{
	while (!atomic_load(&sleeps_over)) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_lived, NULL) != 0)
			fail("pthread_create");
		pthread_join(t, NULL);
	}
	return NULL;
}

static int sleeps_mode(int threads, int rounds, int churn)
{
	sleep_rounds = rounds;
	sleeps_churn = churn;
	pthread_t t[16], c;
	if (threads < 1 || threads > 16)
		fail("1 to 16 threads");
	if (churn && pthread_create(&c, NULL, churner, NULL) != 0)
		fail("pthread_create");
	/* With churn the main thread is one of the sleepers: a signal the
	 * kernel redirects away from a thread that blocks it often lands
	 * there. */
	int made = threads - churn;
	for (int i = 0; i < made; i++)
		if (pthread_create(&t[i], NULL, sleeper, NULL) != 0)
			fail("pthread_create");
	if (churn)
		sleeper(NULL);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	atomic_store(&sleeps_over, 1);
	if (churn)
		pthread_join(c, NULL);
	printf("sleeps: %d of %d waits ended early (EINTR)\n", (int)interrupted, (int)waits);
	return interrupted ? SLEEPS_CUT : 0;
}

/* ---- endings ---- */

static void *exiting_thread(void *arg)
{
	exit(0);
	return NULL;
}

static int end_mode(const char *how, char **argv)
{
	end_work(500);
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "INT", SIGINT }, { "TERM", SIGTERM }, { "SEGV", SIGSEGV }, { "ABRT", SIGABRT }, { "KILL", SIGKILL } };
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (!strcmp(how, sigs[i].name)) {
			if (sigs[i].sig == SIGSEGV)
				*(volatile int *)sink = 1; /* a real fault, not a raise */
			if (sigs[i].sig == SIGABRT)
				abort();
			kill(getpid(), sigs[i].sig);
			for (;;)
				pause();
		}
	if (!strcmp(how, "exit"))
		exit(0);
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "thread-exit")) {
		pthread_t t;
		pthread_create(&t, NULL, exiting_thread, NULL);
		for (;;)
			pause();
	}
	if (!strcmp(how, "exec")) {
		char *args[] = { argv[0], "end", "exit", NULL };
		execv("/proc/self/exe", args);
	}
	fail("unknown ending");
	return 1;
}

static int tree_mode(int depth, const char *how, char **argv)
{
	tree_work(100);
	if (depth <= 1)
		return 0;
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		char next[16];
		snprintf(next, sizeof next, "%d", depth - 1);
		if (!strcmp(how, "exec")) {
			char *args[] = { argv[0], "tree", next, (char *)how, NULL };
			execv("/proc/self/exe", args);
			_exit(127);
		}
		exit(tree_mode(depth - 1, how, argv));
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("a child of the tree failed");
	return 0;
}

static int server_mode(int ignore)
{
	if (ignore) {
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
	}
	printf("server ready\n");
	for (;;)
		server_work(10);
	return 0;
}

static int spawn_mode(int n)
{
	pid_t pids[256];
	if (n < 1 || n > 256)
		fail("1 to 256 children");
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			fail("fork");
		if (pids[i] == 0) {
			spawn_work(50);
			exit(0);
		}
	}
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail("a child failed");
	}
	printf("spawn done\n");
	return 0;
}

static int orphan_mode(int ms)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		orphan_work(ms);
		printf("orphan done\n");
		return 0;
	}
	orphan_parent_work(300);
	return 0;
}

static int dlchurn_mode(const char *lib, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		void *h = dlopen(lib, RTLD_NOW);
		if (!h)
			fail(dlerror());
		uint64_t (*entry)(uint64_t) = (uint64_t(*)(uint64_t))dlsym(h, "dl_entry");
		if (!entry)
			fail("no dl_entry");
		sink += entry(2000000);
		dlclose(h);
	}
	printf("dlchurn done\n");
	return 0;
}

/* A fork's objects are its parent's until it maps more: record's copy of
 * them must take the new ones as they come. */
static int fork_code_mode(const char *lib)
{
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		if (!dlopen(lib, RTLD_NOW))
			fail(dlerror());
		if (mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			fail("mmap");
		fork_code_work(200);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("fork-code: the child failed");
	printf("fork-code done\n");
	return 0;
}

/* ---- scribble ---- */

/* A program that writes over memory it should not: record reads the
 * shared memory's layout from its own copy, never from here. */
static int scribble_mode(void)
{
	scribble_work(100);
	FILE *f = fopen("/proc/self/maps", "r");
	char line[600];
	unsigned long lo = 0, off = 1;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "cpuprof-record") && sscanf(line, "%lx-%*x %*s %lx", &lo, &off) == 2 && off == 0)
			break;
	if (f)
		fclose(f);
	if (!lo || off != 0)
		fail("record's shared memory is not mapped here");
	struct cp_shm_header *h = (struct cp_shm_header *)lo;
	h->nslots = 1u << 30;
	h->slot_size = h->ring_offset = 1ull << 40;
	h->ring_cells = 7;
	h->depth = 1u << 30;
	h->slots_offset = 1ull << 44;
	scribble_work(100);
	printf("scribble: done\n");
	return 0;
}

static int clearenv_mode(char **argv)
{
	char *args[] = { argv[0], "end", "exit", NULL };
	char *env[] = { NULL };
	execve("/proc/self/exe", args, env);
	fail("execve");
	return 1;
}

/* ---- sigwait ---- */

static volatile int waiter_got;

static void *prof_waiter(void *arg)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	int sig = 0;
	if (sigwait(&s, &sig) == 0)
		waiter_got = sig;
	return NULL;
}

static void *prof_bystander(void *arg)
{
	sigwait_work(300);
	return NULL;
}

static int sigwait_mode(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	if (pthread_sigmask(SIG_BLOCK, &s, NULL) != 0)
		fail("pthread_sigmask");
	pthread_t w, b;
	if (pthread_create(&w, NULL, prof_waiter, NULL) || pthread_create(&b, NULL, prof_bystander, NULL))
		fail("pthread_create");
	sigwait_work(100);
	kill(getpid(), SIGPROF);
	pthread_join(w, NULL);
	pthread_join(b, NULL);
	if (waiter_got != SIGPROF)
		fail("the sigwait thread did not get SIGPROF");
	printf("sigwait: got %d\n", waiter_got);
	return 0;
}

/* ---- api ---- */

static int api_mode(void)
{
	int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cpuprof_flush");
	int (*stop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cpuprof_stop");
	if (!flush || !stop)
		fail("the library is not loaded");
	api_work(100);
	int f = flush(), st = stop();
	api_work(200);
	printf("api: flush %d stop %d\n", f, st);
	return f == -EBUSY && st == -EBUSY ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		fail("usage: work_robust MODE [ARGS...]");
	const char *m = argv[1];
	if (!strcmp(m, "exec-self") && argc == 3)
		return exec_self(atoi(argv[2]), argv);
	if (!strcmp(m, "closefrom"))
		return closefrom_mode();
	if (!strcmp(m, "signal") && argc == 4)
		return signal_mode(argv[2], argv[3]);
	if (!strcmp(m, "sigprof-main"))
		return sigprof_main();
	if (!strcmp(m, "spin") && argc == 4)
		return spin_mode(atoi(argv[2]), atof(argv[3]));
	if (!strcmp(m, "longjmp") && argc == 3)
		return longjmp_mode(atof(argv[2]));
	if (!strcmp(m, "sleeps") && (argc == 4 || (argc == 5 && !strcmp(argv[4], "churn"))))
		return sleeps_mode(atoi(argv[2]), atoi(argv[3]), argc == 5);
	if (!strcmp(m, "end") && argc == 3)
		return end_mode(argv[2], argv);
	if (!strcmp(m, "tree") && argc == 4)
		return tree_mode(atoi(argv[2]), argv[3], argv);
	if (!strcmp(m, "server"))
		return server_mode(argc > 2 && !strcmp(argv[2], "ignore"));
	if (!strcmp(m, "spawn") && argc == 3)
		return spawn_mode(atoi(argv[2]));
	if (!strcmp(m, "orphan") && argc == 3)
		return orphan_mode(atoi(argv[2]));
	if (!strcmp(m, "dlchurn") && argc == 4)
		return dlchurn_mode(argv[2], atoi(argv[3]));
	if (!strcmp(m, "fork-code") && argc == 3)
		return fork_code_mode(argv[2]);
	if (!strcmp(m, "scribble"))
		return scribble_mode();
	if (!strcmp(m, "clearenv"))
		return clearenv_mode(argv);
	if (!strcmp(m, "sigwait"))
		return sigwait_mode();
	if (!strcmp(m, "api"))
		return api_mode();
	fail("unknown mode or arguments");
	return 1;
}
