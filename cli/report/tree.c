/*
 * tree.c -- `cpuprof report --format tree`: the call tree in the terminal,
 * from each root (the outermost frame of a stack) down, children by total
 * value.  Each line shows the node's total and self values and their
 * shares of the whole profile; children whose total is below the minimum
 * share are summed into one "N more below X%" line, so what is left out
 * is still counted.  Walked with an explicit stack: a hostile profile's
 * stacks may be very deep.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "report.h"

/* Indentation stops growing at this depth; deeper lines show theirs. */
#define MAX_INDENT 40

struct tree_ctx {
	const struct calltree *t;
	const int64_t *total; /* per node (calltree_totals()) */
	const struct stackset *ss;
	FILE *out;
	double threshold;
	const char *min_share; /* as printed */
};

/* qsort_r order of nodes: total descending, then label. */
static int by_total(const void *a, const void *b, void *arg)
{
	const struct tree_ctx *c = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	if (c->total[i] != c->total[j])
		return c->total[i] > c->total[j] ? -1 : 1;
	return strcmp(c->ss->frames[c->t->nodes[i].frame].label, c->ss->frames[c->t->nodes[j].frame].label);
}

/* Prints the value and share columns and the indentation for depth. */
static void columns(FILE *out, const struct stackset *ss, int64_t total,
		    int64_t self, uint32_t depth)
{
	char tv[64], tp[16], sv[64], sp[16];
	format_value(tv, sizeof tv, total, ss->unit);
	format_pct(tp, sizeof tp, total, ss->total);
	format_value(sv, sizeof sv, self, ss->unit);
	format_pct(sp, sizeof sp, self, ss->total);
	fprintf(out, "%10s %7s %10s %7s  ", tv, tp, sv, sp);
	uint32_t indent = depth > MAX_INDENT ? MAX_INDENT : depth;
	for (uint32_t i = 1; i < indent; i++)
		fputs("  ", out);
	if (depth > MAX_INDENT)
		fprintf(out, "[%u] ", depth);
}

/* The rest of a level is below the threshold once its next child is
 * (children come by total): it is summed into one line. */
static int below(const uint32_t *kids, long n, size_t depth, void *arg)
{
	const struct tree_ctx *c = arg;
	if ((double)c->total[kids[0]] >= c->threshold)
		return 0;
	int64_t sum = 0, self = 0;
	for (long i = 0; i < n; i++) {
		sum = sat_add(sum, c->total[kids[i]]);
		self = sat_add(self, c->t->nodes[kids[i]].self);
	}
	columns(c->out, c->ss, sum, self, (uint32_t)depth);
	fprintf(c->out, "... %ld more below %s\n", n, c->min_share);
	return 1;
}

/* The line of node path[depth - 1]. */
static void line(const uint32_t *path, size_t depth, void *arg)
{
	const struct tree_ctx *c = arg;
	uint32_t id = path[depth - 1];
	const struct cnode *nd = &c->t->nodes[id];
	columns(c->out, c->ss, c->total[id], nd->self, (uint32_t)depth);
	put_name(c->out, c->ss->frames[nd->frame].label, NULL);
	fputc('\n', c->out);
}

int tree_write(FILE *out, const struct report_input *in,
	       const struct stackset *ss, double min_share)
{
	if (in->profiles[0]->nsample_types == 0) {
		fprintf(out, "The profile has no sample types (and so no values).\n");
		return 0;
	}
	struct calltree t;
	if (calltree_build(&t, ss) < 0)
		return -1;
	int64_t *total = malloc(t.n * sizeof *total);
	if (!total) {
		calltree_free(&t);
		return -1;
	}
	calltree_totals(&t, total);
	header_print(out, in, ss);
	char ms[32];
	snprintf(ms, sizeof ms, "%g%%", min_share);
	fprintf(out, "Call tree: callers above callees, children by total; "
		"below %s of the total summarised\n", ms);
	fprintf(out, "%10s %7s %10s %7s  %s\n", "total", "total%", "self",
		"self%", "name");
	struct tree_ctx c = { &t, total, ss, out, min_share / 100.0 * (double)ss->total, ms };
	int rc = calltree_walk(&t, by_total, below, line, &c);
	calltree_free(&t);
	free(total);
	return rc;
}
