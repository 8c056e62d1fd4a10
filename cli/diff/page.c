/*
 * page.c -- `cpuprof diff --format html`: the differential flame graph.
 * report's page (flame_page(): the same page, data and tooltips) draws
 * NEW's samples, so the frames have NEW's shape and widths; the data's
 * "diff" member describes BASE and the test, and lists the functions
 * that changed beyond the noise, and its "extra" array gives each path
 * (call tree node) [status, BASE's total, BASE's e, Holm's p]: status 1
 * where its share grew beyond the noise, -1 where it shrank, 0 within
 * the noise, 2 where it was not tested (too small to change by the
 * threshold, or a frame of cpuprof's accounting: compare.c); e as flame.c
 * says, in BASE's own units.  The page colours
 * each frame by its status and shows BASE's share beside NEW's.  Paths
 * that only BASE has have no width in NEW's shape and are not drawn: the
 * list of functions that changed names them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "report/format.h"

/* At most this many changed functions are listed in the page's header. */
#define MAX_LISTED 40

struct page_ctx {
	const struct diff *d;
	const struct diff_input *in;
	double base_msq;
};

/* The data's "diff" member. */
static void meta(FILE *out, void *arg)
{
	const struct page_ctx *c = arg;
	const struct diff *d = c->d;
	const struct report_input *base = &c->in->base;
	const struct profile *p = base->profiles[0];
	char name[1024];
	size_t o = 0;
	name[0] = '\0';
	for (size_t i = 0; i < base->n && o < sizeof name; i++)
		o += (size_t)snprintf(name + o, sizeof name - o, "%s%s", i ? ", " : "",
				      base->names[i]);
	fputs(",\"diff\":{\"base\":{\"name\":", out);
	flame_json_string(out, name);
	/* One BASE profile's comments; several are merged, their comments
	 * are in the text format's header. */
	fputs(",\"comments\":[", out);
	bool any = false;
	for (size_t k = 0; base->n == 1 && report_comment_keys[k]; k++) {
		const char *v = profile_comment(p, report_comment_keys[k]);
		if (!v)
			continue;
		fprintf(out, "%s[\"%s\",", any ? "," : "", report_comment_keys[k]);
		flame_json_string(out, v);
		fputc(']', out);
		any = true;
	}
	fputs("],\"warnings\":[", out);
	any = false;
	for (size_t i = 0; i < base->n; i++) {
		p = base->profiles[i];
		for (size_t k = 0; k < p->ncomments; k++) {
			if (strncmp(p->comments[k], "warning=", 8) != 0)
				continue;
			fputs(any ? "," : "", out);
			flame_json_string(out, p->comments[k] + 8);
			any = true;
		}
	}
	fprintf(out, "],\"total\":%.17g,\"draws\":%.17g,\"neff\":%.17g,\"msq\":%.17g},"
		"\"alpha\":%g,\"threshold\":%g,\"nodeTests\":%zu,\"changed\":[",
		d->a.w, d->a.n, d->a.neff, c->base_msq, d->o.alpha,
		100 * d->o.threshold, d->nnode_tests);
	size_t listed = 0;
	for (size_t i = 0; i < d->nrows && listed < MAX_LISTED; i++) {
		const struct diff_row *r = &d->rows[i];
		const struct diff_measure *m[2] = { &r->flat, &r->cum };
		for (int j = 0; j < 2; j++) {
			if (!m[j]->verdict)
				continue;
			fputs(listed++ ? ",[" : "[", out);
			flame_json_string(out, d->ss->frames[r->frame].label);
			fprintf(out, ",\"%s\",%.17g,%.17g,%.17g,%d]", j ? "cum" : "flat",
				m[j]->c.a, m[j]->c.b, m[j]->padj, m[j]->verdict);
		}
	}
	fputs("],\"note\":", out);
	char few[512];
	diff_too_few(few, sizeof few, d);
	if (*few)
		few[0] = 'T';
	flame_json_string(out, few);
	fputc('}', out);
}

/* A node's entries of the "extra" array at p (flame_tree's node()):
 * status (one of -1, 0, 1, 2), BASE's total and e, Holm's p. */
static char *node(char *p, uint32_t id, void *arg)
{
	const struct page_ctx *c = arg;
	double w, q;
	diff_node_base(c->d, id, &w, &q);
	int status = c->d->status[id];
	double padj = status == 2 ? 1 : diff_node_padj(c->d, id);
	const char *st = status < 0 ? "-1," : status == 0 ? "0," : status == 1 ? "1," : "2,";
	size_t n = strlen(st);
	memcpy(p, st, n);
	p = flame_number(p + n, w);
	*p++ = ',';
	p = flame_number(p, c->base_msq > 0 ? q / c->base_msq : 0);
	if (padj < 1)
		return p + snprintf(p, 32, ",%.3g", padj);
	memcpy(p, ",1", 2);
	return p + 2;
}

int diff_page_write(FILE *out, const struct diff_input *in,
		    const struct diff *d)
{
	const struct calltree *t = &d->t;
	const struct stackset *ss = d->ss;
	size_t n = t->nleaves + 1;
	double *q = calloc(n, sizeof *q);
	int64_t *self = calloc(n, sizeof *self);
	char *title = NULL;
	int rc = -1;
	if (!q || !self)
		goto out;
	share_nodes_self_q(t, ss, d->nbase, ss->nsamples, q);
	int64_t total = 0;
	for (size_t i = d->nbase; i < ss->nsamples; i++) {
		int64_t v = ss->samples[i].value > 0 ? ss->samples[i].value : 0;
		long l = calltree_leaf_index(t, t->leaf[i]);
		self[l] = sat_add(self[l], v);
		total = sat_add(total, v);
	}
	if (asprintf(&title, "cpuprof diff: %s%s \u2192 %s%s", in->base.names[0],
		     in->base.n > 1 ? " and more" : "", in->new.names[0],
		     in->new.n > 1 ? " and more" : "") < 0) {
		title = NULL;
		goto out;
	}
	struct page_ctx c = { d, in, d->a.n > 0 ? d->a.q / d->a.n : 0 };
	struct flame_tree ft = { .t = t, .self = self, .q = q, .base = &d->b,
				 .total = total, .title = title, .meta = meta,
				 .node = node, .arg = &c };
	rc = flame_page(out, &in->new, ss, &ft);
out:
	free(q);
	free(self);
	free(title);
	return rc;
}
