/*
 * unpack.c -- zstd-compressed debug sections and xz streams (unpack.h).
 * Both libraries are loaded at run time through prototypes declared here
 * (the few functions used, stable since libzstd 1.0 and liblzma 5.0), so
 * that neither their headers are needed to build nor the libraries to
 * run.  Why inflate zstd sections ourselves rather than only say why an
 * object has no lines: Debian 12's libdw is 0.188, zstd is what binutils
 * 2.40 and GCC 13 offer next to zlib and what newer distributions build
 * with, and libzstd.so.1 is on every Debian system (dpkg needs it); an
 * inflated copy in memory handed to libdw (elf_memory) is all it takes,
 * and where the library is missing the object still says why.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "base/elf.h"
#include "base/error.h"
#include "base/testhooks.h"
#include "unpack.h"

const char *cp_unpack_zstd_soname = "libzstd.so.1";
const char *cp_unpack_xz_soname = "liblzma.so.5";

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

/* A library loaded once (never unloaded) and the functions wanted of it;
 * state 1 loaded, -1 not, with the reason in why. */
struct lib {
	int state;
	char why[160];
};

static void *lib_load(struct lib *l, const char *soname, const char *const *names, void **fns, size_t n)
{
	if (l->state)
		return l->state > 0 ? fns : NULL;
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(l->why, sizeof l->why, "%s not loaded (%s)", soname, e ? e : "not found");
		l->state = -1;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!(fns[i] = dlsym(h, names[i]))) {
			snprintf(l->why, sizeof l->why, "%s has no %s", soname, names[i]);
			l->state = -1;
			return NULL;
		}
	l->state = 1;
	return fns;
}

/* ---- zstd --------------------------------------------------------------- */

static struct lib zstd_lib;
static struct {
	size_t (*decompress)(void *dst, size_t dstlen, const void *src, size_t srclen);
	unsigned (*is_error)(size_t code);
	const char *(*error_name)(size_t code);
} zstd;

static int zstd_load(char *why, size_t len)
{
	static const char *const names[] = { "ZSTD_decompress", "ZSTD_isError", "ZSTD_getErrorName" };
	void *fns[3];
	if (zstd_lib.state > 0)
		return 0;
	if (!lib_load(&zstd_lib, cp_unpack_zstd_soname, names, fns, 3)) {
		cp_why(why, len, "%s", zstd_lib.why);
		return -ENOENT;
	}
	memcpy(&zstd.decompress, &fns[0], sizeof fns[0]);
	memcpy(&zstd.is_error, &fns[1], sizeof fns[1]);
	memcpy(&zstd.error_name, &fns[2], sizeof fns[2]);
	return 0;
}

void cp_unpack_prepare(void)
{
	zstd_load(NULL, 0);
}

/* Reads [off, off + n) of the file into a new buffer (NULL: an error). */
static void *read_at(const struct cp_elf *f, uint64_t off, uint64_t n)
{
	if (n >= CP_UNPACK_MAX)
		return NULL;
	void *p = malloc(n ? (size_t)n : 1);
	if (p && cp_elf_read(f, off, p, n) != 0) {
		free(p);
		p = NULL;
	}
	return p;
}

/* Is section header h (whose compression header, if any, is read into
 * *ch) a compressed section this call inflates? */
static int wanted(const struct cp_elf *f, const ElfW(Shdr) *h, ElfW(Chdr) *ch, int zlib_too)
{
	return (h->sh_flags & SHF_COMPRESSED) && h->sh_type != SHT_NOBITS && h->sh_size >= sizeof *ch &&
	       cp_elf_read(f, h->sh_offset, ch, sizeof *ch) == 0 &&
	       (ch->ch_type == ELFCOMPRESS_ZSTD || (zlib_too && ch->ch_type == ELFCOMPRESS_ZLIB));
}

/* The section headers (malloc'd) of the regular file at fd, a native ELF
 * file, with *f set to read it and *eh its header; NULL for anything else
 * (an extended section count too: none ship so). */
static ElfW(Shdr) *native_sections(int fd, struct cp_elf *f, ElfW(Ehdr) *eh)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	*f = (struct cp_elf){ .fd = fd, .size = (uint64_t)st.st_size };
	if (cp_elf_read(f, 0, eh, sizeof *eh) != 0 || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELF_CLASS_NATIVE || eh->e_ident[EI_DATA] != ELF_DATA_NATIVE ||
	    eh->e_shnum == 0 || eh->e_shentsize != sizeof(ElfW(Shdr)))
		return NULL;
	return read_at(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)));
}

int cp_unpack_compressed(int fd)
{
	struct cp_elf f;
	ElfW(Ehdr) eh;
	ElfW(Shdr) *sh = native_sections(fd, &f, &eh);
	int found = 0;
	for (size_t i = 0; sh && i < eh.e_shnum && !found; i++)
		found = (sh[i].sh_flags & SHF_COMPRESSED) && sh[i].sh_type != SHT_NOBITS;
	free(sh);
	return found;
}

int cp_unpack_zstd_elf(int fd, void **image, size_t *size, char *why, size_t len)
{
	return cp_unpack_elf(fd, NULL, image, size, why, len);
}

/* Counts the sections to inflate of the n headers sh (zstd, and zlib if
 * zlib_too) into *nz (*nzstd of them zstd) and what they inflate to into
 * *extra.  0, or -EFBIG with the reason. */
static int measure(const struct cp_elf *f, const ElfW(Shdr) *sh, size_t n, int zlib_too, uint64_t *extra,
		   size_t *nz, size_t *nzstd, char *why, size_t len)
{
	*extra = 0;
	*nz = *nzstd = 0;
	for (size_t i = 0; i < n; i++) {
		ElfW(Chdr) ch;
		if (!wanted(f, &sh[i], &ch, zlib_too))
			continue;
		*nzstd += ch.ch_type == ELFCOMPRESS_ZSTD;
		if (ch.ch_size > CP_UNPACK_MAX || *extra + ch.ch_size + 16 > CP_UNPACK_MAX)
			return cp_why(why, len, "compressed section of %llu bytes: too large",
				      (unsigned long long)ch.ch_size), -EFBIG;
		*extra += ch.ch_size + 16;
		(*nz)++;
	}
	return 0;
}

int cp_unpack_elf(int fd, int (*room)(uint64_t size), void **image, size_t *size, char *why, size_t len)
{
	*image = NULL;
	*size = 0;
	struct cp_elf f;
	ElfW(Ehdr) eh;
	ElfW(Shdr) *sh = native_sections(fd, &f, &eh);
	if (!sh)
		return 0; /* no sections to inflate */
	size_t shnum = eh.e_shnum;
	/* What the sections inflate to: with the zlib ones only if an image
	 * that large may be kept. */
	uint64_t extra = 0;
	size_t nz = 0, nzstd = 0;
	int zlib_too = room != NULL, rc;
	rc = measure(&f, sh, shnum, zlib_too, &extra, &nz, &nzstd, why, len);
	if (zlib_too && (rc != 0 || (nz > nzstd && !room((f.size + 15) + extra + shnum * sizeof *sh)))) {
		zlib_too = 0;
		rc = measure(&f, sh, shnum, zlib_too, &extra, &nz, &nzstd, why, len);
	}
	if (rc != 0 || nz == 0) {
		free(sh);
		return rc;
	}
	rc = nzstd ? zstd_load(why, len) : 0;
	if (rc != 0) {
		free(sh);
		return rc;
	}
	uint64_t base = (f.size + 15) & ~(uint64_t)15;
	uint64_t total = base + extra + shnum * sizeof *sh;
	if (total > CP_UNPACK_MAX + f.size + (1u << 20) || total > SIZE_MAX) {
		free(sh);
		return cp_why(why, len, "too large to inflate"), -EFBIG;
	}
	unsigned char *img = calloc(1, (size_t)total);
	if (!img) {
		free(sh);
		return cp_why(why, len, "out of memory inflating its zstd sections"), -ENOMEM;
	}
	rc = cp_elf_read(&f, 0, img, f.size);
	uint64_t at = base;
	for (size_t i = 0; i < shnum && rc == 0; i++) {
		ElfW(Chdr) ch;
		if (!wanted(&f, &sh[i], &ch, zlib_too))
			continue;
		const char *kind = ch.ch_type == ELFCOMPRESS_ZSTD ? "zstd" : "zlib";
		/* The whole section lies in the file: it was read above. */
		if (sh[i].sh_offset > f.size || sh[i].sh_size > f.size - sh[i].sh_offset) {
			rc = -ENOEXEC;
			cp_why(why, len, "a %s-compressed section lies outside the file", kind);
			break;
		}
		unsigned char *src = img + sh[i].sh_offset + sizeof ch;
		size_t srclen = (size_t)(sh[i].sh_size - sizeof ch);
		if (ch.ch_type == ELFCOMPRESS_ZSTD) {
			size_t got = zstd.decompress(img + at, (size_t)ch.ch_size, src, srclen);
			if (zstd.is_error(got) || got != ch.ch_size) {
				rc = -ENOEXEC;
				cp_why(why, len, "a zstd-compressed section does not inflate: %s",
				       zstd.is_error(got) ? zstd.error_name(got) : "shorter than its header says");
				break;
			}
		} else {
			uLongf got = (uLongf)ch.ch_size;
			int z = srclen > UINT32_MAX ? Z_DATA_ERROR : uncompress(img + at, &got, src, (uLong)srclen);
			if (z != Z_OK || got != ch.ch_size) {
				rc = -ENOEXEC;
				cp_why(why, len, "a zlib-compressed section does not inflate: %s",
				       z != Z_OK ? zError(z) : "shorter than its header says");
				break;
			}
		}
		/* Its compressed bytes are read by no one now: zeros, which a
		 * copy on disk keeps as a hole (debugcopy.c). */
		memset(img + sh[i].sh_offset, 0, (size_t)sh[i].sh_size);
		sh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		sh[i].sh_offset = at;
		sh[i].sh_size = ch.ch_size;
		sh[i].sh_addralign = ch.ch_addralign ? ch.ch_addralign : 1;
		at = (at + ch.ch_size + 15) & ~(uint64_t)15;
	}
	if (rc != 0) {
		free(sh);
		free(img);
		return rc;
	}
	ElfW(Ehdr) *ne = (ElfW(Ehdr) *)img;
	ne->e_shoff = at;
	memcpy(img + at, sh, shnum * sizeof *sh);
	free(sh);
	*image = img;
	*size = (size_t)(at + shnum * sizeof *sh);
	cp_test_count(cp_test_inflated, 1);
	return 1;
}

/* ---- xz ----------------------------------------------------------------- */

static struct lib xz_lib;
/* lzma_stream_buffer_decode(memlimit, flags, allocator, in, in_pos,
 * in_size, out, out_pos, out_size), returning an lzma_ret. */
static int (*xz_decode)(uint64_t *, uint32_t, const void *, const uint8_t *, size_t *, size_t, uint8_t *,
			size_t *, size_t);

enum { LZMA_OK_ = 0, LZMA_MEMLIMIT_ERROR_ = 6, LZMA_FORMAT_ERROR_ = 7, LZMA_DATA_ERROR_ = 9,
       LZMA_BUF_ERROR_ = 10 };

int cp_unpack_xz(const void *in, size_t inlen, size_t max, void **out, size_t *outlen, char *why, size_t len)
{
	static const char *const names[] = { "lzma_stream_buffer_decode" };
	void *fn;
	*out = NULL;
	*outlen = 0;
	if (!xz_decode) {
		if (!lib_load(&xz_lib, cp_unpack_xz_soname, names, &fn, 1))
			return cp_why(why, len, "%s", xz_lib.why), -ENOENT;
		memcpy(&xz_decode, &fn, sizeof fn);
	}
	/* The output's size is in the stream's index, at its end; simpler to
	 * try a buffer and double it while it is too small. */
	size_t cap = inlen < (1u << 20) ? (size_t)4 << 20 : inlen * 4;
	for (;;) {
		if (cap > max)
			cap = max;
		uint8_t *buf = malloc(cap);
		if (!buf)
			return cp_why(why, len, "out of memory"), -ENOMEM;
		uint64_t memlimit = (uint64_t)256 << 20;
		size_t ip = 0, op = 0;
		int r = xz_decode(&memlimit, 0, NULL, in, &ip, inlen, buf, &op, cap);
		if (r == LZMA_OK_) {
			*out = buf;
			*outlen = op;
			return 0;
		}
		free(buf);
		if (r == LZMA_BUF_ERROR_ && cap < max) {
			cap = cap > max / 2 ? max : cap * 2;
			continue;
		}
		return cp_why(why, len, "%s",
			      r == LZMA_BUF_ERROR_ ? "its xz stream inflates to more than allowed" :
			      r == LZMA_FORMAT_ERROR_ ? "not an xz stream" :
			      r == LZMA_DATA_ERROR_ ? "its xz stream is corrupt" :
			      r == LZMA_MEMLIMIT_ERROR_ ? "its xz stream needs too much memory" :
							   "its xz stream does not inflate"), -ENOEXEC;
	}
}
