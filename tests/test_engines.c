/*
 * test_engines.c -- each engine forced in turn through the API: threads
 * that exist before the start and threads created after it are all
 * sampled, the hot function leads, the profile names its engine and its
 * coverage stays in a band no loaded machine can push it out of.  An
 * engine this machine allows (check.h: engine_unavailable) must start.
 *
 * TEST_ENGINES: perf hw timer itimer auto
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cpuprof.h"

DEFINE_BURNER(hot_main)
DEFINE_BURNER(before_start_thread)
DEFINE_BURNER(after_start_thread)

static pthread_barrier_t go;

static void *early(void *arg)
{
	pthread_barrier_wait(&go); /* wait for the profile to start */
	before_start_thread(150);
	return NULL;
}

static void *late(void *arg)
{
	after_start_thread(150);
	return NULL;
}

static char dir[] = "/tmp/cpuprof-test-XXXXXX";

/* What `auto` must take here (README, Engines): perf where its timers are
 * fine, else hw first; the timer engine where neither is allowed. */
static const char *auto_engine(void)
{
	struct timespec res;
	int tick_bound = clock_getres(CLOCK_MONOTONIC, &res) == 0 && (res.tv_sec > 0 || res.tv_nsec > 1000000);
	if (tick_bound && !engine_unavailable("hw"))
		return "hw";
	if (!tick_bound && !engine_unavailable("perf"))
		return "perf";
	return "timer";
}

static void run(const char *engine)
{
	char path[512], val[64], name[256];
	snprintf(path, sizeof path, "%s/%s.pb.gz", dir, engine);
	pthread_t a, b;
	pthread_barrier_init(&go, NULL, 2);
	pthread_create(&a, NULL, early, NULL);

	struct cpuprof_options o = { .hz = 1000, .engine = engine };
	START_ENGINE(path, &o);
	pthread_barrier_wait(&go);
	pthread_create(&b, NULL, late, NULL);
	hot_main(600);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CHECK_EQ(cpuprof_stop(), 0);

	CHECK(pprof_top_row(path, 0, name, sizeof name) == 0, "%s: pprof cannot read %s", engine, path);
	CHECK(!strcmp(name, "hot_main"), "%s: leader is %s, not hot_main", engine, name);
	char *top = pprof_run("-top", path);
	CHECK(top && strstr(top, "before_start_thread"), "%s: thread running before start not sampled", engine);
	CHECK(strstr(top, "after_start_thread"), "%s: thread created after start not sampled", engine);
	free(top);
	char used[64];
	CHECK(pprof_comment(path, "engine", used, sizeof used) == 0, "%s: no engine comment", engine);
	if (strcmp(engine, "auto"))
		CHECK(!strcmp(used, engine), "%s: engine=%s", engine, used);
	else
		CHECK(!strcmp(used, auto_engine()), "auto: engine=%s where this machine allows %s", used, auto_engine());
	CHECK(pprof_comment(path, "coverage", val, sizeof val) == 0, "%s: no coverage comment", engine);
	double cov = atof(val);
	/* Every engine weighs samples by the CPU their thread used and the
	 * profile adds each thread's CPU after its last sample: near 1
	 * however few signals a loaded machine delivers.  Only the thread
	 * that existed before the start can take some CPU along unseen: it
	 * exits before the stop, and its last part is lost with it. */
	CHECK(cov > 0.7 && cov < 1.1, "%s: coverage %.3f", engine, cov);
	fprintf(stderr, "%s: coverage %.3f, leader %s\n", engine, cov, name);
}

int main(void)
{
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	static const char *const engines[] = { "perf", "hw", "timer", "itimer", "auto", NULL };
	for_each_engine(engines, run);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
