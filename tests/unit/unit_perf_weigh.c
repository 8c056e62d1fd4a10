/*
 * unit_perf_weigh.c -- what one perf sample weighs and what the kernel's
 * clocks say no sample saw (src/perf/events.h), on numbers made by hand,
 * so that it holds whatever the machine: with PERF_SAMPLE_READ a sample
 * weighs its thread's count since its previous sample on that CPU; without
 * kernel-mode samples the whole periods past the first are the kernel's
 * (cp_perf_counts_weigh); and the scheduler's CPU beyond the task clocks
 * is the switches' time only as far as the switches explain it, at most
 * CP_PERF_SWITCH_UNSEEN_MAX_NS each (cp_perf_unseen).  t_kernel_time.sh
 * sees the same on real programs, where the machine lets it: on an idle
 * virtual CPU a switch-in costs ~20 us no task clock counts, on a busy one
 * nothing, so the end-to-end test alone cannot hold the second rule.
 */
#include "../check.h"
#include "perf/events.h"

#define US 1000ull
#define MS 1000000ull

int main(void)
{
	/* The switches' time: all of a gap they explain, none of a gap
	 * beyond 50 us each, nothing without a gap or without switches. */
	CHECK_EQ(cp_perf_unseen(3 * (int64_t)MS, 1000), 3 * MS);
	CHECK_EQ(cp_perf_unseen(200 * (int64_t)MS, 1000), 1000 * CP_PERF_SWITCH_UNSEEN_MAX_NS);
	CHECK_EQ(cp_perf_unseen(0, 1000), 0);
	CHECK_EQ(cp_perf_unseen(-5 * (int64_t)MS, 1000), 0);
	CHECK_EQ(cp_perf_unseen(3 * (int64_t)MS, 0), 0);

	/* Counts of one thread on two CPUs, each its own running total. */
	struct cp_perf_counts c = { 0 };
	uint64_t period = 1 * MS, kernel = 0;
	CHECK_EQ(cp_perf_counts_weigh(&c, 42, 0, period + 10 * US, 1, period, NULL), period + 10 * US);
	CHECK_EQ(cp_perf_counts_weigh(&c, 42, 1, period, 1, period, NULL), period);
	CHECK_EQ(cp_perf_counts_weigh(&c, 42, 0, 2 * period + 20 * US, 1, period, NULL), period + 10 * US);
	/* User-mode samples only: three periods ended in the kernel between
	 * two samples; they are the kernel's, the sample keeps one. */
	uint64_t w = cp_perf_counts_weigh(&c, 42, 0, 6 * period + 20 * US, 1, period, &kernel);
	CHECK_EQ(kernel, 3 * period);
	CHECK_EQ(w, period);
	/* A period that fired a little late is not the kernel's. */
	w = cp_perf_counts_weigh(&c, 42, 0, 7 * period + 400 * US, 1, period, &kernel);
	CHECK_EQ(kernel, 0);
	CHECK_EQ(w, period + 380 * US);
	/* Without counts each sample weighs one period, and nothing is
	 * the kernel's. */
	CHECK_EQ(cp_perf_counts_weigh(&c, 7, 0, 0, 0, period, &kernel), period);
	CHECK_EQ(kernel, 0);
	/* All of it accounted for, on both CPUs. */
	CHECK_EQ(cp_perf_counts_accounted(&c), 7 * period + 400 * US + period + period);
	/* An exiting thread's final count: what came after its last sample. */
	CHECK_EQ(cp_perf_counts_tail(&c, 42, 1, period + 300 * US), 300 * US);
	cp_perf_counts_free(&c);
	printf("ok\n");
	return 0;
}
