/*
 * folded.c -- `cpuprof report --format folded`: collapsed stacks, the
 * input of flamegraph.pl, inferno and speedscope.  One line per distinct
 * stack whose own value is not zero: its frames from the root to the
 * leaf, joined by ';', a space and the value (nanoseconds of CPU, or the
 * sample type chosen with --value).  Stacks come in name order of their
 * frames, walked with an explicit stack: a hostile profile's stacks may be
 * very deep.  ';' and control characters in names become '?'.
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
};

/* qsort_r order of nodes: by label. */
static int by_label(const void *a, const void *b, void *arg)
{
	const struct folded_ctx *c = arg;
	const struct cnode *x = &c->t->nodes[*(const uint32_t *)a];
	const struct cnode *y = &c->t->nodes[*(const uint32_t *)b];
	return strcmp(c->ss->frames[x->frame].label, c->ss->frames[y->frame].label);
}

struct level {
	uint32_t *kids;
	long n, next;
};

int folded_write(FILE *out, const struct stackset *ss)
{
	struct calltree t;
	if (calltree_build(&t, ss) < 0)
		return -1;
	struct folded_ctx c = { &t, ss };
	size_t cap = 64, depth = 0;
	struct level *st = malloc(cap * sizeof *st);
	uint32_t *path = malloc(cap * sizeof *path);
	int rc = -1;
	if (!st || !path)
		goto out;
	st[0].next = 0;
	if ((st[0].n = calltree_children(&t, 0, by_label, &c, &st[0].kids)) < 0)
		goto out;
	depth = 1;
	while (depth > 0) {
		struct level *lv = &st[depth - 1];
		if (lv->next >= lv->n) {
			free(lv->kids);
			depth--;
			continue;
		}
		uint32_t id = lv->kids[lv->next++];
		path[depth - 1] = id;
		if (t.nodes[id].self != 0) {
			for (size_t i = 0; i < depth; i++) {
				if (i)
					fputc(';', out);
				put_name(out, ss->frames[t.nodes[path[i]].frame].label, ";");
			}
			fprintf(out, " %" PRId64 "\n", t.nodes[id].self);
		}
		if (depth == cap) {
			struct level *ns = realloc(st, 2 * cap * sizeof *st);
			if (ns)
				st = ns;
			uint32_t *np = ns ? realloc(path, 2 * cap * sizeof *path) : NULL;
			if (!np)
				goto out;
			path = np;
			cap *= 2;
		}
		st[depth].next = 0;
		if ((st[depth].n = calltree_children(&t, id, by_label, &c,
						     &st[depth].kids)) < 0)
			goto out;
		depth++;
	}
	rc = 0;
out:
	for (size_t i = 0; st && i < depth; i++)
		free(st[i].kids);
	free(st);
	free(path);
	calltree_free(&t);
	return rc;
}
