/*
 * lines_cache.c -- line lookups kept on disk (lines_cache.h).
 *
 * A file, in the machine's byte order:
 *   "CPLINES\n", u32 0x01020304, u32 the reader's checksum,
 *   u64 the DWARF file's device, inode, size, mtime (s), mtime (ns),
 *   u32 number of answers, str the object's path, str the DWARF file's,
 *   then the answers sorted by (address, symbol start):
 *   u64 address, u64 symbol start, u8 n, n x (u32 line, u32 start line,
 *   str name, str linkage name, str file)
 * where str is u16 length (0xffff: none), the bytes and a NUL; and last
 * u32 the CRC-32 of all before it.
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
#define MAX_FILE (64u << 20)
#define MAX_ANSWERS (1u << 20)
#define NO_STR 0xffffu

struct answer {
	uint64_t addr, sym_start;
	struct cp_lines_chain chain;
};

struct cp_lines_cached {
	char *buf;     /* the file; strings point into it */
	struct answer *a;
	size_t n;
	struct cp_lines_frame *frames;
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
	uint32_t order, code, n;
	struct cp_cache_file_id want, now;
	const char *opath, *source;
	if (rd(&r, magic, 8) || memcmp(magic, MAGIC, 8) || rd(&r, &order, 4) || order != 0x01020304 ||
	    rd(&r, &code, 4) || code != (uint32_t)CP_LINES_CODE || rd(&r, &want, sizeof want) ||
	    rd(&r, &n, 4) || n > MAX_ANSWERS || rd_str(&r, &opath) || rd_str(&r, &source) ||
	    !opath || !source || !same_file(opath, path) || cp_cache_file_id(source, &now) ||
	    memcmp(&want, &now, sizeof want))
		goto bad;
	/* Every answer needs 17 bytes at least: n is bounded by the file. */
	if ((size_t)n > (size_t)(r.end - r.p) / 17)
		goto bad;
	c->a = malloc((n ? n : 1) * sizeof *c->a);
	if (!c->a)
		goto bad;
	size_t nframes = 0, capframes = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct answer *a = &c->a[i];
		uint8_t k;
		if (rd(&r, &a->addr, 8) || rd(&r, &a->sym_start, 8) || rd(&r, &k, 1) ||
		    k > CP_LINES_MAX_DEPTH)
			goto bad;
		if (i && (a->addr < a[-1].addr ||
			  (a->addr == a[-1].addr && a->sym_start <= a[-1].sym_start)))
			goto bad; /* not sorted: binary search would miss */
		if (cp_array_grow((void **)&c->frames, &capframes, nframes + k, sizeof *c->frames, 256))
			goto bad;
		/* Frames as indexes until the array stops moving. */
		a->chain.frames = (const struct cp_lines_frame *)(uintptr_t)nframes;
		a->chain.n = k;
		for (uint8_t j = 0; j < k; j++) {
			struct cp_lines_frame *f = &c->frames[nframes++];
			if (rd(&r, &f->line, 4) || rd(&r, &f->start_line, 4) || rd_str(&r, &f->name) ||
			    rd_str(&r, &f->linkage) || rd_str(&r, &f->file) || !f->file)
				goto bad;
		}
	}
	if (r.p != r.end)
		goto bad;
	for (uint32_t i = 0; i < n; i++)
		c->a[i].chain.frames = c->a[i].chain.n ? c->frames + (uintptr_t)c->a[i].chain.frames : NULL;
	c->n = n;
	return c;
bad:
	cp_lines_cache_free(c);
	return NULL;
}

int cp_lines_cache_find(const struct cp_lines_cached *c, uint64_t addr, uint64_t sym_start,
			struct cp_lines_chain *chain)
{
	size_t lo = 0, hi = c ? c->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct answer *a = &c->a[mid];
		if (a->addr == addr && a->sym_start == sym_start) {
			*chain = a->chain;
			return 1;
		}
		if (a->addr < addr || (a->addr == addr && a->sym_start < sym_start))
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void cp_lines_cache_free(struct cp_lines_cached *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c->a);
	free(c->frames);
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

static void wr_answer(struct wr *w, uint64_t addr, uint64_t sym_start, const struct cp_lines_chain *ch)
{
	uint8_t k = (uint8_t)ch->n;
	wr(w, &addr, 8);
	wr(w, &sym_start, 8);
	wr(w, &k, 1);
	for (uint32_t j = 0; j < ch->n; j++) {
		const struct cp_lines_frame *f = &ch->frames[j];
		wr(w, &f->line, 4);
		wr(w, &f->start_line, 4);
		wr_str(w, f->name);
		wr_str(w, f->linkage);
		wr_str(w, f->file);
	}
}

struct fresh {
	uint64_t addr, sym_start;
	size_t q;
};

static int fresh_cmp(const void *x, const void *y)
{
	const struct fresh *a = x, *b = y;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->sym_start < b->sym_start ? -1 : a->sym_start > b->sym_start;
}

void cp_lines_cache_save(const char *path, const char *build_id, const char *source,
			 const struct cp_lines_cached *c, const struct cp_lines_query *q,
			 const struct cp_lines_chain *chains, const size_t *idx, size_t n)
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
	struct fresh *f = malloc(n * sizeof *f);
	if (!f)
		return;
	size_t nf = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cp_lines_query *x = &q[idx[i]];
		if (chains[idx[i]].n <= CP_LINES_MAX_DEPTH)
			f[nf++] = (struct fresh){ x->addr, x->sym_start, idx[i] };
	}
	qsort(f, nf, sizeof *f, fresh_cmp);
	struct wr w = { 0 };
	uint32_t order = 0x01020304, code = (uint32_t)CP_LINES_CODE, total = 0;
	wr(&w, MAGIC, 8);
	wr(&w, &order, 4);
	wr(&w, &code, 4);
	wr(&w, &id, sizeof id);
	size_t at_total = w.len;
	wr(&w, &total, 4);
	wr_str(&w, path);
	wr_str(&w, source);
	/* Merge the kept answers with the new, both sorted; a key asked
	 * again (it was not found: it cannot be in both) is written once. */
	size_t i = 0, j = 0;
	while (!w.failed && (i < (c ? c->n : 0) || j < nf)) {
		const struct answer *a = c && i < c->n ? &c->a[i] : NULL;
		const struct fresh *b = j < nf ? &f[j] : NULL;
		if (b && j + 1 < nf && !fresh_cmp(b, b + 1)) {
			j++;
			continue;
		}
		int take_old = a && (!b || a->addr < b->addr ||
				     (a->addr == b->addr && a->sym_start < b->sym_start));
		if (take_old) {
			wr_answer(&w, a->addr, a->sym_start, &a->chain);
			i++;
		} else {
			if (a && a->addr == b->addr && a->sym_start == b->sym_start)
				i++;
			wr_answer(&w, b->addr, b->sym_start, &chains[b->q]);
			j++;
		}
		total++;
	}
	free(f);
	if (w.failed) {
		free(w.buf);
		return;
	}
	memcpy(w.buf + at_total, &total, 4);
	cp_cache_write(dir, build_id, w.buf, w.len);
	free(w.buf);
}
