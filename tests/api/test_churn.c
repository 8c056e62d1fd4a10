/*
 * test_churn.c -- 100,000 short-lived threads during a profile leave no
 * timer or file descriptor behind, with the perf and the timer engine;
 * and after the profile every fd and timer is gone.  Under emulation
 * (tests/run.sh sets EMU) qemu-user spends 2 to 6 ms on each thread it
 * creates (more the more threads it has made), so the test churns 5,000
 * threads there (10 to 30 s) and says so: a leak of one fd or timer per
 * thread shows as well with those.
 *
 * TEST_ENGINES: perf timer
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

#define THREADS 100000
#define THREADS_EMULATED 5000
#define BATCH 16

static int threads = THREADS;

static void *tiny(void *arg)
{
	static _Thread_local volatile int sink;
	for (int i = 0; i < 1000; i++)
		sink += i;
	return NULL;
}

static void *exits_early(void *arg)
{
	pthread_exit(NULL);
}

static char dir[] = "/tmp/cpuprof-test-XXXXXX";

static void churn(const char *engine)
{
	char path[512];
	snprintf(path, sizeof path, "%s/churn-%s.pb.gz", dir, engine);
	int fds0 = count_fds(), timers0 = count_timers();
	struct cpuprof_options o = { .engine = engine };
	START_ENGINE(path, &o);
	int fds_run = count_fds(), timers_run = count_timers();

	pthread_t th[BATCH];
	for (int done = 0; done < threads; done += BATCH) {
		for (int i = 0; i < BATCH; i++)
			CHECK_EQ(pthread_create(&th[i], NULL, i % 4 ? tiny : exits_early, NULL), 0);
		for (int i = 0; i < BATCH; i++)
			pthread_join(th[i], NULL);
		if (done % (threads / 5) < BATCH) {
			/* Live threads: only main (and our own drain thread). */
			CHECK(count_fds() <= fds_run, "%s: %d fds after %d threads, %d at start", engine,
			      count_fds(), done, fds_run);
			CHECK(count_timers() <= timers_run, "%s: %d timers after %d threads, %d at start", engine,
			      count_timers(), done, timers_run);
		}
	}
	CHECK(count_fds() <= fds_run, "%s: %d fds at the end, %d at start", engine, count_fds(), fds_run);
	CHECK(count_timers() <= timers_run, "%s: %d timers at the end", engine, count_timers());
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(count_fds() == fds0, "%s: %d fds after stop, %d before start", engine, count_fds(), fds0);
	CHECK(count_timers() == timers0, "%s: %d timers after stop, %d before", engine, count_timers(), timers0);
	fprintf(stderr, "%s: %d threads; fds %d -> %d -> %d, timers %d -> %d -> %d\n", engine, threads, fds0,
		fds_run, count_fds(), timers0, timers_run, count_timers());
}

int main(void)
{
	const char *emu = getenv("EMU");
	if (emu && *emu) {
		threads = THREADS_EMULATED;
		fprintf(stderr, "under %s: %d threads instead of %d (thread creation is slow there)\n", emu,
			threads, THREADS);
	}
	CHECK(mkdtemp(dir), "mkdtemp");
	static const char *const engines[] = { "perf", "timer", NULL };
	for_each_engine(engines, churn);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
