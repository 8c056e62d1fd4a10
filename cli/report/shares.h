/*
 * shares.h -- what sampling says about a share.  A frame's share of a
 * profile is the value (CPU time) of the samples whose leaf it is (flat)
 * or whose stack holds it (cum) over the value of all samples; a profile
 * is a sample of the program's CPU, so each share carries noise, and this
 * file says how much: the interval `report --intervals` and the flame
 * graph's tooltips show, and the test `cpuprof diff` makes of a change
 * between two profiles (docs/diff.md states the method for users).
 *
 * The model: each time the profiler sampled is one draw, of a weight (the
 * CPU time the sample stands for) and of whether the frame is on its
 * stack.  A pprof Sample of count k and value w stands for k draws of
 * w/k each (a profiler that merges identical stacks writes one Sample for
 * many); one of count 0 holds time no draw stands behind (cpuprof's
 * [unsampled: ...] and [profiler: ...] frames, which its clocks measured)
 * and is exact: it counts in the total but adds no noise.  A profile
 * without a samples/count type has a draw per Sample.
 *
 * - A profile's effective number of draws is neff = (sum of w)^2 / (sum
 *   of w^2), both over the draws (Kish): n when every draw weighs the
 *   same, fewer when weights vary.
 * - A share R's variance is the larger of the binomial R(1-R)/neff and
 *   the ratio estimator's (delta method) from the draws themselves,
 *   n/(n-1) * sum of w^2 (x - R)^2 / (sum of w)^2 (x is 1 for a draw whose
 *   stack has the frame), which is larger where the frame's draws weigh
 *   more than the others.  The frame's effective draws n* are R(1-R) over
 *   that variance, and its interval is Wilson's score interval on n*.
 * - A change between profiles A and B is tested with a two-sample z test:
 *   z = (Rb - Ra) / sqrt(V), V the larger of the variance if nothing
 *   changed and the sum of the two delta-method variances.  The first is
 *   the delta method's with its sums expected rather than observed: the
 *   shares pooled (R0, weighted by neff), the frame's draws the same
 *   fraction of each profile's draws (pooled), and its draws' squared
 *   weights the same multiple of each profile's mean squared weight
 *   (pooled); for equal weights it is the pooled binomial variance
 *   R0(1-R0)(1/nA + 1/nB) of the two-proportion z test.  Variances
 *   expected under no change keep a frame with few draws in one profile
 *   (whose observed variance is small by chance) from false alarms, also
 *   when the profiles differ in length or rate.
 * - Many frames are tested at once: Holm's step-down correction keeps the
 *   chance of any false alarm at alpha.  A frame is tested only where its
 *   pooled share could hold a change of the threshold's size (pooled
 *   share >= min(wA, wB) * threshold, w the profiles' weights in the
 *   pooling): when nothing changed the pooled share is uncorrelated with
 *   the difference, so this choice costs no false alarms (independent
 *   filtering) and spares the correction frames that could never count.
 */
#ifndef CPUPROF_CLI_SHARES_H
#define CPUPROF_CLI_SHARES_H

#include <stddef.h>

#include "stacks.h"

/* The normal quantile of the two-sided 95% intervals shown. */
#define SHARE_Z95 1.959963984540054

/* Sums over some samples: their value (negative values count as 0), the
 * sum of w^2 over the draws among them (w*w/k for a Sample of value w
 * and count k > 0), and their draws. */
struct share_sum {
	double w, q, n;
};

/* A profile's totals (some range of a stackset's samples). */
struct share_base {
	double w;    /* value of all samples, the exact ones too */
	double ws;   /* value of the draws alone */
	double q;    /* sum of w^2 over the draws */
	double n;    /* draws: the counts summed */
	double neff; /* ws^2 / q (at most n); 0 without draws */
};

/* The totals of samples [first, end) of ss into *b. */
void share_base_of(struct share_base *b, const struct stackset *ss,
		   size_t first, size_t end);

/* Each frame's flat and cum sums over samples [first, end) of ss into
 * flat[] and cum[] (ss->nframes each, zeroed here); a frame counts once
 * towards cum per sample however often it is on the stack.  Returns 0,
 * or -1 if out of memory. */
int share_frames(const struct stackset *ss, size_t first, size_t end,
		 struct share_sum *flat, struct share_sum *cum);

/* Walks the nodes of t (ss's call tree) bottom-up, each after its
 * children, with an explicit stack (a tree may be very deep): visit gets
 * each node (the root too, last) with its total sums (of the samples
 * whose stack passes through it) over BASE's samples [0, nbase) in s[0]
 * and NEW's [nbase, end) in s[1], both in one walk.  Returns 0, or -1 if
 * out of memory. */
int share_walk(const struct calltree *t, const struct stackset *ss, size_t nbase,
	       void (*visit)(uint32_t id, const struct share_sum s[2], void *arg), void *arg);

/* Each node's own samples' (those whose stack ends there) sum of w^2
 * over the draws, over samples [first, end), into q[] by leaf
 * (t->nleaves, zeroed here: calltree_leaf_index()): what the flame
 * graph's page needs for its intervals. */
void share_nodes_self_q(const struct calltree *t, const struct stackset *ss,
			size_t first, size_t end, double *q);

/* The share s->w / b->w (0 if the total is 0). */
double share_of(const struct share_sum *s, const struct share_base *b);

/* The share's variance as the header says: the larger of the binomial
 * one on the profile's neff and the delta method's; INFINITY without
 * draws. */
double share_var(const struct share_sum *s, const struct share_base *b);

/* Wilson's interval around the share at normal quantile z (SHARE_Z95)
 * on the share's effective draws, into [*lo, *hi] (within 0 and 1; 0 to
 * 1 without draws). */
void share_interval(const struct share_sum *s, const struct share_base *b,
		    double z, double *lo, double *hi);

/* A frame's change from profile A to profile B. */
struct share_change {
	double a, b;   /* its shares */
	double pooled; /* pooled by the profiles' neff */
	double z;      /* (b - a) / sqrt(V); 0 when V is 0 and b == a */
	double p;      /* two-sided p-value of z, before any correction */
};

/* The shares of sums sa (in A) and sb (in B) pooled by the profiles'
 * neff, as share_test() sets it (0 where it tests nothing): enough for
 * share_testable(), without the test's cost. */
double share_pooled(const struct share_sum *sa, const struct share_base *ba, const struct share_sum *sb,
		    const struct share_base *bb);

/* Tests the change of sums sa (in A) to sb (in B), as the header says. */
void share_test(const struct share_sum *sa, const struct share_base *ba,
		const struct share_sum *sb, const struct share_base *bb,
		struct share_change *c);

/* Whether a change is one of those tested at threshold `thr` (a share,
 * 0.01 for one percentage point): its pooled share is positive and at
 * least min(wA, wB) * thr. */
int share_testable(const struct share_change *c, const struct share_base *ba,
		   const struct share_base *bb, double thr);

/* Holm's adjusted p-values of p[0..m) into padj[0..m): a hypothesis is
 * rejected at family-wise level alpha exactly when padj <= alpha.
 * Returns 0, or -1 if out of memory. */
int share_holm(const double *p, size_t m, double *padj);

/* The z with P(Z > z) = p for a standard normal Z (0 < p < 1). */
double normal_upper_quantile(double p);

/* The smallest change of a frame at share `share` that m tests at
 * family-wise level alpha detect with probability `power`, given the
 * profiles' neff (binomial; Bonferroni's alpha/m, Holm's first step).
 * INFINITY without draws. */
double share_mde(const struct share_base *ba, const struct share_base *bb,
		 double share, double alpha, size_t m, double power);

/* The draws each of two profiles of the same size would need for
 * share_mde() at share 0.5 to be `thr`. */
double share_draws_needed(double thr, double alpha, size_t m, double power);

#endif
