/*
 * unit_tickbound.c -- on a kernel whose timers are tick-bound (no
 * high-resolution timers, or highres=off: clock_getres says the tick),
 * `auto` takes the hw engine (where there is a PMU) or the timer engine
 * before perf and says why, and the profile
 * records the resolution; an engine asked for by name is still used; a
 * program that runs less than a tick between sleeps gets a warning.  The
 * resolution comes through the test seam, as this host has fine timers.
 * Per engine: forced perf is perf; the timer engine warns of short runs
 * (and not of busy work); hw, which is not tick-driven, does not.
 *
 * TEST_ENGINES: timer perf hw
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

#include "base/testhooks.h" /* the test build's knobs */

DEFINE_BURNER(ticked_work)

static char dir[] = "/tmp/cpuprof-test-XXXXXX", path[600];

static void run(const char *engine)
{
	char val[600];
	snprintf(path, sizeof path, "%s/tick.pb.gz", dir);
	cp_test_timer_resolution_ns = 4000000;

	CHECK_EQ(cpuprof_start(path, NULL), 0);
	ticked_work(50);
	CHECK_EQ(cpuprof_stop(), 0);
	/* hw where the machine has a PMU, the timer engine otherwise. */
	const char *want = engine_unavailable("hw") ? "timer" : "hw";
	CHECK(pprof_comment(path, "engine", val, sizeof val) == 0 && !strcmp(val, want), "auto chose %s, not %s", val,
	      want);
	CHECK(pprof_comment(path, "engine_reason", val, sizeof val) == 0 && strstr(val, "tick-bound"),
	      "engine_reason: %s", val);
	CHECK(pprof_comment(path, "timer_resolution_ns", val, sizeof val) == 0 && !strcmp(val, "4000000"),
	      "timer_resolution_ns=%s", val);

	if (!strcmp(engine, "perf")) {
		/* An engine asked for by name is still used. */
		struct cpuprof_options o = { .engine = "perf" };
		START_ENGINE(path, &o);
		ticked_work(20);
		CHECK_EQ(cpuprof_stop(), 0);
		CHECK(pprof_comment(path, "engine", val, sizeof val) == 0 && !strcmp(val, "perf"), "forced perf: %s", val);
	} else if (!strcmp(engine, "timer")) {
		/* Runs shorter than the tick between sleeps: the samples, taken
		 * at ticks, cannot be trusted to share the CPU out right, and
		 * the profile must say so; busy work of the same CPU must not. */
		struct cpuprof_options slow = { .hz = 100, .engine = "timer" };
		START_ENGINE(path, &slow);
		double end = thread_cpu_ms() + 400;
		while (thread_cpu_ms() < end) {
			ticked_work(0.3);
			usleep(200);
		}
		CHECK_EQ(cpuprof_stop(), 0);
		CHECK(pprof_comment(path, "mean_run_ns", val, sizeof val) == 0, "no mean_run_ns");
		fprintf(stderr, "short runs: mean_run_ns=%s\n", val);
		CHECK(atoll(val) < 4000000, "0.3 ms runs between sleeps measured as %s ns", val);
		CHECK(pprof_comment(path, "warning", val, sizeof val) == 0 && strstr(val, "less than this kernel's tick"),
		      "short runs on a tick-bound kernel: warning %s", val);
		START_ENGINE(path, &slow);
		ticked_work(400);
		CHECK_EQ(cpuprof_stop(), 0);
		CHECK(pprof_comment(path, "mean_run_ns", val, sizeof val) == 0 && atoll(val) > 4000000,
		      "busy work: mean_run_ns=%s", val);
		CHECK(pprof_comment(path, "warning", val, sizeof val) != 0 || !strstr(val, "tick"), "busy work warns: %s",
		      val);
	} else {
		/* The hw engine's samples do not come at ticks: no such
		 * warning. */
		struct cpuprof_options hw = { .hz = 100, .engine = "hw" };
		START_ENGINE(path, &hw);
		double end = thread_cpu_ms() + 400;
		while (thread_cpu_ms() < end) {
			ticked_work(0.3);
			usleep(200);
		}
		CHECK_EQ(cpuprof_stop(), 0);
		CHECK(pprof_comment(path, "warning", val, sizeof val) != 0 || !strstr(val, "less than this kernel's tick"),
		      "hw engine: %s", val);
	}
}

int main(void)
{
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	static const char *const engines[] = { "timer", "perf", "hw", NULL };
	for_each_engine(engines, run);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
