/*
 * diff_folded.c -- `cpuprof diff --format folded`: the two-column folded
 * stacks of FlameGraph's difffolded.pl, which flamegraph.pl draws as a
 * differential flame graph: one line "root;...;leaf BASE NEW" per
 * distinct stack of either profile, in name order, NEW's value as
 * `report --format folded` writes it and BASE's scaled to NEW's total
 * (rounded), so that the two differ by the change of the stack's share,
 * as when difffolded.pl -n normalises them.  Names are written as
 * report's folded format writes them (';' and control characters become
 * '?').
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "report/format.h"

struct folded_ctx {
	struct folded_lines fl;
	const double *a, *b; /* per leaf: BASE's and NEW's own value */
	double scale;        /* NEW's total over BASE's */
	FILE *out;
	bool failed;
};

/* qsort_r order of nodes, for calltree_walk's context. */
static int by_label(const void *x, const void *y, void *arg)
{
	return folded_by_label(x, y, &((struct folded_ctx *)arg)->fl);
}

/* A value written as an integer. */
static int64_t whole(double v)
{
	return v >= 9.2e18 ? INT64_MAX : v <= 0 ? 0 : (int64_t)llround(v);
}

/* The line of the stack that ends at path[depth - 1], if either profile
 * has samples that end there. */
static void line(const uint32_t *path, size_t depth, void *arg)
{
	struct folded_ctx *c = arg;
	long l = calltree_leaf_index(c->fl.t, path[depth - 1]);
	if (l < 0 || (c->a[l] <= 0 && c->b[l] <= 0) || c->failed)
		return;
	int64_t a = whole(c->a[l] * c->scale), b = whole(c->b[l]);
	size_t len;
	const char *s;
	if (!(s = folded_line(&c->fl, path, depth, &len))) {
		c->failed = true;
		return;
	}
	fwrite(s, 1, len, c->out);
	fprintf(c->out, " %" PRId64 " %" PRId64 "\n", a, b);
}

int diff_folded_write(FILE *out, const struct diff *d)
{
	const struct calltree *t = &d->t;
	const struct stackset *ss = d->ss;
	double *a = calloc(t->nleaves + 1, sizeof *a), *b = calloc(t->nleaves + 1, sizeof *b);
	struct folded_ctx c = { .fl = { .ss = ss }, .a = a, .b = b,
				.scale = d->a.w > 0 ? d->b.w / d->a.w : 0, .out = out };
	int rc = -1;
	if (a && b && folded_lines_init(&c.fl, ss, t) == 0) {
		for (size_t i = 0; i < ss->nsamples; i++) {
			double v = ss->samples[i].value > 0 ? (double)ss->samples[i].value : 0;
			(i < d->nbase ? a : b)[calltree_leaf_index(t, t->leaf[i])] += v;
		}
		rc = calltree_walk(t, by_label, NULL, line, &c);
	}
	if (c.failed)
		rc = -1;
	folded_lines_free(&c.fl);
	free(a);
	free(b);
	return rc;
}
