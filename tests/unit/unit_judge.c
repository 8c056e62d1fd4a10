/*
 * unit_judge.c -- the judge (judge.c) on facts made by hand: a profile
 * that is what was asked for gets no warning, and each clause the README
 * lists appears when its fact crosses its threshold and not a step before
 * it: coverage below 0.9 (with its two causes), more than 1% of samples
 * lost, fewer than an eighth of the expected samples (with the cause for
 * each kind of engine and kernel), over a quarter of the CPU in the kernel
 * with an engine that counts user mode only, runs shorter than the tick
 * of a tick-bound kernel with a tick-driven engine, more than 10% of the
 * CPU in [unsampled: ...], a rate capped below the one asked for, threads
 * that blocked the signal.  Below 32 periods (or 10 ms units) of CPU only
 * the clauses that do not rest on counts are said.  The comments carry
 * the numbers the facts give (coverage=, attributed=, expected_samples=,
 * profile_cpu_ns=), and the frames that are not code carry their CPU.
 */
#include <string.h>

#include "../check.h"
#include "profile/judge.h"

#define MS 1000000ll

/* A profile of 1 s of CPU at 1 kHz that is all it should be. */
static struct cp_facts good(void)
{
	struct cp_facts f;
	memset(&f, 0, sizeof f);
	strcpy(f.engine, "perf");
	f.hz = f.hz_asked = 1000;
	f.period_ns = 1 * MS;
	f.timer_res_ns = 1;
	f.cpu_ns = 1000 * MS;
	f.user_ns = 990 * MS;
	f.waits = 10; /* 100 ms between waits */
	f.samples = 990;
	f.sampled_ns = 990 * MS;
	f.unsampled_ns = 9 * MS;
	f.profiler_ns = 1 * MS;
	f.armed = 2;
	return f;
}

static struct cp_warning warning;
static const char *why = warning.text;

static const char *judge(const struct cp_facts *f)
{
	cp_judge(f, &warning);
	return why;
}

/* The warning for f holds `clause` (a fragment of it). */
#define WARNS(f, clause)                                                                   \
	do {                                                                               \
		const char *w_ = judge(&(f));                                              \
		CHECK(strstr(w_, (clause)), "expected \"%s\" in the warning: \"%s\"", (clause), w_); \
	} while (0)
#define SILENT(f, clause)                                                                  \
	do {                                                                               \
		const char *w_ = judge(&(f));                                              \
		CHECK(!strstr(w_, (clause)), "\"%s\" in the warning: \"%s\"", (clause), w_);      \
	} while (0)

static const char *comment(const struct cp_facts *f, const char *key)
{
	static struct cp_comments c;
	static char val[256];
	c.n = c.used = 0;
	cp_facts_comments(&c, f, judge(f));
	size_t kl = strlen(key);
	for (size_t i = 0; i < c.n; i++)
		if (!strncmp(c.list[i], key, kl) && c.list[i][kl] == '=') {
			snprintf(val, sizeof val, "%s", c.list[i] + kl + 1);
			return val;
		}
	return NULL;
}

int main(void)
{
	struct cp_facts f = good();
	CHECK(!strcmp(judge(&f), ""), "a good profile warns: %s", why);

	/* Coverage below 0.9, and at it. */
	f = good();
	f.sampled_ns = 890 * MS; /* 0.900 with the rest */
	CHECK(!strcmp(judge(&f), ""), "coverage 0.900 warns: %s", why);
	f.sampled_ns = 880 * MS;
	WARNS(f, "covers only 89.0% of the process's CPU time: the rest was used by threads the profiler did not see");
	f.unarmed = 3;
	f.first_error = -EMFILE;
	WARNS(f, "covers only 89.0% of the process's CPU time: 3 threads could not be armed (Too many open files)");

	/* Lost: more than 1% of the samples taken. */
	f = good();
	f.samples = 990;
	f.lost = 10; /* 10 of 1000: 1% */
	SILENT(f, "were lost");
	f.lost = 11;
	WARNS(f, "11 of 1001 samples were lost (a ring was full");

	/* Few samples: fewer than an eighth of what the rate asks for. */
	f = good();
	f.samples = 125; /* 1000 expected: exactly an eighth */
	SILENT(f, "samples where");
	f.samples = 124;
	WARNS(f, "124 samples where 1000 Hz asks for 1000 (threads ran for less than a period, or the kernel sent "
		 "fewer signals than asked for)");
	f.tick_driven = 1;
	WARNS(f, "124 samples where 1000 Hz asks for 1000 (CPU-time timers fire only at the kernel's tick)");
	f.timer_res_ns = 4 * MS;
	WARNS(f, "(this kernel's timers fire only at its tick, every 4000 us, and only for a thread running then)");
	f = good();
	f.samples = 124;
	f.user_only = 1;
	WARNS(f, "(the cycle counter overflowed less often than its calibration promised");
	f.samples = 100;
	f.lost = 24;
	WARNS(f, "124 samples where"); /* lost ones are samples taken */

	/* hw (user mode only): over a quarter of the CPU in the kernel. */
	f = good();
	f.user_only = 1;
	strcpy(f.engine, "hw");
	f.user_ns = 750 * MS;
	SILENT(f, "spent in the kernel");
	f.user_ns = 740 * MS;
	WARNS(f, "about 26% of the CPU time was spent in the kernel (its own estimate), where the hw engine counts no "
		 "cycles");
	f.user_only = 0;
	SILENT(f, "spent in the kernel");

	/* No sample at all (-F 1 on a short run): said, however short. */
	f = good();
	f.hz = f.hz_asked = 1;
	f.period_ns = 1000 * MS;
	f.cpu_ns = 500 * MS;
	f.samples = 0;
	f.sampled_ns = 0;
	f.unsampled_ns = 500 * MS;
	WARNS(f, "no sample in 500 ms of CPU: at 1 Hz a thread is sampled once every 1000 ms of its CPU");
	f.cpu_ns = 9 * MS;
	f.unsampled_ns = 9 * MS;
	SILENT(f, "no sample in");

	/* perf with user-mode samples only: the periods that ended in the
	 * kernel, over a twentieth of the CPU, are named where they are. */
	f = good();
	f.user_only = 1;
	f.kernel_ns = 49 * MS;
	SILENT(f, "spent in the kernel");
	f.kernel_ns = 51 * MS;
	WARNS(f, "5.1% of the CPU time was spent in the kernel (system calls, page faults), where no sample is taken "
		 "without root, CAP_PERFMON or perf_event_paranoid <= 1: it is in [kernel: unsampled, user-mode samples "
		 "only]");
	f.user_only = 0;
	SILENT(f, "spent in the kernel");

	/* Runs shorter than the tick of a tick-bound kernel. */
	f = good();
	f.timer_res_ns = 4 * MS;
	f.tick_driven = 1;
	f.waits = 250; /* 4 ms between waits: a tick */
	SILENT(f, "less than this kernel's tick");
	f.waits = 251;
	WARNS(f, "the threads ran 3984 us at a time between waits, less than this kernel's tick (4000 us)");
	f.user_only = 1; /* hw's samples do not come at ticks */
	SILENT(f, "less than this kernel's tick");
	f = good();
	f.waits = 100000; /* fine timers: no such clause */
	SILENT(f, "less than this kernel's tick");

	/* More than 10% of the CPU in [unsampled: ...]. */
	f = good();
	f.sampled_ns = 900 * MS;
	f.unsampled_ns = 99 * MS;
	SILENT(f, "[unsampled: ...]");
	f.sampled_ns = 898 * MS;
	f.unsampled_ns = 101 * MS;
	WARNS(f, "10.1% of the CPU time is in no function but in [unsampled: ...]");

	/* What does not rest on counts is said however short the run. */
	f = good();
	f.cpu_ns = 310 * MS; /* under 32 periods of 10 ms */
	f.sampled_ns = 10 * MS;
	f.samples = 1;
	f.lost = 5;
	CHECK(!strcmp(judge(&f), ""), "a run of 310 ms is judged on its counts: %s", why);
	f.hz_asked = 20000;
	WARNS(f, "sampled at 1000 Hz, not the 20000 Hz asked for");
	f.blocked = 2;
	f.signo = 34;
	strcpy(f.engine, "timer");
	WARNS(f, "2 threads had signal 34 blocked when the profile started: the timer engine samples them only once");
	f.cpu_ns = 320 * MS;
	WARNS(f, "covers only");

	/* Every clause at once, the longest they can be: the warning has room
	 * for all of them, up to the last word of the last. */
	f = good();
	f.hz_asked = 100000;
	f.hz = 10000;
	memset(f.stopped_why, 'x', sizeof f.stopped_why - 1);
	f.stopped_why[sizeof f.stopped_why - 1] = '\0';
	f.blocked = 1000000;
	f.signo = 64;
	strcpy(f.engine, "itimer");
	f.timer_res_ns = 10000 * MS;
	f.sampled_ns = 1 * MS;
	f.unsampled_ns = 500 * MS;
	f.samples = 1;
	f.lost = 1000000;
	f.unarmed = 1000000;
	f.first_error = -EOPNOTSUPP;
	f.waits = 1000000;
	const char *all = judge(&f);
	size_t len = strlen(all);
	printf("# every clause at once: %zu bytes of the %zu there is room for\n", len, sizeof warning.text);
	CHECK(len + 1 < sizeof warning.text, "the warning filled its %zu bytes: it may have been cut", sizeof warning.text);
	CHECK(len > 1024, "every clause at once is only %zu bytes: the check above proves little", len);
	WARNS(f, "threads used it after their last sample");
	strcpy(f.engine, "hw");
	f.user_only = 1;
	f.user_ns = 1 * MS;
	f.timer_res_ns = 1;
	WARNS(f, "that time is charged to the user code each thread ran next");

	/* The comments: the numbers the facts give. */
	f = good();
	f.sampled_ns = 500 * MS;
	f.lost_ns = 7 * MS;
	CHECK(!strcmp(comment(&f, "coverage"), "0.517"), "coverage=%s for 517 ms of 1000", comment(&f, "coverage"));
	CHECK(!strcmp(comment(&f, "attributed"), "0.500"), "attributed=%s", comment(&f, "attributed"));
	CHECK(!strcmp(comment(&f, "profile_cpu_ns"), "517000000"), "profile_cpu_ns=%s", comment(&f, "profile_cpu_ns"));
	CHECK(!strcmp(comment(&f, "process_cpu_ns"), "1000000000"), "process_cpu_ns=%s", comment(&f, "process_cpu_ns"));
	CHECK(!strcmp(comment(&f, "expected_samples"), "1000"), "expected_samples=%s", comment(&f, "expected_samples"));
	CHECK(!strcmp(comment(&f, "mean_run_ns"), "100000000"), "mean_run_ns=%s", comment(&f, "mean_run_ns"));
	CHECK(comment(&f, "warning") && strstr(comment(&f, "warning"), "covers only 51.7%"), "warning=%s",
	      comment(&f, "warning") ? comment(&f, "warning") : "(none)");
	f = good();
	CHECK(comment(&f, "warning") == NULL, "a good profile has a warning comment");

	/* The frames that are not code, with their CPU. */
	f = good();
	f.lost = 3;
	f.lost_ns = 3 * MS;
	f.before_ns = 2 * MS;
	f.kernel_ns = 5 * MS;
	f.wakeup_ns = 4 * MS;
	struct cp_pseudo_sample p[CP_FACTS_PSEUDO];
	size_t n = cp_facts_pseudo(&f, p);
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(p[i].name, "[lost]")) {
			seen |= 1;
			CHECK(p[i].count == 3 && p[i].ns == 3 * MS, "[lost]: %llu, %llu ns", (unsigned long long)p[i].count,
			      (unsigned long long)p[i].ns);
		} else if (!strcmp(p[i].name, "[unsampled: after each thread's last sample]")) {
			seen |= 2;
			CHECK_EQ(p[i].ns, 9 * MS);
		} else if (!strncmp(p[i].name, "[profiler: ", 11)) {
			seen |= 4;
			CHECK_EQ(p[i].ns, 1 * MS);
		} else if (!strcmp(p[i].name, "[unsampled: before the profile started]")) {
			seen |= 8;
			CHECK_EQ(p[i].ns, 2 * MS);
		} else if (!strcmp(p[i].name, "[kernel: unsampled, user-mode samples only]")) {
			seen |= 16;
			CHECK_EQ(p[i].ns, 5 * MS);
		} else if (!strcmp(p[i].name, "[kernel: switching threads in, not counted by perf's clock]")) {
			seen |= 32;
			CHECK_EQ(p[i].ns, 4 * MS);
		}
	}
	CHECK(seen == 63, "frames that are not code: %#x of 0x3f", seen);
	CHECK_EQ(cp_facts_profile_ns(&f), (990 + 3 + 9 + 1 + 2 + 5 + 4) * MS);
	printf("# every clause of the warning at its threshold, the comments and the frames that are not code\n");
	return 0;
}
