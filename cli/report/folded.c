/*
 * folded.c -- `cpuprof report --format folded`: collapsed stacks, the
 * input of flamegraph.pl, inferno and speedscope.  One line per distinct
 * stack whose own value is not zero: its frames from the root to the
 * leaf, joined by ';', a space and the value (nanoseconds of CPU, or the
 * sample type chosen with --value), in the name order of the call tree's
 * walk (an explicit stack: a hostile profile's stacks may be very deep).
 * ';' and control characters in names become '?'.  A frame its JIT named
 * ends in "_[j]", as flamegraph.pl's input marks JIT code.  The lines
 * themselves are made by folded_line(), which diff's folded format
 * shares.
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

int folded_lines_init(struct folded_lines *fl, const struct stackset *ss, const struct calltree *t)
{
	*fl = (struct folded_lines){ .ss = ss, .t = t };
	fl->text = calloc(ss->nframes + 1, sizeof *fl->text);
	fl->textlen = calloc(ss->nframes + 1, sizeof *fl->textlen);
	return fl->text && fl->textlen ? 0 : -1;
}

void folded_lines_free(struct folded_lines *fl)
{
	for (size_t f = 0; fl->text && f < fl->ss->nframes; f++)
		free(fl->text[f]);
	free(fl->text);
	free(fl->textlen);
	free(fl->line);
	free(fl->nodes);
	free(fl->end);
}

/* Frame f's text, made on first use; NULL if out of memory. */
static const char *frame_text(struct folded_lines *fl, uint32_t f, size_t *len)
{
	if (!fl->text[f]) {
		FILE *m = open_memstream(&fl->text[f], &fl->textlen[f]);
		if (!m)
			return NULL;
		put_frame_folded(m, &fl->ss->frames[f]);
		if (fclose(m) != 0) {
			free(fl->text[f]);
			fl->text[f] = NULL;
			return NULL;
		}
	}
	*len = fl->textlen[f];
	return fl->text[f];
}

const char *folded_line(struct folded_lines *fl, const uint32_t *path, size_t depth, size_t *len)
{
	size_t k = 0, m = depth - 1 < fl->have ? depth - 1 : fl->have;
	while (k < m && fl->nodes[k] == path[k])
		k++;
	if (cp_array_grow((void **)&fl->nodes, &fl->capnodes, depth, sizeof *fl->nodes, 64) ||
	    cp_array_grow((void **)&fl->end, &fl->capend, depth, sizeof *fl->end, 64))
		return NULL;
	for (; k < depth; k++) {
		size_t n, at = k ? fl->end[k - 1] : 0;
		const char *s = frame_text(fl, fl->t->nodes[path[k]].frame, &n);
		if (!s || cp_array_grow((void **)&fl->line, &fl->capline, at + n + 1, 1, 4096))
			return NULL;
		if (k)
			fl->line[at++] = ';';
		memcpy(fl->line + at, s, n);
		fl->end[k] = at + n;
		fl->nodes[k] = path[k];
	}
	fl->have = depth;
	*len = fl->end[depth - 1];
	return fl->line;
}

int folded_by_label(const void *a, const void *b, void *arg)
{
	const struct folded_lines *fl = arg;
	const struct cnode *x = &fl->t->nodes[*(const uint32_t *)a];
	const struct cnode *y = &fl->t->nodes[*(const uint32_t *)b];
	return strcmp(fl->ss->frames[x->frame].label, fl->ss->frames[y->frame].label);
}

struct folded_ctx {
	struct folded_lines fl;
	FILE *out;
	bool failed;
};

/* qsort_r order of nodes, for calltree_walk's context. */
static int by_label(const void *a, const void *b, void *arg)
{
	return folded_by_label(a, b, &((struct folded_ctx *)arg)->fl);
}

/* A line for the stack that ends at path[depth - 1], if its own value is
 * not zero. */
static void line(const uint32_t *path, size_t depth, void *arg)
{
	struct folded_ctx *c = arg;
	const struct cnode *nd = &c->fl.t->nodes[path[depth - 1]];
	size_t len;
	const char *s;
	if (nd->self == 0 || c->failed)
		return;
	if (!(s = folded_line(&c->fl, path, depth, &len))) {
		c->failed = true;
		return;
	}
	fwrite(s, 1, len, c->out);
	fprintf(c->out, " %" PRId64 "\n", nd->self);
}

int folded_write(FILE *out, const struct stackset *ss)
{
	struct calltree t = { 0 };
	struct folded_ctx c = { .fl = { .ss = ss }, .out = out };
	int rc = -1;
	if (calltree_build(&t, ss) == 0 && folded_lines_init(&c.fl, ss, &t) == 0)
		rc = calltree_walk(&t, by_label, NULL, line, &c);
	if (c.failed)
		rc = -1;
	folded_lines_free(&c.fl);
	calltree_free(&t);
	return rc;
}
