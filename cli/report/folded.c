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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "format.h"
#include "report.h"

struct folded_ctx {
	const struct calltree *t;
	const struct stackset *ss;
	FILE *out;
	/* Each frame's text, made once (put_frame_folded) on first use. */
	char **text;
	size_t *textlen;
	/* The line being written: the frames of nodes[0..have), root
	 * first, joined by ';', in line[0..end[have - 1]).  A node has one
	 * path from the root: a line whose nodes[k - 1] is the same keeps
	 * that prefix. */
	char *line;
	size_t capline;
	uint32_t *nodes;
	size_t *end, have, capnodes, capend;
	bool failed;
};

/* qsort_r order of nodes: by label. */
static int by_label(const void *a, const void *b, void *arg)
{
	const struct folded_ctx *c = arg;
	const struct cnode *x = &c->t->nodes[*(const uint32_t *)a];
	const struct cnode *y = &c->t->nodes[*(const uint32_t *)b];
	return strcmp(c->ss->frames[x->frame].label, c->ss->frames[y->frame].label);
}

/* Frame f's text, made on first use; NULL if out of memory. */
static const char *frame_text(struct folded_ctx *c, uint32_t f, size_t *len)
{
	if (!c->text[f]) {
		FILE *m = open_memstream(&c->text[f], &c->textlen[f]);
		if (!m)
			return NULL;
		put_frame_folded(m, &c->ss->frames[f]);
		if (fclose(m) != 0) {
			free(c->text[f]);
			c->text[f] = NULL;
			return NULL;
		}
	}
	*len = c->textlen[f];
	return c->text[f];
}

/* Makes c->line the text of path[0..depth), keeping the prefix it has in
 * common with the line before.  0, or -1 out of memory. */
static int build_line(struct folded_ctx *c, const uint32_t *path, size_t depth)
{
	size_t k = depth - 1 < c->have ? depth - 1 : c->have;
	while (k > 0 && c->nodes[k - 1] != path[k - 1])
		k--;
	if (cp_array_grow((void **)&c->nodes, &c->capnodes, depth, sizeof *c->nodes, 64) ||
	    cp_array_grow((void **)&c->end, &c->capend, depth, sizeof *c->end, 64))
		return -1;
	for (; k < depth; k++) {
		size_t len, at = k ? c->end[k - 1] : 0;
		const char *s = frame_text(c, c->t->nodes[path[k]].frame, &len);
		if (!s || cp_array_grow((void **)&c->line, &c->capline, at + len + 1, 1, 4096))
			return -1;
		if (k)
			c->line[at++] = ';';
		memcpy(c->line + at, s, len);
		c->end[k] = at + len;
		c->nodes[k] = path[k];
	}
	c->have = depth;
	return 0;
}

/* A line for the stack that ends at path[depth - 1], if its own value is
 * not zero. */
static void line(const uint32_t *path, size_t depth, void *arg)
{
	struct folded_ctx *c = arg;
	const struct cnode *nd = &c->t->nodes[path[depth - 1]];
	if (nd->self == 0 || c->failed)
		return;
	if (build_line(c, path, depth) < 0) {
		c->failed = true;
		return;
	}
	fwrite(c->line, 1, c->end[depth - 1], c->out);
	fprintf(c->out, " %" PRId64 "\n", nd->self);
}

int folded_write(FILE *out, const struct stackset *ss)
{
	struct calltree t;
	if (calltree_build(&t, ss) < 0)
		return -1;
	struct folded_ctx c = { &t, ss, out, calloc(ss->nframes + 1, sizeof *c.text),
				calloc(ss->nframes + 1, sizeof *c.textlen), NULL, 0, NULL, NULL, 0, 0, 0, false };
	int rc = -1;
	if (c.text && c.textlen)
		rc = calltree_walk(&t, by_label, NULL, line, &c);
	if (c.failed)
		rc = -1;
	for (size_t f = 0; c.text && f < ss->nframes; f++)
		free(c.text[f]);
	free(c.text);
	free(c.textlen);
	free(c.line);
	free(c.nodes);
	free(c.end);
	calltree_free(&t);
	return rc;
}
