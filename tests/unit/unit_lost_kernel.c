/*
 * unit_lost_kernel.c -- samples the kernel loses (a perf ring full, its
 * reader kept from draining it) are counted once: in [lost], and not again
 * in the threads' CPU after their last sample.  Without PERF_SAMPLE_READ
 * (kernels before 6.12; forced here) a lost sample never reaches its
 * thread's samples, so its CPU is in the thread's clock less its samples
 * as well: counted twice, the profile's coverage was 1 + the lost share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(lost_burn)

#include "base/testhooks.h" /* the test build's knobs */

int main(void)
{
	require_pprof();
	const char *why = engine_unavailable("perf");
	if (why)
		SKIP("%s", why);
	char dir[] = "/tmp/cpuprof-test-XXXXXX", path[600], val[64];
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof path, "%s/lost.pb.gz", dir);
	cp_test_perf_no_read = 1;
	cp_test_perf_stall = 1;
	/* 10 kHz: each CPU's ring holds about 250 samples of the 7,000 taken
	 * while the keeper stalls; the kernel says what it lost once the
	 * keeper drains again. */
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .engine = "perf", .hz = 10000 }), 0);
	lost_burn(700);
	__atomic_store_n(&cp_test_perf_stall, 0, __ATOMIC_SEQ_CST);
	lost_burn(300);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(pprof_comment(path, "lost", val, sizeof val) == 0, "no lost comment");
	long lost = atol(val);
	CHECK(pprof_comment(path, "samples", val, sizeof val) == 0, "no samples comment");
	long samples = atol(val);
	CHECK(pprof_comment(path, "coverage", val, sizeof val) == 0, "no coverage comment");
	double coverage = atof(val);
	printf("%ld samples, %ld lost by the kernel, coverage %.3f\n", samples, lost, coverage);
	/* Most are lost as a rule; a loaded machine's run loses fewer (40%
	 * seen).  A fifth is enough: counted twice, its CPU would put the
	 * coverage at 1.2 or more, far outside the band below. */
	CHECK(lost * 5 > samples + lost, "the rings did not overflow: %ld lost, %ld samples kept", lost, samples);
	CHECK(coverage > 0.95 && coverage < 1.05, "coverage %.3f with %ld samples lost, %ld kept", coverage, lost,
	      samples);
	unlink(path);
	rmdir(dir);
	return 0;
}
