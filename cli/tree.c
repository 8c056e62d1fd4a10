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
	const struct stackset *ss;
};

/* qsort_r order of nodes: total descending, then label. */
static int by_total(const void *a, const void *b, void *arg)
{
	const struct tree_ctx *c = arg;
	const struct cnode *x = &c->t->nodes[*(const uint32_t *)a];
	const struct cnode *y = &c->t->nodes[*(const uint32_t *)b];
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(c->ss->frames[x->frame].label, c->ss->frames[y->frame].label);
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

/* One level of the walk: a node's sorted children and the next to print. */
struct level {
	uint32_t *kids;
	long n, next;
};

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
	header_print(out, in, ss);
	char ms[32];
	snprintf(ms, sizeof ms, "%g%%", min_share);
	fprintf(out, "Call tree: callers above callees, children by total; "
		"below %s of the total summarised\n", ms);
	fprintf(out, "%10s %7s %10s %7s  %s\n", "total", "total%", "self",
		"self%", "name");
	double threshold = min_share / 100.0 * (double)ss->total;
	struct tree_ctx c = { &t, ss };
	size_t cap = 64, depth = 0;
	struct level *st = malloc(cap * sizeof *st);
	int rc = -1;
	if (!st)
		goto out;
	st[0].next = 0;
	if ((st[0].n = calltree_children(&t, 0, by_total, &c, &st[0].kids)) < 0)
		goto out;
	depth = 1;
	while (depth > 0) {
		struct level *lv = &st[depth - 1];
		if (lv->next >= lv->n || (double)t.nodes[lv->kids[lv->next]].total < threshold) {
			/* The rest of this level is below the threshold. */
			long more = lv->n - lv->next;
			if (more > 0) {
				int64_t sum = 0, self = 0;
				for (long i = lv->next; i < lv->n; i++) {
					sum = sat_add(sum, t.nodes[lv->kids[i]].total);
					self = sat_add(self, t.nodes[lv->kids[i]].self);
				}
				columns(out, ss, sum, self, (uint32_t)depth);
				fprintf(out, "... %ld more below %s\n", more, ms);
			}
			free(lv->kids);
			depth--;
			continue;
		}
		uint32_t id = lv->kids[lv->next++];
		const struct cnode *nd = &t.nodes[id];
		columns(out, ss, nd->total, nd->self, nd->depth);
		put_name(out, ss->frames[nd->frame].label, NULL);
		fputc('\n', out);
		if (depth == cap) {
			struct level *ns = realloc(st, 2 * cap * sizeof *st);
			if (!ns)
				goto out;
			st = ns;
			cap *= 2;
		}
		st[depth].next = 0;
		if ((st[depth].n = calltree_children(&t, id, by_total, &c,
						     &st[depth].kids)) < 0)
			goto out;
		depth++;
	}
	rc = 0;
out:
	for (size_t i = 0; st && i < depth; i++)
		free(st[i].kids);
	free(st);
	calltree_free(&t);
	return rc;
}
