/*
 * test_errors.c -- errors carry their reason: a refused call returns a
 * negative errno, and cpuprof_last_error() says why, in the calling
 * thread, in the words cpuprof knew (a bad option's name, value and range;
 * each engine's refusal), not only the code's text.  The reason is the
 * thread's own, survives a call that succeeds and is replaced by the next
 * failure, generic text included.  LD_PRELOAD mode's one warning line
 * carries it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

static char dir[] = "/tmp/cpuprof-test-XXXXXX";
static char path[600];

#define CHECK_REASON(want)                                                                       \
	CHECK(!strcmp(cpuprof_last_error(), (want)), "reason \"%s\", not \"%s\"", cpuprof_last_error(), \
	      (want))

#define CHECK_REASON_PREFIX(want)                                                                       \
	CHECK(!strncmp(cpuprof_last_error(), (want), strlen(want)), "reason \"%s\" does not begin \"%s\"", \
	      cpuprof_last_error(), (want))

static void bad_options(void)
{
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .hz = 100001 }), -EINVAL);
	CHECK_REASON("invalid option hz=100001: the sampling rate, in samples per second of CPU time must be an "
		     "integer from 1 to 100000");
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .hz = -1 }), -EINVAL);
	CHECK_REASON_PREFIX("invalid option hz=-1: ");
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .max_depth = -3 }), -EINVAL);
	CHECK_REASON("invalid option max_depth=-3: the most frames kept per sample must be an integer from 1 to 1024");
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .engine = "bogus" }), -EINVAL);
	CHECK_REASON("invalid option engine: 'bogus' is not the sampling engine: use one of auto, perf, hw, timer, itimer");
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .signal = SIGKILL }), -EINVAL);
	CHECK_REASON_PREFIX("invalid option signal=9: signal 9 cannot sample: ");
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .unwind = "lbr" }), -EINVAL);
	CHECK_REASON_PREFIX("invalid option unwind: 'lbr' is not how stacks are walked: ");
	CHECK_EQ(cpuprof_start(NULL, NULL), -EINVAL);
	CHECK_REASON_PREFIX("invalid option: cpuprof_start needs the path");
	CHECK(access(path, F_OK) != 0, "a refused start wrote a file");
	/* cpuprof_check_setting, the drop-in's check, is a public call too:
	 * its reason in why[] and in the thread's last reason alike. */
	char why[200];
	CHECK_EQ(cpuprof_check_setting("hz", "0", why, sizeof why), -EINVAL);
	CHECK_REASON(why);
	CHECK_REASON_PREFIX("the sampling rate");
	CHECK_EQ(cpuprof_check_setting("colour", "red", NULL, 0), -ENOENT);
	CHECK_REASON("'colour' is not a setting of cpuprof's");
}

/* An engine that cannot sample as asked says why, in its own words. */
static void refused_engine(void)
{
	/* itimer can send SIGPROF only: deterministic on every machine. */
	int sig = SIGRTMIN + 1;
	char want[200];
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .engine = "itimer", .signal = sig }), -ENODEV);
	snprintf(want, sizeof want,
		 "no sampling engine works here: itimer: setitimer(ITIMER_PROF) can only send SIGPROF, not signal %d", sig);
	CHECK_REASON(want);

	/* hw where no PMU counts cycles: the reason is the engine's own. */
	const char *no_hw = engine_unavailable("hw");
	int rc = cpuprof_start(path, &(struct cpuprof_options){ .engine = "hw" });
	if (rc == 0) {
		CHECK(!no_hw, "hw started where %s", no_hw);
		CHECK_REASON(want); /* a success leaves the last reason */
		CHECK_EQ(cpuprof_stop(), 0);
	} else {
		CHECK_EQ(rc, -ENODEV);
		CHECK_REASON_PREFIX("no sampling engine works here: hw: ");
		CHECK(strlen(cpuprof_last_error()) > strlen("no sampling engine works here: hw: "), "hw gave no reason");
		printf("# hw refused: %s\n", cpuprof_last_error());
	}
}

static void *other_thread(void *arg)
{
	/* Its own reason: none yet, whatever the main thread's. */
	*(int *)arg = cpuprof_last_error() != NULL && cpuprof_last_error()[0] == '\0';
	return NULL;
}

/* The reason is the thread's: another thread's failure is not its. */
static void per_thread(void)
{
	int empty = 0;
	pthread_t t;
	CHECK(cpuprof_last_error()[0] != '\0', "no reason after failures");
	CHECK_EQ(pthread_create(&t, NULL, other_thread, &empty), 0);
	pthread_join(t, NULL);
	CHECK(empty, "a new thread sees another thread's reason");
}

/* Failures without a reason of their own replace the last with the code's
 * text; busy, stream and write failures say theirs. */
static void replaced_and_specific(void)
{
	CHECK_EQ(cpuprof_stop(), -ESRCH);
	CHECK_REASON(cpuprof_strerror(-ESRCH));

	CHECK_EQ(cpuprof_start(path, NULL), 0);
	CHECK_EQ(cpuprof_start(path, NULL), -EBUSY);
	CHECK_REASON("a profile is already running");
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK_REASON("a profile is already running"); /* left by the success */

	CHECK_EQ(cpuprof_start_stream(NULL, NULL), 0);
	uint64_t w[8];
	size_t n;
	CHECK_EQ(cpuprof_read_stream(w, 8, &n, CPUPROF_NONBLOCK), -EINVAL);
	CHECK_REASON("invalid option: cap is 8 words, and a record of max_depth 128 frames takes 132");
	CHECK_EQ(cpuprof_flush(), -EINVAL);
	CHECK_REASON_PREFIX("a record stream's profile is written at the end of the stream");
	CHECK_EQ(cpuprof_start(path, NULL), -EBUSY);
	CHECK_REASON("a profile is already running");
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK_EQ(cpuprof_start(path, NULL), -EBUSY);
	CHECK_REASON("the last profile's record stream is not read to its end");
	uint64_t big[256];
	int rc;
	while ((rc = cpuprof_read_stream(big, 256, &n, 0)) == 0)
		;
	CHECK_EQ(rc, CPUPROF_EOF);

	char bad[700];
	snprintf(bad, sizeof bad, "%s/no-such-dir/out.pb.gz", dir);
	CHECK_EQ(cpuprof_start(bad, NULL), 0);
	rc = cpuprof_stop();
	CHECK(rc < 0, "writing into a missing directory returned %d", rc);
	char want[800];
	snprintf(want, sizeof want, "cannot write %s: ", bad);
	CHECK_REASON_PREFIX(want);
}

/* A preloaded program whose engine cannot sample says why on its one
 * line. */
static void preload_line(void)
{
	const char *b = getenv("B") ? getenv("B") : "build", *emu = getenv("EMU");
	if (emu && *emu)
		return; /* /bin/true is the host's */
	char cmd[1400], line[600] = "", want[300];
	int sig = SIGRTMIN + 2;
	snprintf(cmd, sizeof cmd,
		 "CPUPROF='%s' CPUPROF_ENGINE=itimer CPUPROF_SIGNAL=%d LD_PRELOAD='%s/libcpuprof.so' /bin/true 2>&1", path,
		 sig, b);
	FILE *f = popen(cmd, "r");
	CHECK(f != NULL, "popen");
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	int st = pclose(f);
	CHECK_EQ(st, 0);
	snprintf(want, sizeof want,
		 "cpuprof: cannot start profiling: no sampling engine works here: itimer: setitimer(ITIMER_PROF) can only "
		 "send SIGPROF, not signal %d; profiling disabled\n", sig);
	CHECK(!strcmp(line, want), "preloaded, it said \"%s\"", line);
}

int main(void)
{
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof path, "%s/errors.pb.gz", dir);
	CHECK(cpuprof_last_error() != NULL && cpuprof_last_error()[0] == '\0', "a reason before any failure: %s",
	      cpuprof_last_error());
	bad_options();
	refused_engine();
	per_thread();
	replaced_and_specific();
	preload_line();
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
