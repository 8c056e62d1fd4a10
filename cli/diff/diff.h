/*
 * diff.h -- `cpuprof diff BASE NEW...`: which functions' shares changed
 * between two profiles beyond the noise of sampling.  diff.c parses the
 * options, reads BASE and the NEW files into one stackset (report's
 * stacks.h: the same reader, frames and names as `report`; several NEW
 * files are merged) and exits 0, 1 or 2; compare.c tests every function's
 * flat and cum share (report's shares.h: the method) and every path of
 * the call tree; text.c, diff_folded.c and page.c write the formats.
 */
#ifndef CPUPROF_CLI_DIFF_H
#define CPUPROF_CLI_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"
#include "report/shares.h"
#include "report/stacks.h"

/* The statistical power at which the smallest detectable change is
 * stated. */
#define DIFF_POWER 0.8

struct diff_options {
	double threshold; /* the smallest change that counts, as a share
			     (0.01: one percentage point) */
	double alpha;     /* the family-wise false-alarm rate */
	bool tree;        /* build the call tree (folded, html) */
	bool paths;       /* and test its paths (html) */
};

/* One measure (flat or cum) of one function in both profiles. */
struct diff_measure {
	struct share_sum a, b;  /* its sums in BASE and in NEW */
	struct share_change c;  /* the test of its change */
	double padj;            /* Holm's p-value, 1 if not tested */
	bool tested;            /* in the family (shares.h: testable) */
	int verdict;            /* +1 grew, -1 shrank beyond the noise and
				   by at least the threshold; else 0 */
};

/* A function (a frame of the stackset) and its two measures. */
struct diff_row {
	uint32_t frame;
	struct diff_measure flat, cum;
};

/* A path of the call tree (a node) and BASE's sums of the samples whose
 * stack passes through it (share_sum's w and q), for the page. */
struct diff_node {
	uint32_t id;
	double w, q;
};

/* The comparison of BASE (the stackset's samples [0, nbase)) with NEW
 * (the rest). */
struct diff {
	const struct stackset *ss;
	size_t nbase;
	struct diff_options o;
	struct share_base a, b;  /* BASE's and NEW's totals (sampled) */
	double left_a, left_b;   /* the values left out (diff_compare()) */
	struct diff_row *rows;   /* every function with a value in either
				    profile: those that changed beyond the
				    noise first, by their largest change,
				    then the others by their largest change */
	size_t nrows;
	size_t ntests;           /* the functions' family: tests made */
	size_t nchanged;         /* functions with a verdict */
	/* The smallest change detected with DIFF_POWER at shares of 50%,
	 * 10% and 1%; too_few when the first is above the threshold, and
	 * the draws each profile would need for it to be the threshold. */
	double mde50, mde10, mde1, draws_needed;
	bool too_few;
	/* With o.tree, the call tree of both profiles' samples; with
	 * o.paths, its paths' tests (a family of their own, for the flame
	 * graph; else NULL). */
	struct calltree t;
	/* BASE's sums of the paths the page draws (NEW has value there)
	 * where BASE has value too, by node (ascending), and a bit per node
	 * that says which are listed: diff_node_base(). */
	struct diff_node *based;
	size_t nbased;
	uint8_t *based_bit;
	int8_t *status;          /* t.n: of the test of each path's total
				    share: 1 grew, -1 shrank beyond the noise
				    and by at least the threshold, 0 within
				    the noise, 2 not tested (as for functions:
				    compare.c) */
	/* The paths tested, by node (ascending), and their Holm's
	 * p-values: diff_node_padj(). */
	uint32_t *tested;
	double *padj;
	size_t nnode_tests;
};

/* BASE's sums (w and q) of path (node) id of d, 0 if NEW has no value
 * there or BASE none. */
void diff_node_base(const struct diff *d, uint32_t id, double *w, double *q);

/* Holm's p-value of the test of path (node) id of d, 1 if not tested. */
double diff_node_padj(const struct diff *d, uint32_t id);

/* Compares BASE's samples ss[0, nbase) with NEW's ss[nbase, end) into
 * *d (ss must outlive it); a side without draws left compares as
 * nothing (p-values 1), which the caller refuses.  What is compared is the program's sampled
 * value: samples with no draws behind them and those of cpuprof's
 * accounting ([unsampled: ...] and [profiler: ...], which its clocks
 * measured, and [lost]) are left out: their value and count are set to
 * 0 in ss and their value summed into left_a and left_b.  They change
 * from run to run with the machine more than with the program, and by
 * more than any sampling noise, and would move every function's share
 * with them.  Returns 0, or -1 if out of memory (free *d all the
 * same). */
int diff_compare(struct diff *d, struct stackset *ss, size_t nbase,
		 const struct diff_options *o);


void diff_free(struct diff *d);

/* The input of the writers: BASE's profile and name, NEW's. */
struct diff_input {
	struct report_input base, new;
};

/* The text format: what was compared and how, whether the samples can
 * see a change of the threshold's size, then one line per measure of the
 * first `top` functions (0: all; those that changed beyond the noise are
 * always shown).  Returns 0, -1 if out of memory. */
int diff_text_write(FILE *out, const struct diff_input *in,
		    const struct diff *d, long top);

/* The folded format of FlameGraph's difffolded.pl: a line "root;...;leaf
 * BASE NEW" per distinct stack, BASE's value scaled to NEW's total so
 * that their difference is the change of the stack's share. */
int diff_folded_write(FILE *out, const struct diff *d);

/* The differential flame graph: report's page (flame_page()) of NEW's
 * samples, each path coloured by its test. */
int diff_page_write(FILE *out, const struct diff_input *in,
		    const struct diff *d);

/* The line saying that the samples are too few to see a change of the
 * threshold's size, without a newline; "" if they are not. */
void diff_too_few(char *buf, size_t len, const struct diff *d);

#endif
