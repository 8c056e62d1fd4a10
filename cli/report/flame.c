/*
 * flame.c -- `cpuprof report --format html`: writes the page of
 * cli/report/flame.html (built into the program with .incbin) with the merged
 * profiles in its JSON block, as compact as plain JSON allows: a string
 * table (names and source files), a flat array of frames [name, file,
 * line (with --lines; else the function's first line), kind] and the call tree as a flat preorder array of nodes [frame,
 * depth, self]; the page computes totals and lays frames out itself.
 * Every string is escaped for a <script type="application/json"> block:
 * '<', '>' and '&' as \u003c..., so that no name can close the block or
 * open a comment, control characters as \u00XX, U+2028/9 escaped, and
 * bytes that are not valid UTF-8 replaced by U+FFFD.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "report.h"

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
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		const char **a = realloc(t->s, cap * sizeof *a);
		if (!a)
			return -1;
		t->s = a;
		t->cap = cap;
	}
	t->s[t->n] = s;
	t->hash[j] = ++t->n;
	return (long)(t->n - 1);
}

/* Writes the header part of the data: title, profiles, totals. */
static void write_meta(FILE *out, const struct report_input *in,
		       const struct stackset *ss)
{
	char title[1024];
	size_t o = 0;
	title[0] = '\0';
	for (size_t i = 0; i < in->n && o < sizeof title; i++)
		o += (size_t)snprintf(title + o, sizeof title - o, "%s%s",
				      i ? ", " : "", in->names[i]);
	fputs("{\"title\":", out);
	json_string(out, title);
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
	fprintf(out, ",\"total\":%" PRId64 ",\"duration\":%" PRId64
		",\"hasGroups\":%s,\"kinds\":[", ss->total, duration,
		ss->has_groups ? "true" : "false");
	for (int k = 0; k < FRAME_KINDS; k++)
		fprintf(out, "%s\"%s\"", k ? "," : "", frame_kind_name((enum frame_kind)k));
	fputc(']', out);
}

int flame_write(FILE *out, const struct report_input *in,
		const struct stackset *ss)
{
	struct calltree t = { 0 };
	struct strtab st = { 0 };
	uint32_t *stack = NULL;
	long *fname = NULL, *ffile = NULL;
	int rc = -1;
	if (calltree_build(&t, ss) < 0)
		goto out;
	fname = calloc(ss->nframes + 1, sizeof *fname);
	ffile = calloc(ss->nframes + 1, sizeof *ffile);
	stack = malloc(t.n * sizeof *stack);
	if (!fname || !ffile || !stack || strtab_index(&st, "") < 0)
		goto out;
	for (size_t i = 0; i < ss->nframes; i++) {
		fname[i] = strtab_index(&st, ss->frames[i].name);
		ffile[i] = strtab_index(&st, ss->frames[i].file);
		if (fname[i] < 0 || ffile[i] < 0)
			goto out;
	}

	const char *mark = strstr(cpuprof_flame_page, DATA_MARK);
	if (!mark)
		goto out; /* cannot happen: the page is built in */
	fwrite(cpuprof_flame_page, 1, (size_t)(mark - cpuprof_flame_page) + 1, out);
	write_meta(out, in, ss);
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
	/* The tree in preorder: a node's subtree right after it. */
	fputs("],\n\"nodes\":[", out);
	size_t sp = 0;
	bool first = true;
	for (uint32_t c = t.nodes[0].child; c; c = t.nodes[c].next)
		stack[sp++] = c;
	while (sp > 0) {
		const struct cnode *nd = &t.nodes[stack[--sp]];
		fprintf(out, "%s%u,%u,%" PRId64, first ? "" : ",", nd->frame,
			nd->depth, nd->self);
		first = false;
		for (uint32_t c = nd->child; c; c = t.nodes[c].next)
			stack[sp++] = c;
	}
	fputs("]}", out);
	fputs(mark + strlen(DATA_MARK) - 1, out);
	rc = 0;
out:
	calltree_free(&t);
	free(st.s);
	free(st.hash);
	free(stack);
	free(fname);
	free(ffile);
	return rc;
}
