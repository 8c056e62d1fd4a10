/*
 * folded.c -- `cpuprof report --format folded`: collapsed stacks, the
 * input of flamegraph.pl, inferno and speedscope.  One line per distinct
 * stack whose own value is not zero: its frames from the root to the
 * leaf, joined by ';', a space and the value (nanoseconds of CPU, or the
 * sample type chosen with --value).  Stacks come in name order of their
 * frames, walked with an explicit stack: a hostile profile's stacks may be
 * very deep.  ';' and control characters in names become '?'.  A frame
 * its JIT named ends in "_[j]", as flamegraph.pl's input marks JIT code.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "report.h"

struct folded_ctx {
	const struct calltree *t;
	const struct stackset *ss;
	FILE *out;
};

/* qsort_r order of nodes: by label. */
static int by_label(const void *a, const void *b, void *arg)
{
	const struct folded_ctx *c = arg;
	const struct cnode *x = &c->t->nodes[*(const uint32_t *)a];
	const struct cnode *y = &c->t->nodes[*(const uint32_t *)b];
	return strcmp(c->ss->frames[x->frame].label, c->ss->frames[y->frame].label);
}

/* A line for the stack that ends at path[depth - 1], if its own value is
 * not zero. */
static void line(const uint32_t *path, size_t depth, void *arg)
{
	const struct folded_ctx *c = arg;
	const struct cnode *nd = &c->t->nodes[path[depth - 1]];
	if (nd->self == 0)
		return;
	for (size_t i = 0; i < depth; i++) {
		if (i)
			fputc(';', c->out);
		put_frame_folded(c->out, &c->ss->frames[c->t->nodes[path[i]].frame]);
	}
	fprintf(c->out, " %" PRId64 "\n", nd->self);
}

int folded_write(FILE *out, const struct stackset *ss)
{
	struct calltree t;
	if (calltree_build(&t, ss) < 0)
		return -1;
	struct folded_ctx c = { &t, ss, out };
	int rc = calltree_walk(&t, by_label, NULL, line, &c);
	calltree_free(&t);
	return rc;
}
