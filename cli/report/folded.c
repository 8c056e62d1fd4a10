/*
 * folded.c -- `cpuprof report --format folded`: collapsed stacks, the
 * input of flamegraph.pl, inferno and speedscope.  One line per distinct
 * stack whose own value is not zero: its frames from the root to the
 * leaf, joined by ';', a space and the value (nanoseconds of CPU, or the
 * sample type chosen with --value).  Stacks come in name order of their
 * frames: the samples sorted by their frames' ranks in name order, equal
 * stacks added up, where no two frames have the same name (a call tree's
 * walk is the same order, and takes a node of 40 bytes per frame of a
 * profile whose stacks share little: 200 MB at 5 million); else the call
 * tree, walked with an explicit stack: a hostile profile's stacks may be
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
	const struct calltree *t; /* NULL: the stacks are frames (sorted) */
	const struct stackset *ss;
	FILE *out;
	/* Each frame's text, made once (put_frame_folded) on first use. */
	char **text;
	size_t *textlen;
	/* The line being written: the frames of nodes[0..have) (call tree
	 * nodes, or frames), root first, joined by ';', in
	 * line[0..end[have - 1]).  A line keeps the prefix it has in
	 * common with the one before. */
	char *line;
	size_t capline;
	uint32_t *nodes;
	size_t *end, have, capnodes, capend;
	bool failed;
};

/* What by_frames() compares by. */
struct sorted_ctx {
	const struct stackset *ss;
	const uint32_t *rank;
};

/* qsort_r order of frame indexes: by label. */
static int frame_by_label(const void *a, const void *b, void *arg)
{
	const struct stackset *ss = arg;
	return strcmp(ss->frames[*(const uint32_t *)a].label, ss->frames[*(const uint32_t *)b].label);
}

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
	size_t k = 0, m = depth - 1 < c->have ? depth - 1 : c->have;
	while (k < m && c->nodes[k] == path[k])
		k++;
	if (cp_array_grow((void **)&c->nodes, &c->capnodes, depth, sizeof *c->nodes, 64) ||
	    cp_array_grow((void **)&c->end, &c->capend, depth, sizeof *c->end, 64))
		return -1;
	for (; k < depth; k++) {
		size_t len, at = k ? c->end[k - 1] : 0;
		const char *s = frame_text(c, c->t ? c->t->nodes[path[k]].frame : path[k], &len);
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

/* The frames' ranks in name order into rank[nframes]: 1 when no two
 * frames have the same name, 0 when some do, -1 out of memory. */
static int name_ranks(const struct stackset *ss, uint32_t *rank)
{
	uint32_t *ix = malloc((ss->nframes ? ss->nframes : 1) * sizeof *ix);
	if (!ix)
		return -1;
	for (size_t f = 0; f < ss->nframes; f++)
		ix[f] = (uint32_t)f;
	if (ss->nframes > 1)
		qsort_r(ix, ss->nframes, sizeof *ix, frame_by_label, (void *)ss);
	int unique = 1;
	for (size_t k = 0; k < ss->nframes; k++) {
		rank[ix[k]] = (uint32_t)k;
		if (k && !strcmp(ss->frames[ix[k - 1]].label, ss->frames[ix[k]].label))
			unique = 0;
	}
	free(ix);
	return unique;
}

/* qsort_r order of samples: by their frames' ranks, root first, a stack
 * before the longer ones it begins; then by index (their values are
 * added in sample order, as the call tree adds them). */
static int by_frames(const void *x, const void *y, void *arg)
{
	const struct sorted_ctx *c = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	const struct stack_sample *sa = &c->ss->samples[a], *sb = &c->ss->samples[b];
	const uint32_t *fa = c->ss->stack_frames + sa->off, *fb = c->ss->stack_frames + sb->off;
	for (uint32_t k = 0; k < sa->n && k < sb->n; k++)
		if (fa[k] != fb[k])
			return c->rank[fa[k]] < c->rank[fb[k]] ? -1 : 1;
	if (sa->n != sb->n)
		return sa->n < sb->n ? -1 : 1;
	return (a > b) - (a < b);
}

/* The lines from the samples sorted by_frames: each run of equal stacks
 * one line of their values' sum.  0, or -1 out of memory. */
static int write_sorted(struct folded_ctx *c, const uint32_t *rank)
{
	const struct stackset *ss = c->ss;
	struct sorted_ctx sc = { ss, rank };
	uint32_t *ord = malloc((ss->nsamples ? ss->nsamples : 1) * sizeof *ord);
	size_t n = 0;
	if (!ord)
		return -1;
	for (size_t i = 0; i < ss->nsamples; i++)
		if (ss->samples[i].n) /* an empty stack is the root's: no line */
			ord[n++] = (uint32_t)i;
	if (n > 1)
		qsort_r(ord, n, sizeof *ord, by_frames, &sc);
	for (size_t a = 0, b; a < n && !c->failed; a = b) {
		const struct stack_sample *s = &ss->samples[ord[a]];
		int64_t self = s->value;
		for (b = a + 1; b < n && ss->samples[ord[b]].n == s->n &&
				!memcmp(ss->stack_frames + s->off, ss->stack_frames + ss->samples[ord[b]].off,
					s->n * sizeof *ss->stack_frames);
		     b++)
			self = sat_add(self, ss->samples[ord[b]].value);
		if (self == 0)
			continue;
		if (build_line(c, ss->stack_frames + s->off, s->n) < 0) {
			c->failed = true;
			break;
		}
		fwrite(c->line, 1, c->end[s->n - 1], c->out);
		fprintf(c->out, " %" PRId64 "\n", self);
	}
	free(ord);
	return c->failed ? -1 : 0;
}

int folded_write(FILE *out, const struct stackset *ss)
{
	struct calltree t = { 0 };
	struct folded_ctx c = { NULL, ss, out, calloc(ss->nframes + 1, sizeof *c.text),
				calloc(ss->nframes + 1, sizeof *c.textlen), NULL, 0, NULL, NULL, 0, 0, 0, false };
	uint32_t *rank = malloc((ss->nframes ? ss->nframes : 1) * sizeof *rank);
	int rc = -1, unique = rank && c.text && c.textlen ? name_ranks(ss, rank) : -1;
	if (unique == 1) {
		rc = write_sorted(&c, rank);
	} else if (unique == 0 && calltree_build(&t, ss) == 0) {
		c.t = &t;
		rc = calltree_walk(&t, by_label, NULL, line, &c);
	}
	if (c.failed)
		rc = -1;
	for (size_t f = 0; c.text && f < ss->nframes; f++)
		free(c.text[f]);
	free(c.text);
	free(c.textlen);
	free(c.line);
	free(c.nodes);
	free(c.end);
	free(rank);
	calltree_free(&t);
	return rc;
}
