/*
 * lines_cache.c -- line lookups kept on disk (lines_cache.h).
 *
 * A file, in the machine's byte order:
 *   "CPLINES\n", u32 0x01020304, u32 the format's version (2), u32 the
 *   reader's checksum, u64 the DWARF file's device, inode, size, mtime (s),
 *   mtime (ns), u32 number of strings, u32 number of answers, str the
 *   object's path, str the DWARF file's,
 *   then the strings, each once: str;
 *   then the answers, sorted by address, their spans apart:
 *   u64 lo, u64 hi, u64 fn (the span, lines.h), u8 n, n x (u32 line,
 *   u32 start line, u32 name, u32 linkage name, u32 file: indexes of
 *   strings, NO_IDX for none)
 * where str is u16 length (0xffff: none), the bytes and a NUL; and last
 * u32 the CRC-32 of all before it.  (Version 1 kept one answer per
 * address and symbol start, each string in every frame.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/array.h"
#include "base/cachefile.h"
#include "lines_cache.h"

#ifndef CP_LINES_CODE
#error "CP_LINES_CODE (the checksum of lines.c) comes from the Makefile"
#endif

#define MAGIC "CPLINES\n"
#define VERSION 2u
#define MAX_FILE (64u << 20)
#define MAX_ANSWERS (1u << 20)
#define NO_STR 0xffffu
#define NO_IDX 0xffffffffu
#define ANSWER_MIN 25 /* bytes of an answer without frames */

struct answer {
	struct cp_lines_span span;
	struct cp_lines_chain chain;
};

struct cp_lines_cached {
	char *buf;     /* the file; strings point into it */
	struct answer *a;
	size_t n;
	struct cp_lines_frame *frames;
	const char **strs;
};

/* Whether a and b name one file: the same path, or two (a symlinked
 * directory: /lib and /usr/lib under usrmerge, where the loader and
 * /proc/PID/maps name libc differently) with the same device and inode. */
static int same_file(const char *a, const char *b)
{
	struct stat x, y;
	return !strcmp(a, b) || (stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
				 x.st_ino == y.st_ino);
}

/* ---- Reading ------------------------------------------------------------ */

struct rd {
	char *p, *end;
};

static int rd(struct rd *r, void *v, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	memcpy(v, r->p, n);
	r->p += n;
	return 0;
}

/* A string in place (its NUL checked), or NULL for none.  -1 if
 * malformed. */
static int rd_str(struct rd *r, const char **s)
{
	uint16_t len;
	if (rd(r, &len, 2))
		return -1;
	if (len == NO_STR) {
		*s = NULL;
		return 0;
	}
	if ((size_t)(r->end - r->p) < (size_t)len + 1 || r->p[len] != '\0' ||
	    memchr(r->p, '\0', len))
		return -1;
	*s = r->p;
	r->p += (size_t)len + 1;
	return 0;
}

/* The string of index i into *s (NULL for NO_IDX); -1 if there is none. */
static int rd_idx(struct rd *r, const struct cp_lines_cached *c, uint32_t nstrs, const char **s)
{
	uint32_t i;
	if (rd(r, &i, 4) || (i != NO_IDX && i >= nstrs))
		return -1;
	*s = i == NO_IDX ? NULL : c->strs[i];
	return 0;
}

/* The answers of the file, after its header: 0, or -1 if malformed. */
static int rd_answers(struct rd *r, struct cp_lines_cached *c, uint32_t nstrs, uint32_t n)
{
	c->a = malloc((n ? n : 1) * sizeof *c->a);
	if (!c->a)
		return -1;
	size_t nframes = 0, capframes = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct answer *a = &c->a[i];
		uint8_t k;
		if (rd(r, &a->span.lo, 8) || rd(r, &a->span.hi, 8) || rd(r, &a->span.fn, 8) || rd(r, &k, 1) ||
		    k > CP_LINES_MAX_DEPTH || a->span.hi <= a->span.lo)
			return -1;
		if (i && a->span.lo < a[-1].span.hi)
			return -1; /* out of order or overlapping: a search would miss */
		if (cp_array_grow((void **)&c->frames, &capframes, nframes + k, sizeof *c->frames, 256))
			return -1;
		/* Frames as indexes until the array stops moving. */
		a->chain.frames = (const struct cp_lines_frame *)(uintptr_t)nframes;
		a->chain.n = k;
		for (uint8_t j = 0; j < k; j++) {
			struct cp_lines_frame *f = &c->frames[nframes++];
			if (rd(r, &f->line, 4) || rd(r, &f->start_line, 4) || rd_idx(r, c, nstrs, &f->name) ||
			    rd_idx(r, c, nstrs, &f->linkage) || rd_idx(r, c, nstrs, &f->file) || !f->file)
				return -1;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		c->a[i].chain.frames = c->a[i].chain.n ? c->frames + (uintptr_t)c->a[i].chain.frames : NULL;
	c->n = n;
	return 0;
}

struct cp_lines_cached *cp_lines_cache_load(const char *path, const char *build_id)
{
	char dir[4096];
	if (!build_id || !cp_cache_key_valid(build_id) || cp_cache_dir("lines", dir, sizeof dir, 0) != 0)
		return NULL;
	size_t len;
	struct cp_lines_cached *c = calloc(1, sizeof *c);
	if (!c || !(c->buf = cp_cache_read(dir, build_id, MAX_FILE, &len))) {
		free(c);
		return NULL;
	}
	struct rd r = { c->buf, c->buf + len };
	char magic[8];
	uint32_t order, version, code, nstrs, n;
	struct cp_cache_file_id want, now;
	const char *opath, *source;
	if (rd(&r, magic, 8) || memcmp(magic, MAGIC, 8) || rd(&r, &order, 4) || order != 0x01020304 ||
	    rd(&r, &version, 4) || version != VERSION || rd(&r, &code, 4) || code != (uint32_t)CP_LINES_CODE ||
	    rd(&r, &want, sizeof want) || rd(&r, &nstrs, 4) || rd(&r, &n, 4) || n > MAX_ANSWERS ||
	    rd_str(&r, &opath) || rd_str(&r, &source) || !opath || !source || !same_file(opath, path) ||
	    cp_cache_file_id(source, &now) || memcmp(&want, &now, sizeof want))
		goto bad;
	/* Every string needs 3 bytes at least, every answer ANSWER_MIN: the
	 * counts are bounded by the file. */
	if ((size_t)nstrs > (size_t)(r.end - r.p) / 3 || (size_t)n > (size_t)(r.end - r.p) / ANSWER_MIN)
		goto bad;
	c->strs = malloc((nstrs ? nstrs : 1) * sizeof *c->strs);
	if (!c->strs)
		goto bad;
	for (uint32_t i = 0; i < nstrs; i++)
		if (rd_str(&r, &c->strs[i]) || !c->strs[i])
			goto bad;
	if (rd_answers(&r, c, nstrs, n) || r.p != r.end)
		goto bad;
	return c;
bad:
	cp_lines_cache_free(c);
	return NULL;
}

int cp_lines_cache_find(const struct cp_lines_cached *c, uint64_t addr, uint64_t sym_start,
			struct cp_lines_chain *chain, struct cp_lines_span *span)
{
	/* The last span that starts at or below addr: the spans are apart,
	 * so no other can hold it. */
	size_t lo = 0, hi = c ? c->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->a[mid].span.lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	const struct answer *a = &c->a[lo - 1];
	if (addr >= a->span.hi ||
	    (a->span.fn != CP_LINES_ANY_FN && sym_start && sym_start != a->span.fn))
		return 0;
	*chain = a->chain;
	if (span)
		*span = a->span;
	return 1;
}

void cp_lines_cache_free(struct cp_lines_cached *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c->a);
	free(c->frames);
	free(c->strs);
	free(c);
}

/* ---- Writing ------------------------------------------------------------ */

struct wr {
	char *buf;
	size_t len, cap;
	int failed;
};

static void wr(struct wr *w, const void *v, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n > MAX_FILE || cp_array_grow((void **)&w->buf, &w->cap, w->len + n, 1, 1 << 16)) {
		w->failed = 1;
		return;
	}
	memcpy(w->buf + w->len, v, n);
	w->len += n;
}

static void wr_str(struct wr *w, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	uint16_t l = s ? (uint16_t)len : NO_STR;
	if (len >= NO_STR) {
		w->failed = 1; /* not worth keeping */
		return;
	}
	wr(w, &l, 2);
	if (s)
		wr(w, s, len + 1);
}

/* The strings of the answers written, each once: by contents, in open
 * addressing (slot: index + 1, 0 empty). */
struct strtab {
	const char **s;
	size_t n, caps;
	uint32_t *slot;
	size_t cap;
	int failed;
};

static size_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29);
}

/* The index of s in t, added if new (NO_IDX for NULL, or out of memory:
 * t->failed). */
static uint32_t str_idx(struct strtab *t, const char *s)
{
	if (!s || t->failed)
		return NO_IDX;
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		uint32_t *slot = calloc(cap, sizeof *slot);
		if (!slot) {
			t->failed = 1;
			return NO_IDX;
		}
		for (size_t i = 0; i < t->n; i++) {
			size_t j = str_hash(t->s[i]) & (cap - 1);
			while (slot[j])
				j = (j + 1) & (cap - 1);
			slot[j] = (uint32_t)i + 1;
		}
		free(t->slot);
		t->slot = slot;
		t->cap = cap;
	}
	size_t j = str_hash(s) & (t->cap - 1);
	for (; t->slot[j]; j = (j + 1) & (t->cap - 1))
		if (!strcmp(t->s[t->slot[j] - 1], s))
			return t->slot[j] - 1;
	if (cp_array_grow((void **)&t->s, &t->caps, t->n + 1, sizeof *t->s, 1024)) {
		t->failed = 1;
		return NO_IDX;
	}
	t->s[t->n] = s;
	t->slot[j] = (uint32_t)++t->n;
	return (uint32_t)t->n - 1;
}

/* An answer to write: a kept one or a new one. */
struct entry {
	struct cp_lines_span span;
	const struct cp_lines_chain *chain;
};

static int entry_cmp(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;
	if (a->span.lo != b->span.lo)
		return a->span.lo < b->span.lo ? -1 : 1;
	return a->span.hi < b->span.hi ? -1 : a->span.hi > b->span.hi;
}

/* The answers to keep into e[], sorted and apart: c's (sorted already)
 * merged with the new ones, fresh[0..nf) (sorted).  Where two overlap
 * (the same span asked twice: no others can, the spans of one DWARF
 * reader's answers are apart or equal) the first is kept.  Returns the
 * count. */
static size_t merge(const struct cp_lines_cached *c, const struct entry *fresh, size_t nf, struct entry *e)
{
	size_t i = 0, j = 0, n = 0, nc = c ? c->n : 0;
	while (i < nc || j < nf) {
		struct entry x;
		if (j == nf || (i < nc && c->a[i].span.lo <= fresh[j].span.lo)) {
			x = (struct entry){ c->a[i].span, &c->a[i].chain };
			i++;
		} else {
			x = fresh[j++];
		}
		if (n && x.span.lo < e[n - 1].span.hi)
			continue;
		e[n++] = x;
	}
	return n;
}

static void wr_answer(struct wr *w, struct strtab *t, const struct entry *e)
{
	uint8_t k = (uint8_t)e->chain->n;
	wr(w, &e->span.lo, 8);
	wr(w, &e->span.hi, 8);
	wr(w, &e->span.fn, 8);
	wr(w, &k, 1);
	for (uint32_t j = 0; j < e->chain->n; j++) {
		const struct cp_lines_frame *f = &e->chain->frames[j];
		uint32_t v[5] = { f->line, f->start_line, str_idx(t, f->name), str_idx(t, f->linkage),
				  str_idx(t, f->file) };
		wr(w, v, sizeof v);
	}
}

/* The file: header, strings, answers e[0..n). */
static int wr_file(struct wr *w, const char *path, const char *source, const struct cp_cache_file_id *id,
		   const struct entry *e, size_t n)
{
	/* The answers first, aside, so that the strings they use are known. */
	struct strtab t = { 0 };
	struct wr body = { 0 };
	for (size_t i = 0; i < n; i++)
		wr_answer(&body, &t, &e[i]);
	uint32_t order = 0x01020304, version = VERSION, code = (uint32_t)CP_LINES_CODE;
	uint32_t nstrs = (uint32_t)t.n, total = (uint32_t)n;
	wr(w, MAGIC, 8);
	wr(w, &order, 4);
	wr(w, &version, 4);
	wr(w, &code, 4);
	wr(w, id, sizeof *id);
	wr(w, &nstrs, 4);
	wr(w, &total, 4);
	wr_str(w, path);
	wr_str(w, source);
	for (size_t i = 0; i < t.n; i++)
		wr_str(w, t.s[i]);
	if (!body.failed)
		wr(w, body.buf, body.len);
	int ok = !w->failed && !body.failed && !t.failed;
	free(body.buf);
	free(t.s);
	free(t.slot);
	return ok ? 0 : -1;
}

void cp_lines_cache_save(const char *path, const char *build_id, const char *source,
			 const struct cp_lines_cached *c, const struct cp_lines_chain *chains,
			 const struct cp_lines_span *spans, const size_t *idx, size_t n)
{
	char dir[4096];
	struct cp_cache_file_id id;
	if (!n || !build_id || !cp_cache_key_valid(build_id) || !source || cp_cache_file_id(source, &id) ||
	    cp_cache_dir("lines", dir, sizeof dir, 1) != 0)
		return;
	if (c && c->n + n > MAX_ANSWERS)
		c = NULL; /* start afresh */
	if (n > MAX_ANSWERS)
		return;
	struct entry *fresh = malloc(n * sizeof *fresh), *e = malloc((n + (c ? c->n : 0)) * sizeof *e);
	if (!fresh || !e)
		goto out;
	size_t nf = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cp_lines_span *s = &spans[idx[i]];
		if (s->lo < s->hi && chains[idx[i]].n <= CP_LINES_MAX_DEPTH)
			fresh[nf++] = (struct entry){ *s, &chains[idx[i]] };
	}
	qsort(fresh, nf, sizeof *fresh, entry_cmp);
	size_t ne = merge(c, fresh, nf, e);
	struct wr w = { 0 };
	if (ne && wr_file(&w, path, source, &id, e, ne) == 0)
		cp_cache_write(dir, build_id, w.buf, w.len);
	free(w.buf);
out:
	free(fresh);
	free(e);
}
