/*
 * screen.h -- one view of `cpuprof top`, drawn: on a terminal, over the
 * last one (cursor home, each line cleared to its end, what is below
 * cleared), as many rows as fit, each line cut to the width (never
 * wrapped); elsewhere (a pipe, a file) as a plain block of text with no
 * escape codes, the names whole, one block after another.
 */
#ifndef CPUPROF_CLI_TOP_SCREEN_H
#define CPUPROF_CLI_TOP_SCREEN_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "tally.h"

struct view {
	const char *title;          /* what runs: "work_hot 2 4000", "-p 1234" */
	pid_t root;                 /* CMD's process (0: not said) */
	double elapsed_s;           /* since the start */
	double interval_s;          /* the last interval's length */
	const char *ended;          /* how the run ended ("exit 0"), or NULL while it runs */
	int64_t cpu_ns, tcpu_ns;    /* the kernel's count of the tree's CPU, the interval's and since the
				       start (-1: not known) */
	int64_t sampled_ns, tsampled_ns; /* what the samples hold of it */
	uint64_t samples, tsamples, lost, tlost;
	double own, town;           /* top's own CPU, in CPUs (0.004: 0.4% of one) */
	const struct tally_fn *fns; /* most first */
	size_t nfns;
	const struct tally_thread *threads;
	size_t nthreads;
	int total_first;            /* sorted since the start's (the last view) */
};

/* Writes v to out, on a terminal of cols x rows, or (cols 0) as a plain
 * block of at most max_rows functions and as many threads.  0, or -1 if
 * the write failed. */
int screen_draw(FILE *out, const struct view *v, int cols, int rows, int max_rows);

#endif
