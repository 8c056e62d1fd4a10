/*
 * test_offcpu.c -- off-CPU time through the API (struct cpuprof_options'
 * off_cpu): with the perf engine, a thread that sleeps about 300 ms in
 * api_sleep, timing itself with CLOCK_MONOTONIC, finds that time within
 * 10% under api_sleep in the profile's off_cpu, in a profile flushed while
 * it runs (a copy of the table) and in the one written at the stop; wall
 * is cpu + off_cpu; each thread's CPU plus off-CPU time is within 5% of
 * its lifetime.  With the timer engine the profile holds CPU only and
 * says why.  Skips where the machine does not let this process sample
 * switch-outs (tests/check.h: off-cpu).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(api_burn)

static char dir[] = "/tmp/cpuprof-test-XXXXXX";
static int64_t slept_ns;

__attribute__((noinline)) static void api_sleep(void)
{
	for (int i = 0; i < 3; i++) {
		int64_t t0 = mono_ns();
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
		slept_ns += mono_ns() - t0;
	}
}

static void *sleeper(void *arg)
{
	api_sleep();
	return arg;
}

/* The `value` (sample index) of function fn, cumulative, in ns. */
/* api_sleep's off-CPU time in `file` is within 10% of what it measured. */
static void check_sleep(const char *file, const char *what)
{
	long long off = pprof_cum_index_ns(file, "off_cpu", "api_sleep");
	double r = (double)off / (double)slept_ns;
	printf("%s: api_sleep off the CPU %.1f ms, measured %.1f ms (%.3f)\n", what, off / 1e6, slept_ns / 1e6, r);
	CHECK(r >= 0.9 && r <= 1.1, "%s: api_sleep's off-CPU time is not within 10%% of its own measure", what);
}

int main(void)
{
	require_pprof();
	const char *why = engine_unavailable("off-cpu");
	if (why)
		SKIP("%s", why);
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	char path[600], flushed[700];
	snprintf(path, sizeof path, "%s/off.pb.gz", dir);
	struct cpuprof_options o = { .engine = "perf", .off_cpu = 1 };
	START_ENGINE(path, &o);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, sleeper, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	api_burn(50);
	CHECK_EQ(cpuprof_flush(), 0);
	snprintf(flushed, sizeof flushed, "%s.flushed", path);
	CHECK_EQ(rename(path, flushed), 0);
	api_burn(50);
	CHECK_EQ(cpuprof_stop(), 0);
	check_sleep(flushed, "flushed");
	check_sleep(path, "stopped");
	char val[512];
	CHECK(pprof_comment(path, "off_cpu", val, sizeof val) == 0 && !strncmp(val, "recorded", 8), "off_cpu=%s", val);
	CHECK(pprof_comment(path, "off_cpu_accounted", val, sizeof val) == 0, "no off_cpu_accounted");
	double lo = 0, hi = 0;
	CHECK(sscanf(val, "%lf..%lf", &lo, &hi) == 2 && lo >= 0.95 && hi <= 1.05, "off_cpu_accounted=%s", val);
	long long wall = pprof_cum_index_ns(path, "wall", "main"), cpu = pprof_cum_index_ns(path, "cpu", "main"),
		  off = pprof_cum_index_ns(path, "off_cpu", "main");
	CHECK(wall == cpu + off, "main: wall %lld is not cpu %lld + off_cpu %lld", wall, cpu, off);

	/* A signal engine: CPU only, and the profile says why. */
	struct cpuprof_options ot = { .engine = "timer", .off_cpu = 1 };
	START_ENGINE(path, &ot);
	/* 100 ms: the timer engine's tick-bound samples land in a 30 ms burn
	 * too seldom on a loaded machine (none, once in a mutation run). */
	api_burn(100);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(pprof_comment(path, "off_cpu", val, sizeof val) == 0 && strstr(val, "absent") && strstr(val, "timer"),
	      "timer engine: off_cpu=%s", val);
	CHECK(pprof_cum_index_ns(path, "off_cpu", "main") < 0, "timer engine: the profile has off_cpu");
	CHECK(pprof_cum_index_ns(path, "cpu", "api_burn") > 0, "timer engine: no CPU profile");
	unlink(path);
	unlink(flushed);
	rmdir(dir);
	printf("ok\n");
	return 0;
}
