/*
 * test_gp_api.c -- the gperftools drop-in's interface, linked against
 * build/libprofiler.so: the binary profile word by word (header, records,
 * trailer, the memory map after it) and its counts against the CPU burned
 * (also with the tick-bound timer engine, whose samples each stand for
 * several periods), ProfilerFlush() leaving a whole profile mid-run, a
 * restart that forgets the last profile, a relative name surviving
 * chdir(), threads that never register, filter_in_thread's one warning,
 * ProfilerGetCurrentState(), a pprof file by its name, and
 * ProfilerGetStackTrace() from a caller and from a signal handler.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <gperftools/profiler.h>

#include "../check.h"

DEFINE_BURNER(gp_hot)
DEFINE_BURNER(gp_other)
DEFINE_BURNER(gp_thread_work)
DEFINE_BURNER(gp_early_thread_work)
DEFINE_BURNER(gp_filtered)
DEFINE_BURNER(gp_ticked)

static char dir[] = "/tmp/cpuprof-gp-XXXXXX";

/* The least share of a thread's CPU time its counts may show.  Where
 * cpuprof's auto engine samples on time (perf's task clock, a kernel with
 * high-resolution timers), what each thread used after its last sample is
 * under a period.  With a tick-driven engine (qemu-user, perf refused, a
 * tick-bound kernel) samples come at ticks, and on a busy machine far
 * fewer: that remainder, which the record stream does not carry, can then
 * be a good part of a short run's CPU. */
static double least = 0.85;

static int samples_on_time(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof a;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0)
		close(fd);
	struct timespec r;
	return fd >= 0 && clock_getres(CLOCK_MONOTONIC, &r) == 0 && r.tv_sec == 0 && r.tv_nsec <= 1000000;
}

static double process_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A binary profile read back. */
struct prof {
	uint64_t *w;
	size_t nw;             /* words before the map */
	char *maps;            /* the text after the trailer */
	uint64_t period_us;
	uint64_t total;        /* sum of the counts */
	size_t records;
};

/* The address range of the function named `fn` in this executable. */
static void fn_range(void (*fn)(double), uintptr_t *lo, uintptr_t *hi)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	CHECK(dladdr1((void *)fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym, "dladdr1");
	*lo = (uintptr_t)info.dli_saddr;
	*hi = *lo + sym->st_size;
}

/* Periods whose leaf PC lies in fn. */
static uint64_t leaf_count(const struct prof *p, void (*fn)(double))
{
	uintptr_t lo, hi;
	fn_range(fn, &lo, &hi);
	uint64_t n = 0;
	for (size_t i = 5; i + 2 <= p->nw - 3;) {
		uint64_t count = p->w[i], depth = p->w[i + 1];
		if (depth && p->w[i + 2] >= lo && p->w[i + 2] < hi)
			n += count;
		i += 2 + depth;
	}
	return n;
}

/* Reads and checks the whole structure of the binary profile `path`. */
static void read_prof(const char *path, struct prof *p)
{
	memset(p, 0, sizeof *p);
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL, "open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	rewind(f);
	CHECK(size >= 8 * 8, "%s: %ld bytes, too short", path, size);
	char *buf = malloc((size_t)size + 1);
	CHECK(fread(buf, 1, (size_t)size, f) == (size_t)size, "read %s", path);
	fclose(f);
	buf[size] = '\0';
	uint64_t *w = (uint64_t *)buf;
	size_t max = (size_t)size / 8;
	CHECK(w[0] == 0 && w[1] == 3 && w[2] == 0 && w[4] == 0, "%s: header %llu %llu %llu %llu %llu", path,
	      (unsigned long long)w[0], (unsigned long long)w[1], (unsigned long long)w[2],
	      (unsigned long long)w[3], (unsigned long long)w[4]);
	p->period_us = w[3];
	size_t i = 5;
	for (;;) {
		CHECK(i + 3 <= max, "%s: no trailer", path);
		if (w[i] == 0 && w[i + 1] == 1 && w[i + 2] == 0)
			break;
		uint64_t count = w[i], n = w[i + 1];
		CHECK(count > 0 && n >= 1 && n <= 1024 && i + 2 + n <= max, "%s: bad record at word %zu: %llu %llu",
		      path, i, (unsigned long long)count, (unsigned long long)n);
		p->total += count;
		p->records++;
		i += 2 + n;
	}
	p->nw = i + 3;
	p->w = w;
	p->maps = buf + p->nw * 8;
	CHECK(strstr(p->maps, " r-xp ") != NULL, "%s: no memory map after the trailer", path);
}

static void free_prof(struct prof *p)
{
	free(p->w);
}

/* Runs fn() with stderr going to a file; returns what it wrote. */
static char *capture_stderr(void (*fn)(void))
{
	char path[600];
	snprintf(path, sizeof path, "%s/stderr", dir);
	fflush(stderr);
	int saved = dup(2), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(saved >= 0 && fd >= 0, "capture stderr");
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	static char text[4096];
	ssize_t n = pread(fd, text, sizeof text - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	close(fd);
	return text;
}

/* The binary profile, word by word, and counts that are CPU time. */
static void structure_and_counts(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/a.prof", dir);
	setenv("CPUPROFILE_FREQUENCY", "1000", 1);
	CHECK(ProfilerStart(path) != 0, "ProfilerStart");
	/* From here: the start's own work (unwind tables, before the first
	 * sample can be taken; slow under qemu) is not the profile's. */
	double c0 = process_cpu_ms();
	struct ProfilerState st;
	ProfilerGetCurrentState(&st);
	CHECK(st.enabled && !strcmp(st.profile_name, path) && st.start_time >= time(NULL) - 5 &&
		      st.start_time <= time(NULL),
	      "state: enabled=%d name=%s", st.enabled, st.profile_name);
	CHECK(ProfilingIsEnabledForAllThreads(), "not enabled");
	CHECK(ProfilerStart(path) == 0, "a second start succeeded");
	gp_hot(300);
	/* samples_gathered: the samples, read in batches. */
	int seen = 0;
	int want = (int)(least * 280);
	for (int i = 0; i < 100 && seen < want; i++) {
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		ProfilerGetCurrentState(&st);
		seen = st.samples_gathered;
	}
	CHECK(seen >= want, "samples_gathered %d after 300 ms at 1 kHz", seen);
	ProfilerStop();
	double cpu = process_cpu_ms() - c0;
	ProfilerGetCurrentState(&st);
	CHECK(!st.enabled && !st.profile_name[0] && st.samples_gathered == 0 && st.start_time == 0,
	      "state after stop: enabled=%d name=%s samples=%d", st.enabled, st.profile_name, st.samples_gathered);
	CHECK(!ProfilingIsEnabledForAllThreads(), "enabled after stop");

	struct prof p;
	read_prof(path, &p);
	CHECK_EQ(p.period_us, 1000);
	CHECK(p.total >= (uint64_t)seen, "file has %llu periods, the state said %d", (unsigned long long)p.total, seen);
	double cov = (double)p.total / cpu;
	uint64_t hot = leaf_count(&p, gp_hot);
	printf("a.prof: %zu records, %llu periods (%.0f ms of CPU: coverage %.3f), %llu in gp_hot\n", p.records,
	       (unsigned long long)p.total, cpu, cov, (unsigned long long)hot);
	CHECK(cov > least && cov < 1.1, "coverage %.3f", cov);
	CHECK(hot * 10 >= p.total * 8, "gp_hot has %llu of %llu periods", (unsigned long long)hot,
	      (unsigned long long)p.total);
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0, "readlink");
	self[n] = '\0';
	CHECK(strstr(p.maps, self) != NULL, "the map does not name %s", self);
	free_prof(&p);
	unsetenv("CPUPROFILE_FREQUENCY");
}

/* With the timer engine, which fires at most once a tick (250 Hz here),
 * each sample at 1 kHz stands for several periods, and counts so: the
 * totals are the CPU time less what came after the last sample, where one
 * a sample would be about a quarter to a third of it.  Best of four runs:
 * on a busy machine the timer can go quiet for a while.  (A kernel that
 * ticks at 1 kHz or more cannot tell.) */
static void multi_period_counts(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/timer.prof", dir);
	setenv("CPUPROFILE_FREQUENCY", "1000", 1);
	setenv("CPUPROF_ENGINE", "timer", 1);
	double best = 0;
	for (int run = 0; run < 4 && best < 0.8; run++) {
		CHECK(ProfilerStart(path) != 0, "ProfilerStart, timer engine");
		double c0 = process_cpu_ms();
		gp_ticked(400);
		ProfilerStop();
		double cpu = process_cpu_ms() - c0;
		struct prof p;
		read_prof(path, &p);
		double cov = (double)p.total / cpu;
		printf("timer.prof: %llu periods in %zu records for %.0f ms of CPU: coverage %.3f\n",
		       (unsigned long long)p.total, p.records, cpu, cov);
		CHECK(cov < 1.2, "timer engine: coverage %.3f", cov);
		CHECK(leaf_count(&p, gp_ticked) * 10 >= p.total * 8, "gp_ticked does not lead");
		if (cov > best)
			best = cov;
		free_prof(&p);
	}
	CHECK(best > 0.5, "timer engine: coverage %.3f, as if each sample counted one period", best);
	unsetenv("CPUPROF_ENGINE");
	unsetenv("CPUPROFILE_FREQUENCY");
}

/* A flush leaves a whole profile of what was collected so far; the stop
 * rewrites it with everything; a restart forgets it all. */
static void flush_and_restart(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/f.prof", dir);
	setenv("CPUPROFILE_FREQUENCY", "1000", 1);
	CHECK(ProfilerStart(path) != 0, "ProfilerStart");
	gp_hot(200);
	nanosleep(&(struct timespec){ 0, 300000000 }, NULL); /* the reader's batch */
	ProfilerFlush();
	struct prof p1, p2, p3;
	read_prof(path, &p1);
	uint64_t some = (uint64_t)((least - 0.1) * 200);
	CHECK(p1.total >= some, "flushed profile has %llu periods", (unsigned long long)p1.total);
	gp_hot(200);
	ProfilerStop();
	read_prof(path, &p2);
	CHECK(p2.total >= p1.total + some, "stopped profile has %llu periods, flushed %llu",
	      (unsigned long long)p2.total, (unsigned long long)p1.total);
	CHECK(ProfilerStart(path) != 0, "restart");
	gp_other(100);
	ProfilerStop();
	read_prof(path, &p3);
	CHECK(leaf_count(&p3, gp_hot) == 0 && leaf_count(&p3, gp_other) > 0,
	      "the restarted profile has gp_hot: %llu, gp_other: %llu", (unsigned long long)leaf_count(&p3, gp_hot),
	      (unsigned long long)leaf_count(&p3, gp_other));
	printf("f.prof: flushed %llu periods, stopped %llu, restarted %llu\n", (unsigned long long)p1.total,
	       (unsigned long long)p2.total, (unsigned long long)p3.total);
	free_prof(&p1);
	free_prof(&p2);
	free_prof(&p3);
	unsetenv("CPUPROFILE_FREQUENCY");
}

/* A relative name is where it was when the profile started. */
static void relative_name(void)
{
	char cwd[600], path[700];
	CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
	CHECK(chdir(dir) == 0, "chdir");
	CHECK(ProfilerStart("rel.prof") != 0, "ProfilerStart(rel.prof)");
	CHECK(chdir("/") == 0, "chdir /");
	gp_hot(50);
	ProfilerStop();
	CHECK(chdir(cwd) == 0, "chdir back");
	snprintf(path, sizeof path, "%s/rel.prof", dir);
	struct prof p;
	read_prof(path, &p);
	free_prof(&p);
}

static volatile int early_go;

static void *early_thread(void *unused)
{
	while (!early_go)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	gp_early_thread_work(200);
	return NULL;
}

static void *late_thread(void *unused)
{
	gp_thread_work(200);
	return NULL;
}

/* Threads that never call ProfilerRegisterThread(), made before and
 * after the start, are in the profile. */
static void unregistered_threads(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/t.prof", dir);
	setenv("CPUPROFILE_FREQUENCY", "1000", 1);
	setenv("CPUPROFILE_PER_THREAD_TIMERS", "1", 1);
	pthread_t a, b;
	CHECK(pthread_create(&a, NULL, early_thread, NULL) == 0, "pthread_create");
	CHECK(ProfilerStart(path) != 0, "ProfilerStart");
	early_go = 1;
	CHECK(pthread_create(&b, NULL, late_thread, NULL) == 0, "pthread_create");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	ProfilerStop();
	struct prof p;
	read_prof(path, &p);
	uint64_t early = leaf_count(&p, gp_early_thread_work), late = leaf_count(&p, gp_thread_work);
	printf("t.prof: thread there at start %llu periods, thread made after %llu\n", (unsigned long long)early,
	       (unsigned long long)late);
	uint64_t some = (uint64_t)((least - 0.1) * 200);
	CHECK(early >= some && late >= some, "threads missing: %llu %llu", (unsigned long long)early,
	      (unsigned long long)late);
	free_prof(&p);
	unsetenv("CPUPROFILE_PER_THREAD_TIMERS");
	unsetenv("CPUPROFILE_FREQUENCY");
}

static int filter_calls;

static int filter_nothing(void *arg)
{
	filter_calls++;
	return 0;
}

static void start_filtered(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/filter.prof", dir);
	struct ProfilerOptions o;
	memset(&o, 0, sizeof o);
	o.filter_in_thread = filter_nothing;
	CHECK(ProfilerStartWithOptions(path, &o) != 0, "ProfilerStartWithOptions");
	gp_filtered(100);
	ProfilerStop();
	CHECK(ProfilerStartWithOptions(path, &o) != 0, "ProfilerStartWithOptions again");
	gp_filtered(100);
	ProfilerStop();
}

/* filter_in_thread cannot be applied: one warning (not one a start), and
 * every thread is profiled. */
static void filter_warns_once(void)
{
	char *err = capture_stderr(start_filtered);
	char *first = strstr(err, "filter_in_thread");
	CHECK(first && !strstr(first + 1, "filter_in_thread"), "expected one filter_in_thread warning: %s", err);
	CHECK(strstr(err, "PROFILE: interrupts/evictions/bytes = ") != NULL, "no PROFILE line: %s", err);
	char path[600];
	snprintf(path, sizeof path, "%s/filter.prof", dir);
	struct prof p;
	read_prof(path, &p);
	CHECK(leaf_count(&p, gp_filtered) > 0, "the filter's thread is not profiled");
	CHECK_EQ(filter_calls, 0);
	free_prof(&p);
}

/* A name ending in .pb.gz gets a pprof file, written at the stop. */
static void pprof_by_name(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/p.pb.gz", dir);
	CHECK(ProfilerStart(path) != 0, "ProfilerStart(.pb.gz)");
	gp_hot(100);
	ProfilerFlush(); /* nothing to do for pprof */
	ProfilerStop();
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL, "no %s", path);
	unsigned char magic[2] = { 0, 0 };
	CHECK(fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b, "%s is not gzip", path);
	fclose(f);
}

/* Bad arguments fail the start, quietly, as gperftools' do. */
static void bad_starts(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/no/such/dir.prof", dir);
	CHECK(ProfilerStart(path) == 0 && errno == ENOENT, "start into a missing directory");
	CHECK(ProfilerStart("") == 0, "start into \"\"");
	CHECK(ProfilerStart(NULL) == 0, "start into NULL");
	CHECK(!ProfilingIsEnabledForAllThreads(), "enabled after failed starts");
	ProfilerStop();
	ProfilerFlush();
}

/* ---- ProfilerGetStackTrace ---- */

static void *trace[32];
static int ntrace;

void trace_caller(int skip);
__attribute__((noinline)) void trace_caller(int skip)
{
	ntrace = ProfilerGetStackTrace(trace, 32, skip, NULL);
	__asm__ volatile("");
}

void trace_outer(int skip);
__attribute__((noinline)) void trace_outer(int skip)
{
	trace_caller(skip);
	__asm__ volatile("");
}

static const char *name_of(void *pc)
{
	Dl_info info;
	return dladdr(pc, &info) && info.dli_sname ? info.dli_sname : "?";
}

static volatile sig_atomic_t handled;
static void *sig_trace[32];
static int nsig_trace;

static void on_alarm(int sig, siginfo_t *si, void *uc)
{
	if (!handled) {
		nsig_trace = ProfilerGetStackTrace(sig_trace, 32, 0, uc);
		handled = 1;
	}
}

/* Spins, with no call, until the alarm's handler has run. */
void gp_spin(void);
__attribute__((noinline)) void gp_spin(void)
{
	static volatile unsigned long x;
	while (!handled)
		x = x * 6364136223846793005ull + 1;
}

void gp_spin_caller(void);
__attribute__((noinline)) void gp_spin_caller(void)
{
	gp_spin();
	__asm__ volatile("");
}

void stack_traces(void);
__attribute__((noinline)) void stack_traces(void)
{
	trace_outer(0);
	CHECK(ntrace >= 3, "%d frames", ntrace);
	CHECK(!strcmp(name_of(trace[0]), "trace_caller") && !strcmp(name_of(trace[1]), "trace_outer") &&
		      !strcmp(name_of(trace[2]), "stack_traces"),
	      "frames %s <- %s <- %s", name_of(trace[0]), name_of(trace[1]), name_of(trace[2]));
	int all = ntrace;
	trace_outer(1);
	CHECK(ntrace == all - 1 && !strcmp(name_of(trace[0]), "trace_outer"), "skip 1: %d frames, first %s",
	      ntrace, name_of(trace[0]));

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	gp_spin_caller();
	signal(SIGALRM, SIG_DFL);
	CHECK(nsig_trace >= 2, "%d frames from the handler", nsig_trace);
	printf("from the handler: %s <- %s\n", name_of(sig_trace[0]), name_of(sig_trace[1]));
	CHECK(!strcmp(name_of(sig_trace[0]), "gp_spin"), "frame 0 is %s, not the interrupted gp_spin",
	      name_of(sig_trace[0]));
	CHECK(!strcmp(name_of(sig_trace[1]), "gp_spin_caller"), "frame 1 is %s, not gp_spin_caller",
	      name_of(sig_trace[1]));
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	unsetenv("CPUPROFILE");
	unsetenv("CPUPROFILE_FREQUENCY");
	unsetenv("CPUPROFILE_FORMAT");
	unsetenv("CPUPROF_ENGINE");
	if (!samples_on_time()) {
		least = 0.45;
		printf("samples come at the tick here: counts may miss up to half of a thread's CPU\n");
	}
	structure_and_counts();
	multi_period_counts();
	flush_and_restart();
	relative_name();
	unregistered_threads();
	filter_warns_once();
	pprof_by_name();
	bad_starts();
	stack_traces();
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	printf("all gperftools API checks passed\n");
	return 0;
}
