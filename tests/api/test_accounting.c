/*
 * test_accounting.c -- the profile accounts for CPU no sample saw, and
 * says so: threads shorter than a period land in the
 * "[unsampled: ...]" frame when they exit (or, for threads that existed
 * before the start, when a sweep finds them gone), a flush counts the
 * live threads' CPU since their last sample, and a rate far above what the
 * kernel delivers gets a warning (comment and stderr) instead of passing
 * for a profile of the asked-for rate.  Threads that each run less than a
 * period get the two warnings they deserve: most of the CPU in
 * [unsampled: ...] (over 10%), and far fewer samples than asked for.  With
 * hw, which counts user-mode cycles only, a program that spends most of
 * its CPU in the kernel (reading /dev/zero) is warned that it did.
 * Threads that sleep thousands of times a second and end before the stop
 * are covered whole: the perf task clock counts a few percent less than
 * the scheduler for them, and their own CPU clocks square the account.
 *
 * TEST_ENGINES: perf hw timer itimer
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

#define UNSAMPLED "[unsampled: after each thread's last sample]"

DEFINE_BURNER(short_thread_work)
DEFINE_BURNER(live_thread_work)
DEFINE_BURNER(busy_main)
DEFINE_BURNER(sleepy_work)

static uint64_t comment_u64(const char *path, const char *key)
{
	char val[64];
	CHECK(pprof_comment(path, key, val, sizeof val) == 0, "%s: no %s comment", path, key);
	return strtoull(val, NULL, 10);
}

static double comment_double(const char *path, const char *key)
{
	char val[64];
	CHECK(pprof_comment(path, key, val, sizeof val) == 0, "%s: no %s comment", path, key);
	return atof(val);
}

static void *short_thread(void *arg)
{
	short_thread_work(40);
	return NULL;
}

/* Six threads of 40 ms CPU each, one after another, at 10 Hz: a sample
 * needs 100 ms of a thread's CPU (of the process's, for itimer), so most
 * of theirs is CPU no sample saw.  It must reach the profile when each
 * thread exits, and not as attributed CPU. */
static void short_threads(const char *engine, const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/short-%s.pb.gz", dir, engine);
	struct cpuprof_options o = { .hz = 10, .engine = engine };
	START_ENGINE(path, &o);
	for (int i = 0; i < 6; i++) {
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, short_thread, NULL), 0);
		pthread_join(t, NULL);
	}
	CHECK_EQ(cpuprof_stop(), 0);

	uint64_t unsampled = comment_u64(path, "unsampled_cpu_ns");
	double cov = comment_double(path, "coverage");
	double attributed = comment_double(path, "attributed");
	fprintf(stderr, "%s: 6 x 40 ms threads at 10 Hz: unsampled %.1f ms, coverage %.3f, attributed %.3f\n",
		engine, unsampled / 1e6, cov, attributed);
	/* The threads burned 240 ms; samples can take at most 200 ms of it
	 * away from the frame (one per 100 ms of CPU; no perf or timer
	 * thread lives that long). */
	CHECK(unsampled >= 40000000, "%s: unsampled_cpu_ns=%llu, expected >= 40 ms of 240", engine,
	      (unsigned long long)unsampled);
	CHECK(cov > 0.8 && cov < 1.1, "%s: coverage %.3f with the unsampled CPU in", engine, cov);
	CHECK(attributed < 0.85, "%s: attributed %.3f: the unsampled CPU passed off as sampled?", engine,
	      attributed);
	char *top = pprof_run("-top", path);
	CHECK(top && strstr(top, UNSAMPLED), "%s: no %s frame in:\n%s", engine, UNSAMPLED, top ? top : "");
	free(top);
	/* The pprof total is what profile_cpu_ns says. */
	long long count, total;
	long n;
	pprof_file_totals(path, &count, &total, &n);
	uint64_t prof = comment_u64(path, "profile_cpu_ns");
	CHECK((uint64_t)total == prof, "%s: samples sum to %lld ns, profile_cpu_ns=%llu", engine, total,
	      (unsigned long long)prof);
}

/* 1,000 rounds of 0.1 ms of CPU and a 50 us sleep. */
static void *sleepy_thread(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		sleepy_work(0.1);
		nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	}
	return NULL;
}

/* Four such threads at 10 kHz, ended before the stop: the profile holds
 * the CPU the kernel charged to the process (before the threads' clocks
 * squared it, the perf engine's was 0.972 of it here). */
static void sleepy_threads(const char *engine, const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/sleepy-%s.pb.gz", dir, engine);
	struct cpuprof_options o = { .hz = 10000, .engine = engine };
	START_ENGINE(path, &o);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, sleepy_thread, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(cpuprof_stop(), 0);
	double cov = comment_double(path, "coverage");
	fprintf(stderr, "%s: 4 threads sleeping 10,000 times a second of their CPU, ended before the stop: coverage %.3f, "
		"attributed %.3f\n", engine, cov, comment_double(path, "attributed"));
	CHECK(cov >= 0.985 && cov <= 1.02, "%s: coverage %.3f of the CPU the kernel charged", engine, cov);
}

static pthread_barrier_t burned, release;

static void *live_thread(void *arg)
{
	live_thread_work(30);
	pthread_barrier_wait(&burned);
	pthread_barrier_wait(&release);
	return NULL;
}

/* A flush while a thread that burned 30 ms at 10 Hz still lives counts
 * that CPU, and the final profile still has it. */
static void flush_counts_live_threads(const char *engine, const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/flush.pb.gz", dir);
	struct cpuprof_options o = { .hz = 10, .engine = engine };
	START_ENGINE(path, &o);
	pthread_barrier_init(&burned, NULL, 2);
	pthread_barrier_init(&release, NULL, 2);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, live_thread, NULL), 0);
	pthread_barrier_wait(&burned);
	CHECK_EQ(cpuprof_flush(), 0);
	uint64_t at_flush = comment_u64(path, "unsampled_cpu_ns");
	pthread_barrier_wait(&release);
	pthread_join(t, NULL);
	CHECK_EQ(cpuprof_stop(), 0);
	uint64_t at_stop = comment_u64(path, "unsampled_cpu_ns");
	fprintf(stderr, "flush: unsampled %.1f ms at flush, %.1f ms at stop\n", at_flush / 1e6, at_stop / 1e6);
	CHECK(at_flush >= 25000000, "unsampled_cpu_ns=%llu at flush, the live thread burned 30 ms",
	      (unsigned long long)at_flush);
	CHECK(at_stop >= at_flush, "unsampled_cpu_ns fell from %llu to %llu", (unsigned long long)at_flush,
	      (unsigned long long)at_stop);
	/* The flush's reading of the live thread is not counted again. */
	double cov = comment_double(path, "coverage");
	CHECK(cov > 0.8 && cov < 1.1, "coverage %.3f after a flush", cov);
}

DEFINE_BURNER(early_thread_work)
static pthread_barrier_t started;

static void *early_thread(void *arg)
{
	pthread_barrier_wait(&started);
	early_thread_work(40);
	usleep(1500000); /* a sweep (every second) reads its clock */
	return NULL;
}

/* A thread that exists before the start is found in /proc, not through
 * pthread_create, so its exit is not seen as it happens: the sweep finds
 * it gone later, when its clock can no longer be read.  What the sweep
 * read while it lived must still reach the profile. */
static void early_thread_tail(const char *engine, const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/early.pb.gz", dir);
	pthread_barrier_init(&started, NULL, 2);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, early_thread, NULL), 0);
	struct cpuprof_options o = { .hz = 10, .engine = engine };
	START_ENGINE(path, &o);
	pthread_barrier_wait(&started);
	pthread_join(t, NULL);
	usleep(1500000); /* a sweep finds it gone */
	CHECK_EQ(cpuprof_stop(), 0);
	uint64_t unsampled = comment_u64(path, "unsampled_cpu_ns");
	fprintf(stderr, "early thread, 40 ms at 10 Hz: unsampled %.1f ms\n", unsampled / 1e6);
	CHECK(unsampled >= 30000000, "unsampled_cpu_ns=%llu: the early thread's 40 ms are missing",
	      (unsigned long long)unsampled);
}

/* ITIMER_PROF and the timer engine's timers fire at most once a kernel
 * tick (HZ <= 1000), so 10 kHz gets a tenth of its samples at best: the
 * profile must say so. */
static void thin_samples_warn(const char *engine, const char *dir)
{
	char path[512], errpath[512], warning[1024];
	snprintf(path, sizeof path, "%s/thin.pb.gz", dir);
	snprintf(errpath, sizeof errpath, "%s/stderr", dir);
	struct cpuprof_options o = { .hz = 10000, .engine = engine };
	START_ENGINE(path, &o);
	int rc;
	busy_main(600);
	fflush(stderr);
	int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(saved >= 0 && fd >= 0, "redirecting stderr");
	dup2(fd, 2);
	close(fd);
	rc = cpuprof_stop();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	CHECK_EQ(rc, 0);

	uint64_t samples = comment_u64(path, "samples"), expected = comment_u64(path, "expected_samples");
	fprintf(stderr, "%s at 10 kHz: %llu samples of %llu expected\n", engine, (unsigned long long)samples,
		(unsigned long long)expected);
	CHECK(samples * 8 < expected, "%s at 10 kHz took %llu samples of %llu: above the tick rate?", engine,
	      (unsigned long long)samples, (unsigned long long)expected);
	CHECK(pprof_comment(path, "warning", warning, sizeof warning) == 0, "no warning comment with %llu of %llu samples",
	      (unsigned long long)samples, (unsigned long long)expected);
	CHECK(strstr(warning, "samples where 10000 Hz asks for"), "warning: %s", warning);
	FILE *f = fopen(errpath, "r");
	char line[1024] = "";
	CHECK(f && fgets(line, sizeof line, f), "nothing on stderr");
	fclose(f);
	CHECK(strstr(line, "cpuprof: warning: ") && strstr(line, warning), "stderr: %s", line);
	/* Coverage is still whole: the samples carry the CPU they stand for. */
	double cov = comment_double(path, "coverage");
	CHECK(cov > 0.8 && cov < 1.1, "%s at 10 kHz: coverage %.3f", engine, cov);
}

DEFINE_BURNER(brief_thread_work)

static void *brief_thread(void *arg)
{
	brief_thread_work(5);
	return NULL;
}

/* 70 threads of 5 ms CPU each, one after another, at 100 Hz: no thread
 * lives a period, so (but for itimer's process-wide timer) no sample is
 * taken and nearly all of the 350 ms is in [unsampled: ...]; and where
 * 100 Hz asks for 35 samples there are next to none.  The judge speaks
 * from 32 periods of CPU on (320 ms here): both warnings must be there.
 * Under qemu-user the main thread's 70 thread creations take CPU enough
 * for about an eighth of the samples asked for (6 of 45 in a run), the
 * judge's bound for "few": there the samples clause follows the counts. */
static void brief_threads_warn(const char *engine, const char *dir)
{
	char path[512], warning[1024];
	snprintf(path, sizeof path, "%s/brief.pb.gz", dir);
	struct cpuprof_options o = { .hz = 100, .engine = engine };
	START_ENGINE(path, &o);
	for (int i = 0; i < 70; i++) {
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, brief_thread, NULL), 0);
		pthread_join(t, NULL);
	}
	CHECK_EQ(cpuprof_stop(), 0);
	uint64_t unsampled = comment_u64(path, "unsampled_cpu_ns"), cpu = comment_u64(path, "process_cpu_ns");
	uint64_t samples = comment_u64(path, "samples"), expected = comment_u64(path, "expected_samples");
	fprintf(stderr, "%s: 70 x 5 ms threads at 100 Hz: %llu samples of %llu, unsampled %.1f of %.1f ms\n", engine,
		(unsigned long long)samples, (unsigned long long)expected, unsampled / 1e6, cpu / 1e6);
	CHECK(unsampled * 2 > cpu, "%s: unsampled %llu ns of %llu", engine, (unsigned long long)unsampled,
	      (unsigned long long)cpu);
	CHECK(pprof_comment(path, "warning", warning, sizeof warning) == 0, "%s: no warning with %.0f%% unsampled", engine,
	      100.0 * (double)unsampled / (double)cpu);
	CHECK(strstr(warning, "is in no function but in [unsampled: ...]"), "%s: warning: %s", engine, warning);
	int few = (samples + comment_u64(path, "lost")) * 8 < expected;
	const char *emu = getenv("EMU");
	if (!emu || !*emu)
		CHECK(few, "%s: %llu samples of %llu asked for", engine, (unsigned long long)samples,
		      (unsigned long long)expected);
	CHECK(!strstr(warning, " samples where 100 Hz asks for") == !few, "%s: %llu samples of %llu, warning: %s",
	      engine, (unsigned long long)samples, (unsigned long long)expected, warning);
}

/* Half a second of CPU, nearly all of it the kernel's: reads of /dev/zero
 * (the kernel clears the buffer). */
static void kernel_time_warn(const char *engine, const char *dir)
{
	char path[512], warning[1024];
	snprintf(path, sizeof path, "%s/kernel.pb.gz", dir);
	static char buf[1 << 20];
	int fd = open("/dev/zero", O_RDONLY);
	CHECK(fd >= 0, "/dev/zero");
	struct cpuprof_options o = { .engine = engine };
	START_ENGINE(path, &o);
	double end = thread_cpu_ms() + 500;
	while (thread_cpu_ms() < end)
		CHECK(read(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "read /dev/zero");
	CHECK_EQ(cpuprof_stop(), 0);
	close(fd);
	CHECK(pprof_comment(path, "warning", warning, sizeof warning) == 0 && strstr(warning, "spent in the kernel"),
	      "%s: no warning that the CPU was the kernel's", engine);
	fprintf(stderr, "%s: reads of /dev/zero: %s\n", engine, warning);
}

static char dir[] = "/tmp/cpuprof-test-XXXXXX";

static void run(const char *engine)
{
	short_threads(engine, dir);
	sleepy_threads(engine, dir);
	flush_counts_live_threads(engine, dir);
	early_thread_tail(engine, dir);
	/* itimer's one timer counts the whole process's CPU: short threads
	 * are sampled as they run. */
	if (strcmp(engine, "itimer"))
		brief_threads_warn(engine, dir);
	/* Only the tick-driven engines have a rate they cannot reach. */
	if (!strcmp(engine, "timer") || !strcmp(engine, "itimer"))
		thin_samples_warn(engine, dir);
	if (!strcmp(engine, "hw"))
		kernel_time_warn(engine, dir);
}

int main(void)
{
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	static const char *const engines[] = { "perf", "hw", "timer", "itimer", NULL };
	for_each_engine(engines, run);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
	return 0;
}
