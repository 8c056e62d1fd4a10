/*
 * test_engines.c -- each engine forced in turn through the API: threads
 * that exist before the start and threads created after it are all
 * sampled, the hot function leads, the profile names its engine and its
 * coverage stays in a band no loaded machine can push it out of; `auto`
 * takes the engine the README says it takes here.  A thread made by other
 * means than pthread_create is sampled once it registers (the perf
 * engines sample it anyway); one that never registers is invisible to the
 * timer engine, whose profile then covers only half the CPU and must say
 * so, in coverage= (as the program's own clock has it) and in a warning.
 * An engine this machine allows (check.h: engine_unavailable) must start.
 *
 * TEST_ENGINES: perf hw timer itimer auto
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(hot_main)
DEFINE_BURNER(before_start_thread)
DEFINE_BURNER(after_start_thread)
DEFINE_BURNER(registered_thread_work)
DEFINE_BURNER(unregistered_thread_work)

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

/* pthread_create as libc has it, bypassing cpuprof's interposition: a
 * stand-in for threads made by other means. */
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void *foreign_registered(void *arg)
{
	CHECK_EQ(cpuprof_register_thread(), 0);
	CHECK_EQ(cpuprof_register_thread(), 0); /* twice is harmless */
	registered_thread_work(300);
	return NULL;
}

static void *foreign_unregistered(void *arg)
{
	unregistered_thread_work(300);
	return NULL;
}

static void registration(const char *engine)
{
	char path[600], val[1024];
	snprintf(path, sizeof path, "%s/register-%s.pb.gz", dir, engine);
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(libc, "libc handle");
	create_fn real = (create_fn)dlsym(libc, "pthread_create");
	CHECK(real, "libc's pthread_create");
	struct cpuprof_options o = { .engine = engine };
	START_ENGINE(path, &o);
	struct timespec c0, c1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	pthread_t a, b;
	CHECK_EQ(real(&a, NULL, foreign_registered, NULL), 0);
	CHECK_EQ(real(&b, NULL, foreign_unregistered, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	CHECK_EQ(cpuprof_stop(), 0);
	char *top = pprof_run("-top", path);
	CHECK(top && strstr(top, " registered_thread_work"), "%s: registered thread not sampled", engine);
	char used[64];
	CHECK(pprof_comment(path, "engine", used, sizeof used) == 0, "no engine comment");
	if (!strcmp(used, "perf") || !strcmp(used, "hw")) {
		/* The kernel hands the perf events down to every new thread,
		 * however it was made. */
		CHECK(strstr(top, "unregistered_thread_work"), "%s: a thread made by libc's own pthread_create "
		      "was not sampled", used);
	} else if (!strcmp(used, "timer")) {
		/* A timer engine cannot see a thread nobody told it about,
		 * and the profile says how much it missed. */
		CHECK(!strstr(top, "unregistered_thread_work"), "%s: unregistered thread sampled?", used);
		long long count, ns;
		long n;
		pprof_file_totals(path, &count, &ns, &n);
		double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec), own = ns / cpu;
		CHECK(pprof_comment(path, "coverage", val, sizeof val) == 0, "no coverage comment");
		fprintf(stderr, "%s: with a thread it never saw, coverage=%s; by the program's clock %.3f\n", used, val,
			own);
		CHECK(own > 0.3 && own < 0.7, "%s: the profile holds %.3f of the CPU with half of it unseen", used, own);
		CHECK(fabs(atof(val) - own) < 0.03, "%s: coverage=%s where the program's clock says %.3f", used, val, own);
		CHECK(pprof_comment(path, "warning", val, sizeof val) == 0 && strstr(val, "covers only"),
		      "%s: no warning that the profile covers half the CPU", used);
	}
	free(top);
	dlclose(libc);
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
	registration(engine);
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
