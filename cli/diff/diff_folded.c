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
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "report/format.h"

struct folded_ctx {
	const struct diff *d;
	const double *a, *b; /* per node: BASE's and NEW's own value */
	double scale;        /* NEW's total over BASE's */
	FILE *out;
};

/* qsort_r order of nodes: by label. */
static int by_label(const void *x, const void *y, void *arg)
{
	const struct folded_ctx *c = arg;
	const struct calltree *t = &c->d->t;
	const struct frame *f = c->d->ss->frames;
	return strcmp(f[t->nodes[*(const uint32_t *)x].frame].label,
		      f[t->nodes[*(const uint32_t *)y].frame].label);
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
	const struct folded_ctx *c = arg;
	const struct calltree *t = &c->d->t;
	uint32_t id = path[depth - 1];
	int64_t a = whole(c->a[id] * c->scale), b = whole(c->b[id]);
	if (c->a[id] <= 0 && c->b[id] <= 0)
		return;
	for (size_t i = 0; i < depth; i++) {
		if (i)
			fputc(';', c->out);
		put_frame_folded(c->out, &c->d->ss->frames[t->nodes[path[i]].frame]);
	}
	fprintf(c->out, " %" PRId64 " %" PRId64 "\n", a, b);
}

int diff_folded_write(FILE *out, const struct diff *d)
{
	const struct calltree *t = &d->t;
	const struct stackset *ss = d->ss;
	double *a = calloc(t->n, sizeof *a), *b = calloc(t->n, sizeof *b);
	int rc = -1;
	if (!a || !b)
		goto out;
	for (size_t i = 0; i < ss->nsamples; i++) {
		double v = ss->samples[i].value > 0 ? (double)ss->samples[i].value : 0;
		(i < d->nbase ? a : b)[t->leaf[i]] += v;
	}
	struct folded_ctx c = { d, a, b, d->a.w > 0 ? d->b.w / d->a.w : 0, out };
	rc = calltree_walk(t, by_label, NULL, line, &c);
out:
	free(a);
	free(b);
	return rc;
}
