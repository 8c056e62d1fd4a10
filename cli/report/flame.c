/*
 * flame.c -- `cpuprof report --format html`: writes the page of
 * cli/report/flame.html (built into the program with .incbin) with the merged
 * profiles in its JSON block, as compact as plain JSON allows: a string
 * table (names and source files), a flat array of frames [name, file,
 * line (with --lines; else the function's first line), kind] and the
 * call tree as a flat preorder array of nodes [frame, depth, self, e];
 * the page computes totals and lays frames out itself.  e is the node's
 * own samples' sum of squared weights in units of the profile's mean one
 * (for equal weights, its number of samples): with the profile's draws,
 * effective draws and mean square weight in the header, it gives the page
 * the same 95% interval for every frame's share as `report --intervals`
 * (shares.h).  In profiles of off-CPU time the page's menu offers cpu,
 * off_cpu and wall: the header's "values" lists each with its totals,
 * and each node has its own value and e for each in the "alt" array.
 * Subtrees that hold no value are left out.  Report's page has a
 * timeline of the samples' times too (timeline.c).  `cpuprof diff`
 * writes its differential page with flame_page(), adding a member of its
 * own to the header and an array of its own per node.
 * Every string is escaped for a <script type="application/json"> block:
 * '<', '>' and '&' as \u003c..., so that no name can close the block or
 * open a comment, control characters as \u00XX, U+2028/9 escaped, and
 * bytes that are not valid UTF-8 replaced by U+FFFD.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "base/array.h"
#include "report.h"
#include "shares.h"

/* The page, NUL-terminated; the line "CPUPROF_DATA" is where the data
 * goes.  (The path is relative to the top directory, where make runs.) */
__asm__(".section .rodata\n"
	".balign 16\n"
	"cpuprof_flame_page:\n"
	".incbin \"cli/report/flame.html\"\n"
	".byte 0\n"
	".previous\n");
extern const char cpuprof_flame_page[];

#define DATA_MARK "\nCPUPROF_DATA\n"

/* Writes s as a JSON string safe inside a <script> element. */
static void json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	fputc('"', out);
	while (n > 0) {
		size_t k = utf8_char_len(p, n);
		if (k == 0) {
			fputs("\\ufffd", out);
			k = 1;
		} else if (k == 1) {
			unsigned char c = *p;
			if (c == '"' || c == '\\')
				fprintf(out, "\\%c", c);
			else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f)
				fprintf(out, "\\u%04x", c);
			else
				fputc(c, out);
		} else if (k == 3 && p[0] == 0xe2 && p[1] == 0x80 &&
			   (p[2] == 0xa8 || p[2] == 0xa9)) {
			fprintf(out, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
		} else {
			fwrite(p, 1, k, out);
		}
		p += k;
		n -= k;
	}
	fputc('"', out);
}

/* A table of distinct strings, by content, for the page's string table. */
struct strtab {
	const char **s;
	size_t n, cap;
	size_t *hash, nhash; /* 1 + index, 0 empty */
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The index of s in t, added if new; -1 if out of memory. */
static long strtab_index(struct strtab *t, const char *s)
{
	if (2 * (t->n + 1) > t->nhash) {
		size_t nh = t->nhash ? 2 * t->nhash : 1024;
		size_t *h = calloc(nh, sizeof *h);
		if (!h)
			return -1;
		for (size_t i = 0; i < t->n; i++) {
			size_t j = str_hash(t->s[i]) & (nh - 1);
			while (h[j])
				j = (j + 1) & (nh - 1);
			h[j] = i + 1;
		}
		free(t->hash);
		t->hash = h;
		t->nhash = nh;
	}
	size_t j = str_hash(s) & (t->nhash - 1);
	for (; t->hash[j]; j = (j + 1) & (t->nhash - 1))
		if (strcmp(t->s[t->hash[j] - 1], s) == 0)
			return (long)(t->hash[j] - 1);
	if (cp_array_grow((void **)&t->s, &t->cap, t->n + 1, sizeof *t->s, 1024))
		return -1;
	t->s[t->n] = s;
	t->hash[j] = ++t->n;
	return (long)(t->n - 1);
}

void flame_json_string(FILE *out, const char *s)
{
	json_string(out, s);
}

/* Writes the header part of the data: title, profiles, totals. */
static void write_meta(FILE *out, const struct report_input *in,
		       const struct stackset *ss, const struct flame_tree *ft)
{
	char title[1024];
	size_t o = 0;
	title[0] = '\0';
	for (size_t i = 0; i < in->n && o < sizeof title; i++)
		o += (size_t)snprintf(title + o, sizeof title - o, "%s%s",
				      i ? ", " : "", in->names[i]);
	fputs("{\"title\":", out);
	json_string(out, ft->title ? ft->title : title);
	fputs(",\"profiles\":[", out);
	int64_t duration = 0;
	for (size_t i = 0; i < in->n; i++) {
		const struct profile *p = in->profiles[i];
		if (p->duration_nanos > 0)
			duration = sat_add(duration, p->duration_nanos);
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_string(out, in->names[i]);
		fputs(",\"comments\":[", out);
		bool any = false;
		for (size_t k = 0; report_comment_keys[k]; k++) {
			const char *v = profile_comment(p, report_comment_keys[k]);
			if (!v)
				continue;
			fprintf(out, "%s[\"%s\",", any ? "," : "", report_comment_keys[k]);
			json_string(out, v);
			fputc(']', out);
			any = true;
		}
		fputs("],\"warnings\":[", out);
		any = false;
		for (size_t k = 0; k < p->ncomments; k++) {
			if (strncmp(p->comments[k], "warning=", 8) != 0)
				continue;
			fputs(any ? "," : "", out);
			json_string(out, p->comments[k] + 8);
			any = true;
		}
		fputs("]}", out);
	}
	fputs("],\"value\":", out);
	json_string(out, ss->value_type);
	fputs(",\"unit\":", out);
	json_string(out, ss->unit);
	const struct share_base *b = ft->base;
	/* Views by process and thread where the stacks have such frames. */
	bool groups = false;
	for (size_t i = 0; i < ss->nframes && !groups; i++)
		groups = ss->frames[i].kind == FRAME_PROCESS ||
			 ss->frames[i].kind == FRAME_THREAD;
	fprintf(out, ",\"total\":%" PRId64 ",\"duration\":%" PRId64
		",\"draws\":%.17g,\"neff\":%.17g,\"msq\":%.17g,\"exact\":%.17g"
		",\"hasGroups\":%s,\"kinds\":[", ft->total, duration, b->n, b->neff,
		b->n > 0 ? b->q / b->n : 0, b->w - b->ws, groups ? "true" : "false");
	for (int k = 0; k < FRAME_KINDS; k++)
		fprintf(out, "%s\"%s\"", k ? "," : "", frame_kind_name((enum frame_kind)k));
	fputc(']', out);
	if (!ft->nalt)
		return;
	/* The values of the menu: the drawn one first, as the header has it. */
	fputs(",\"values\":[", out);
	for (size_t i = 0; i <= ft->nalt; i++) {
		const char *name = i ? ft->alt[i - 1].name : ss->value_type;
		const char *unit = i ? ft->alt[i - 1].unit : ss->unit;
		const struct share_base *vb = i ? &ft->alt[i - 1].base : b;
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		json_string(out, name);
		fputs(",\"unit\":", out);
		json_string(out, unit);
		fprintf(out, ",\"total\":%" PRId64 ",\"draws\":%.17g,\"neff\":%.17g,\"msq\":%.17g,\"exact\":%.17g}",
			i ? ft->alt[i - 1].total : ft->total, vb->n, vb->neff, vb->n > 0 ? vb->q / vb->n : 0,
			vb->w - vb->ws);
	}
	fputc(']', out);
}

/* Writes v in decimal ending at e, backwards; returns its first char. */
static char *put_u64_back(char *e, uint64_t v)
{
	do {
		*--e = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return e;
}

/* Writes v in decimal at p; returns the end. */
static char *put_i64(char *p, int64_t v)
{
	char buf[24], *e = buf + sizeof buf, *b;
	if (v < 0) {
		*p++ = '-';
		b = put_u64_back(e, 0 - (uint64_t)v);
	} else {
		b = put_u64_back(e, (uint64_t)v);
	}
	memcpy(p, b, (size_t)(e - b));
	return p + (e - b);
}

/* flame_put_number's text of v at p (at most 32 bytes); returns the end. */
static char *put_number(char *p, double v)
{
	if (!(v >= 0) || v >= 1e15)
		return p + snprintf(p, 32, "%.6g", isfinite(v) ? v : 0);
	/* Integer arithmetic: printf's %g costs more than all the rest of a
	 * page of two million nodes. */
	uint64_t m = (uint64_t)llround(v * 1000);
	char buf[32], *e = buf + sizeof buf, *b = e;
	uint64_t frac = m % 1000;
	if (frac) {
		int digits = 3;
		while (frac % 10 == 0) {
			frac /= 10;
			digits--;
		}
		while (digits-- > 0) {
			*--b = (char)('0' + frac % 10);
			frac /= 10;
		}
		*--b = '.';
	}
	b = put_u64_back(b, m / 1000);
	memcpy(p, b, (size_t)(e - b));
	return p + (e - b);
}

void flame_put_number(FILE *out, double v)
{
	char buf[FLAME_NUMBER_MAX];
	fwrite(buf, 1, (size_t)(put_number(buf, v) - buf), out);
}

char *flame_number(char *p, double v)
{
	return put_number(p, v);
}

/* Node i's own value as ft draws it. */
static int64_t self_of(const struct flame_tree *ft, size_t i)
{
	long l;
	int64_t v = !ft->self ? ft->t->nodes[i].self
		    : (l = calltree_leaf_index(ft->t, (uint32_t)i)) >= 0 ? ft->self[l] : 0;
	return v > 0 ? v : 0;
}

/* Which nodes the page keeps, bottom-up (children come after their
 * parents): those whose subtree holds some of the value drawn or of a
 * value the menu offers (keep[i] 1). */
static void mark_kept(const struct flame_tree *ft, uint8_t *keep)
{
	const struct calltree *t = ft->t;
	for (size_t i = t->n; i-- > 1;) {
		uint8_t k = self_of(ft, i) > 0;
		long l = calltree_leaf_index(t, (uint32_t)i);
		for (size_t a = 0; a < ft->nalt && !k && l >= 0; a++)
			k = ft->alt[a].self[l] > 0;
		for (uint32_t c = calltree_child(t, (uint32_t)i); c < calltree_child_end(t, (uint32_t)i) && !k; c++)
			k = keep[c];
		keep[i] = k;
	}
}

/* What put_tree writes through: the page's nodes are millions of short
 * entries, each put here and written out 64 KiB at a time. */
struct page_buf {
	FILE *out;
	size_t len;
	char b[1 << 16];
};

/* Room for n more bytes at the buffer's end, which it returns. */
static char *page_room(struct page_buf *pb, size_t n)
{
	if (pb->len + n > sizeof pb->b) {
		fwrite(pb->b, 1, pb->len, pb->out);
		pb->len = 0;
	}
	return pb->b + pb->len;
}

/* Node id's entry of the page's array `pass` (0: nodes, 1: alt or the
 * caller's extra) at p; returns its end.  msq is the mean squared
 * weight its noise is over. */
static char *put_node(char *p, const struct flame_tree *ft, uint32_t id, size_t depth, int pass, double msq)
{
	long l = calltree_leaf_index(ft->t, id);
	if (pass == 0) {
		p = put_i64(p, ft->t->nodes[id].frame);
		*p++ = ',';
		p = put_i64(p, (int64_t)depth);
		*p++ = ',';
		p = put_i64(p, self_of(ft, id));
		*p++ = ',';
		return put_number(p, msq > 0 && l >= 0 ? ft->q[l] / msq : 0);
	}
	if (!ft->nalt)
		return ft->node(p, id, ft->arg);
	for (size_t a = 0; a < ft->nalt; a++) {
		const struct flame_alt *v = &ft->alt[a];
		double m = v->base.n > 0 ? v->base.q / v->base.n : 0;
		if (a)
			*p++ = ',';
		p = put_i64(p, l >= 0 && v->self[l] > 0 ? v->self[l] : 0);
		*p++ = ',';
		p = put_number(p, m > 0 && l >= 0 ? v->q[l] / m : 0);
	}
	return p;
}

/* One level of put_tree's walk: the children of a node not yet seen. */
struct put_level {
	uint32_t next, end;
};

/* The tree in preorder, a node's subtree right after it, leaving out the
 * nodes that hold nothing; twice if the caller has an array per node of
 * its own, in the same order.  pindex[id] (if pindex is not NULL) gets
 * each node's index in the page's array (from 1; 0: left out).  -1 if
 * out of memory. */
static int put_tree(FILE *out, const struct flame_tree *ft, const uint8_t *keep, uint32_t *pindex)
{
	const struct calltree *t = ft->t;
	double msq = ft->base->n > 0 ? ft->base->q / ft->base->n : 0;
	int passes = ft->node || ft->nalt ? 2 : 1;
	/* The most an entry takes: 4 numbers, or 2 per alt value, or the
	 * caller's, and a comma. */
	size_t most = 1 + (ft->nalt ? ft->nalt * (2 * FLAME_NUMBER_MAX + 2) : 4 * FLAME_NUMBER_MAX + 4);
	if (ft->node && most < 1 + FLAME_NODE_MAX)
		most = 1 + FLAME_NODE_MAX;
	size_t cap = 64;
	struct put_level *st = malloc(cap * sizeof *st);
	struct page_buf *pb = malloc(sizeof *pb);
	int rc = -1;
	if (!st || !pb)
		goto out;
	pb->out = out;
	pb->len = 0;
	for (int pass = 0; pass < passes; pass++) {
		fputs(pass ? (ft->nalt ? "],\n\"alt\":[" : "],\n\"extra\":[") : "],\n\"nodes\":[", out);
		size_t depth = 1;
		uint32_t written = 0;
		st[0] = (struct put_level){ calltree_child(t, 0), calltree_child_end(t, 0) };
		while (depth > 0) {
			struct put_level *lv = &st[depth - 1];
			if (lv->next == lv->end) {
				depth--;
				continue;
			}
			uint32_t id = lv->next++;
			if (!keep[id])
				continue;
			char *p = page_room(pb, most);
			if (written)
				*p++ = ',';
			if (pindex)
				pindex[id] = written + 1;
			written++;
			pb->len = (size_t)(put_node(p, ft, id, depth, pass, msq) - pb->b);
			if (depth == cap) {
				struct put_level *ns = realloc(st, 2 * cap * sizeof *st);
				if (!ns)
					goto out;
				st = ns;
				cap *= 2;
			}
			st[depth++] = (struct put_level){ calltree_child(t, id), calltree_child_end(t, id) };
		}
		fwrite(pb->b, 1, pb->len, out);
		pb->len = 0;
	}
	rc = 0;
out:
	free(st);
	free(pb);
	return rc;
}

int flame_page(FILE *out, const struct report_input *in,
	       const struct stackset *ss, const struct flame_tree *ft)
{
	const struct calltree *t = ft->t;
	struct strtab st = { 0 };
	uint32_t *pindex = NULL;
	long *fname = NULL, *ffile = NULL;
	uint8_t *keep = NULL;
	int rc = -1;
	fname = calloc(ss->nframes + 1, sizeof *fname);
	ffile = calloc(ss->nframes + 1, sizeof *ffile);
	/* Only the timeline needs each node's place in the page. */
	if (ft->timeline)
		pindex = calloc(t->n, sizeof *pindex);
	keep = calloc(t->n, sizeof *keep);
	if (!fname || !ffile || (ft->timeline && !pindex) || !keep || strtab_index(&st, "") < 0)
		goto out;
	for (size_t i = 0; i < ss->nframes; i++) {
		fname[i] = strtab_index(&st, ss->frames[i].name);
		ffile[i] = strtab_index(&st, ss->frames[i].file);
		if (fname[i] < 0 || ffile[i] < 0)
			goto out;
	}
	mark_kept(ft, keep);

	const char *mark = strstr(cpuprof_flame_page, DATA_MARK);
	if (!mark)
		goto out; /* cannot happen: the page is built in */
	fwrite(cpuprof_flame_page, 1, (size_t)(mark - cpuprof_flame_page) + 1, out);
	write_meta(out, in, ss, ft);
	if (ft->meta)
		ft->meta(out, ft->arg);
	fputs(",\n\"strings\":[", out);
	for (size_t i = 0; i < st.n; i++) {
		if (i)
			fputc(',', out);
		json_string(out, st.s[i]);
	}
	fputs("],\n\"frames\":[", out);
	for (size_t i = 0; i < ss->nframes; i++)
		fprintf(out, "%s%ld,%ld,%" PRId64 ",%d", i ? "," : "", fname[i],
			ffile[i], ss->frames[i].line ? ss->frames[i].line
						     : ss->frames[i].start_line,
			(int)ss->frames[i].kind);
	if (put_tree(out, ft, keep, pindex) < 0)
		goto out;
	fputc(']', out);
	if (ft->timeline && timeline_write(out, in, ss, t, pindex, ft) < 0)
		goto out;
	fputc('}', out);
	fputs(mark + strlen(DATA_MARK) - 1, out);
	rc = 0;
out:
	free(st.s);
	free(st.hash);
	free(pindex);
	free(fname);
	free(ffile);
	free(keep);
	return rc;
}

/* The other values of profiles of off-CPU time, for the page's menu:
 * each of cpu, off_cpu and wall that the profiles have and ss does not
 * count, with its per-node values and sums (as flame_write makes them
 * for ss's own), into *alt (malloc'd, with its arrays); how many, or -1
 * if out of memory. */
static long alt_values(const struct report_input *in, const struct stackset *ss, const struct calltree *t,
		       struct flame_alt **alt)
{
	static const char *const names[] = { "cpu", "off_cpu", "wall" };
	const struct profile *p0 = in->profiles[0];
	*alt = NULL;
	if (profile_find_sample_type(p0, "off_cpu", "nanoseconds") < 0)
		return 0;
	struct flame_alt *a = calloc(3, sizeof *a);
	struct stack_sample *smp = malloc((ss->nsamples ? ss->nsamples : 1) * sizeof *smp);
	if (!a || !smp) {
		free(a);
		free(smp);
		return -1;
	}
	long n = 0;
	for (size_t k = 0; k < 3; k++) {
		int vi = profile_find_sample_type(p0, names[k], "nanoseconds");
		if (vi < 0 || strcmp(ss->value_type, names[k]) == 0)
			continue;
		struct flame_alt *v = &a[n++];
		v->name = names[k];
		v->unit = "nanoseconds";
		v->self = calloc(t->nleaves + 1, sizeof *v->self);
		v->q = calloc(t->nleaves + 1, sizeof *v->q);
		if (!v->self || !v->q)
			goto fail;
		/* ss's samples are the profiles' Samples in order: the same
		 * stacks, another value. */
		size_t i = 0;
		struct stackset other = *ss;
		other.total = 0;
		for (size_t f = 0; f < in->n; f++)
			for (size_t s = 0; s < in->profiles[f]->nsamples && i < ss->nsamples; s++, i++) {
				smp[i] = ss->samples[i];
				smp[i].value = in->profiles[f]->samples[s].values[vi];
				other.total = sat_add(other.total, smp[i].value);
				long l = calltree_leaf_index(t, t->leaf[i]);
				v->self[l] = sat_add(v->self[l], smp[i].value);
			}
		other.samples = smp;
		v->total = other.total;
		share_nodes_self_q(t, &other, 0, ss->nsamples, v->q);
		share_base_of(&v->base, &other, 0, ss->nsamples);
	}
	free(smp);
	*alt = a;
	return n;
fail:
	for (long j = 0; j < n; j++) {
		free(a[j].self);
		free(a[j].q);
	}
	free(a);
	free(smp);
	return -1;
}

int flame_write(FILE *out, const struct report_input *in,
		const struct stackset *ss)
{
	struct calltree t = { 0 };
	double *q = NULL;
	int rc = -1;
	if (calltree_build(&t, ss) < 0)
		goto out;
	if (!(q = calloc(t.nleaves + 1, sizeof *q)))
		goto out;
	share_nodes_self_q(&t, ss, 0, ss->nsamples, q);
	struct share_base b;
	share_base_of(&b, ss, 0, ss->nsamples);
	struct flame_tree ft = { .t = &t, .q = q, .base = &b, .total = ss->total, .timeline = true };
	long nalt = alt_values(in, ss, &t, &ft.alt);
	if (nalt < 0)
		goto out;
	ft.nalt = (size_t)nalt;
	rc = flame_page(out, in, ss, &ft);
	for (size_t a = 0; a < ft.nalt; a++) {
		free(ft.alt[a].self);
		free(ft.alt[a].q);
	}
	free(ft.alt);
out:
	calltree_free(&t);
	free(q);
	return rc;
}
