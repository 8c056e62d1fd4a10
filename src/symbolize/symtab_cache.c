/*
 * symtab_cache.c -- symbol tables kept on disk (symtab_cache.h).
 *
 * A file, in the machine's byte order: struct head (the magic
 * "CPSYMS\n", u32 0x01020304, u32 the reader's checksum, the source file's
 * identity, the counts), the source's path (for people) and a NUL,
 * n x struct entry,
 * the names (each NUL-terminated); and last (base/cachefile.c) the CRC-32
 * of all before it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cachefile.h"
#include "symtab_cache.h"

#ifndef CP_SYMBOLS_CODE
#error "CP_SYMBOLS_CODE (the checksum of symbols.c) comes from the Makefile"
#endif

#define MAGIC "CPSYMS\n"
#define MAX_FILE (256u << 20)

struct head {
	char magic[8];
	uint32_t order, code;
	struct cp_cache_file_id id;
	uint64_t n, names_len, path_len;
};

struct entry {
	uint64_t start, size, name;
};

/* The head a file read from path (with identity id) must have, but for
 * its counts. */
static void head_of(struct head *h, const struct cp_cache_file_id *id, const char *path)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, MAGIC, 8);
	h->order = 0x01020304;
	h->code = (uint32_t)CP_SYMBOLS_CODE;
	h->id = *id;
	h->path_len = strlen(path);
}

int cp_symtab_cache_load(const char *build_id, const char *path, struct cp_symtab *t)
{
	char dir[4096];
	struct cp_cache_file_id id;
	if (!build_id || !cp_cache_key_valid(build_id) || cp_cache_file_id(path, &id) ||
	    cp_cache_dir("symbols", dir, sizeof dir, 0) != 0)
		return -1;
	size_t len;
	char *buf = cp_cache_read(dir, build_id, MAX_FILE, &len);
	if (!buf)
		return -1;
	struct head want, h;
	head_of(&want, &id, path);
	int rc = -1;
	if (len < sizeof h)
		goto out;
	memcpy(&h, buf, sizeof h);
	/* Everything up to the counts as now: the same file, whatever path
	 * named it (the loader and /proc/PID/maps name a library by /lib
	 * and /usr/lib on a usrmerged system; the library names its program
	 * /proc/self/exe). */
	if (memcmp(&h, &want, offsetof(struct head, n)) || h.n == 0 || h.n > len / sizeof(struct entry) ||
	    h.names_len > len || h.path_len > len ||
	    len != sizeof h + h.path_len + 1 + h.n * sizeof(struct entry) + h.names_len ||
	    buf[sizeof h + h.path_len] != '\0')
		goto out;
	const char *at = buf + sizeof h + h.path_len + 1, *names = at + h.n * sizeof(struct entry);
	if (h.names_len == 0 || names[h.names_len - 1] != '\0')
		goto out;
	t->syms = malloc(h.n * sizeof *t->syms);
	t->names = malloc(h.names_len);
	if (!t->syms || !t->names)
		goto bad;
	memcpy(t->names, names, h.names_len);
	for (uint64_t i = 0; i < h.n; i++) {
		struct entry e;
		memcpy(&e, at + i * sizeof e, sizeof e);
		if (e.name >= h.names_len || e.size == 0 || e.start + e.size < e.start ||
		    (i && e.start <= t->syms[i - 1].start))
			goto bad;
		t->syms[i] = (struct cp_sym){ (uintptr_t)e.start, (uintptr_t)e.size, t->names + e.name };
	}
	t->n = h.n;
	rc = 0;
	goto out;
bad:
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof *t);
out:
	free(buf);
	return rc;
}

void cp_symtab_cache_save(const char *build_id, const char *path, const struct cp_symtab *t)
{
	char dir[4096];
	struct cp_cache_file_id id;
	if (!t->n || !build_id || !cp_cache_key_valid(build_id) || cp_cache_file_id(path, &id) ||
	    cp_cache_dir("symbols", dir, sizeof dir, 1) != 0)
		return;
	struct head h;
	head_of(&h, &id, path);
	h.n = t->n;
	for (size_t i = 0; i < t->n; i++)
		h.names_len += strlen(t->syms[i].name) + 1;
	size_t len = sizeof h + h.path_len + 1 + h.n * sizeof(struct entry) + h.names_len;
	if (len > MAX_FILE)
		return;
	char *buf = malloc(len), *p = buf;
	if (!buf)
		return;
	memcpy(p, &h, sizeof h);
	p += sizeof h;
	memcpy(p, path, h.path_len + 1);
	p += h.path_len + 1;
	char *names = p + h.n * sizeof(struct entry), *q = names;
	for (size_t i = 0; i < t->n; i++) {
		size_t l = strlen(t->syms[i].name) + 1;
		struct entry e = { t->syms[i].start, t->syms[i].size, (uint64_t)(q - names) };
		memcpy(p + i * sizeof e, &e, sizeof e);
		memcpy(q, t->syms[i].name, l);
		q += l;
	}
	cp_cache_write(dir, build_id, buf, len);
	free(buf);
}
