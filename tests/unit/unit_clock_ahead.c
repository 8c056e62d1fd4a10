/*
 * unit_clock_ahead.c -- a perf engine's samples hold no more CPU than
 * their threads' CPU clocks say they used.  The task clock runs on while a
 * virtual machine's host has taken its CPU away (steal time), and the
 * thread CPU clocks do not: on a 2-CPU VM whose host took 4-35% of its
 * time (/proc/stat's steal, 10 s windows), a 500 ms process's profile
 * held up to 22% more CPU than the process used.  Here the
 * test makes every sample weigh half as much again as its count
 * (CPUPROF_TEST_CLOCK_AHEAD_PCT, read by the weigher both share with
 * record), on two threads, and the profile must still
 * hold the process's CPU and say how much it took off: once with every
 * sample kept, once with most of them lost (a ring of 64 cells that
 * nobody drains), which weigh the same clock.  A flush while the profile
 * runs is held to the clocks as they are then, as the stop is.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(ahead_work)

#include "base/testhooks.h" /* the test build's knobs */

/* The CPU the profile at path holds, in ns. */
static long long held_ns(const char *path)
{
	long long count, ns;
	long nsamples;
	pprof_file_totals(path, &count, &ns, &nsamples);
	return ns;
}

static double ns_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1e9 + (b->tv_nsec - a->tv_nsec);
}

static void *worker(void *unused)
{
	ahead_work(300);
	return NULL;
}

int main(void)
{
	require_pprof();
	const char *why = engine_unavailable("perf");
	if (why)
		SKIP("%s", why);
	char dir[] = "/tmp/cpuprof-test-XXXXXX", path[600], val[256];
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof path, "%s/ahead.pb.gz", dir);
	setenv("CPUPROF_TEST_CLOCK_AHEAD_PCT", "50", 1);
	for (int lose = 0; lose < 2; lose++) {
		cp_test_ring_cells = lose ? 64 : 0;
		cp_test_no_drain = lose;
		struct cpuprof_options o = { .engine = "perf", .hz = 1000 };
		START_ENGINE(path, &o);
		struct timespec c0, c1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, worker, NULL), 0);
		ahead_work(300);
		CHECK_EQ(pthread_join(t, NULL), 0);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		if (!lose) {
			CHECK_EQ(cpuprof_flush(), 0);
			struct timespec c2;
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c2);
			long long ns = held_ns(path);
			double at = ns_between(&c0, &c2);
			CHECK(pprof_comment(path, "clock_ahead_ns", val, sizeof val) == 0, "no clock_ahead_ns after a flush");
			fprintf(stderr, "flushed: the profile holds %.1f ms, the process's clock says %.1f ms; %.1f ms taken "
				"off\n", ns / 1e6, at / 1e6, atoll(val) / 1e6);
			CHECK(ns < at * 1.05, "a flush holds %lld ns where the clock says %.0f", ns, at);
			CHECK(atoll(val) > at * 0.25, "a flush took %s ns off samples weighing 1.5 times %.0f ns", val, at);
		}
		CHECK_EQ(cpuprof_stop(), 0);

		long long ns = held_ns(path);
		double cpu = ns_between(&c0, &c1);
		CHECK(pprof_comment(path, "clock_ahead_ns", val, sizeof val) == 0, "no clock_ahead_ns comment");
		long long ahead = atoll(val), lost = pprof_cum_ns(path, "[lost]");
		fprintf(stderr, "%s: the profile holds %.1f ms ([lost] %.1f ms), the process's clock says %.1f ms; "
			"%.1f ms taken off\n", lose ? "most lost" : "all kept", ns / 1e6, lost / 1e6, cpu / 1e6,
			ahead / 1e6);
		CHECK(!lose || lost > ns / 2, "[lost] holds %lld ns of %lld with a ring of 64 cells", lost, ns);
		/* Samples weighing 1.5 times the CPU would hold about 300 ms
		 * too many.  The profile also holds the keeper's CPU
		 * ([profiler: ...]), which the process's clock counts too. */
		CHECK(ns < cpu * 1.05, "the profile holds %lld ns where the clock says %.0f", ns, cpu);
		CHECK(ns > cpu * 0.9, "the profile holds %lld ns where the clock says %.0f", ns, cpu);
		CHECK(ahead > cpu * 0.25, "%lld ns taken off for samples weighing 1.5 times %.0f ns", ahead, cpu);
	}

	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
