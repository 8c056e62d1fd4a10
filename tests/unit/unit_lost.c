/*
 * unit_lost.c -- samples that find the ring full are counted as lost, never
 * blocked on, and the count reaches the profile: the "[lost]" frame and
 * the lost= comment of the pprof file, and the {4, 0, 0, lost} record of
 * the stream.  Deterministic: a 4-cell ring, no drain thread, and timer
 * engine signals raised by the test itself (rt_tgsigqueueinfo may forge
 * any si_code within one's own process) while the real timer, at 1 Hz of
 * CPU time, stays silent.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(lost_work)
#include "sig/sigstate.h"

#include "base/testhooks.h" /* the test build's knobs */

#define RAISED 100
#define CELLS 4

/* Sends the calling thread a signal that looks exactly like one from the
 * timer engine. */
static void raise_timer_signal(void)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = cp_sig.signo;
	si.si_code = SI_TIMER;
	si.si_value.sival_ptr = &cp_sig;
	CHECK(syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), cp_sig.signo, &si) == 0, "rt_tgsigqueueinfo");
}

int main(void)
{
	require_pprof();
	char dir[] = "/tmp/cpuprof-test-XXXXXX", path[600], val[64];
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof path, "%s/lost.pb.gz", dir);
	cp_test_ring_cells = CELLS;
	cp_test_no_drain = 1;
	struct cpuprof_options o = { .engine = "timer", .hz = 1 };

	/* The pprof file. */
	CHECK_EQ(cpuprof_start(path, &o), 0);
	for (int i = 0; i < RAISED; i++)
		raise_timer_signal(); /* each is handled before the call returns */
	CHECK_EQ(atomic_load(&cp_sig.lost), RAISED - CELLS);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(pprof_comment(path, "lost", val, sizeof val) == 0, "no lost comment");
	CHECK_EQ(atoi(val), RAISED - CELLS);
	CHECK(pprof_comment(path, "samples", val, sizeof val) == 0, "no samples comment");
	CHECK_EQ(atoi(val), CELLS);
	char *raw = pprof_run("-top -sample_index=samples -show=lost", path);
	CHECK(raw && strstr(raw, "[lost]"), "no [lost] frame");
	CHECK(strstr(raw, " 96 "), "[lost] does not count 96 samples:\n%s", raw);
	free(raw);

	/* The stream. */
	CHECK_EQ(cpuprof_start_stream(NULL, &o), 0);
	for (int i = 0; i < RAISED; i++)
		raise_timer_signal();
	CHECK_EQ(cpuprof_stop(), 0);
	static uint64_t w[4096];
	size_t n, total = 0;
	uint64_t lost = 0, samples = 0;
	int rc;
	while ((rc = cpuprof_read_stream(w + total, 4096 - total, &n, 0)) == 0)
		total += n;
	CHECK_EQ(rc, CPUPROF_EOF);
	CHECK(total >= 3 && w[0] == 3 && w[2] == 1, "no header");
	for (size_t i = 3; i < total; i += w[i]) {
		CHECK(w[i] >= 3 && i + w[i] <= total, "malformed record");
		if (w[i + 2] == 0 && w[i] == 4)
			lost += w[i + 3];
		else
			samples++;
	}
	CHECK_EQ(lost, RAISED - CELLS);
	/* The 4 stored samples weigh microseconds of CPU, under one period:
	 * the stream counts periods, so it may carry them over, not emit. */
	CHECK(samples <= CELLS, "%llu sample records from %d samples", (unsigned long long)samples, CELLS);

	/* Real samples, a ring of 4 cells and nobody draining it. */
	static const char *const engines[] = { "timer", "perf" };
	for (int e = 0; e < 2; e++) {
		const char *why = engine_unavailable(engines[e]);
		if (why) {
			fprintf(stderr, "lost samples of real sampling: without %s\n", why);
			continue;
		}
		struct cpuprof_options r = { .engine = engines[e], .hz = 1000 };
		START_ENGINE(path, &r);
		struct timespec c0, c1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		lost_work(600);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		CHECK_EQ(cpuprof_stop(), 0);
		CHECK(pprof_comment(path, "lost", val, sizeof val) == 0, "no lost comment");
		long long nlost = atoll(val);
		char warning[1024];
		CHECK(pprof_comment(path, "warning", warning, sizeof warning) == 0 && strstr(warning, "samples were lost"),
		      "%s: %lld samples lost, and no warning says so", engines[e], nlost);
		long long count, ns;
		long nsamples;
		pprof_file_totals(path, &count, &ns, &nsamples);
		double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
		long long lost_ns = pprof_cum_ns(path, "[lost]");
		fprintf(stderr, "%s: %lld samples lost of %lld; [lost] holds %.1f ms; the profile %.1f ms, the clock %.1f ms\n",
			engines[e], nlost, count, lost_ns / 1e6, ns / 1e6, cpu / 1e6);
		/* The ring kept its 4; every other sample is lost, and each
		 * stood for at least a period of its thread's CPU. */
		CHECK(pprof_comment(path, "samples", val, sizeof val) == 0 && atoi(val) == CELLS, "%s: samples=%s",
		      engines[e], val);
		CHECK(count > CELLS && nlost == count - CELLS, "%s: %lld of %lld samples lost with 4 cells and no drain",
		      engines[e], nlost, count);
		CHECK(lost_ns >= nlost * 900000, "%s: [lost] holds %lld ns for %lld samples of 1 ms periods", engines[e],
		      lost_ns, nlost);
		CHECK(ns > cpu * 0.97 && ns < cpu * 1.03, "%s: the profile holds %lld ns, the clock says %.0f", engines[e], ns,
		      cpu);
	}

	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
