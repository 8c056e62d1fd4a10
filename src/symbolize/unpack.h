/*
 * unpack.h -- the compressions that debug information ships in and that
 * Debian 12's libdw (0.188) cannot undo: zstd-compressed debug sections
 * (objcopy --compress-debug-sections=zstd, GCC 13's -gz=zstd; libdw
 * inflates them from 0.189 on) and the xz-compressed ELF of MiniDebugInfo
 * (.gnu_debugdata, which libdw never reads).  libzstd.so.1 and
 * liblzma.so.5 are loaded with dlopen at the first use, as libdw is: a
 * host without them profiles, and the object that needed one says why it
 * has no lines or names.  Every size is checked against the input's and
 * a bound.  Not signal context.
 */
#ifndef CPUPROF_UNPACK_H
#define CPUPROF_UNPACK_H

#include <stddef.h>
#include <stdint.h>

/* Largest output accepted (of one section or one xz stream). */
#define CP_UNPACK_MAX ((size_t)1 << 31)

/* If the ELF file open at fd has zstd-compressed sections (SHF_COMPRESSED,
 * ELFCOMPRESS_ZSTD), a malloc'd image of it in *image (*size bytes) with
 * them inflated: the file's bytes as they are, the inflated sections after
 * them and a new section header table last, so its program headers still
 * hold.  Returns 1 with the image, 0 if the file has no such section (or
 * is no ELF file of this machine's: the caller's reader says so), or a
 * negative errno with the reason in why[len]. */
int cp_unpack_zstd_elf(int fd, void **image, size_t *size, char *why, size_t len);

/* The same, with its zlib-compressed sections inflated as well (which
 * libdw inflates itself, in memory, at every open) if room is given and
 * says an image of that size may be kept (a copy on disk, debugcopy.h).
 * The compressed bytes of the sections inflated are zeros in the image. */
int cp_unpack_elf(int fd, int (*room)(uint64_t size), void **image, size_t *size, char *why, size_t len);

/* 1 if the ELF file open at fd has a compressed section (zlib or zstd),
 * else 0. */
int cp_unpack_compressed(int fd);

/* Loads libzstd now if it is not yet (quietly: a file that needs it says
 * so when it does): the lines child (lines_child.c) inflates after a
 * fork, where loading a library is not safe. */
void cp_unpack_prepare(void);

/* The xz stream in[0..inlen) inflated into a malloc'd *out (*outlen
 * bytes, at most max).  0, or a negative errno with the reason in
 * why[len]. */
int cp_unpack_xz(const void *in, size_t inlen, size_t max, void **out, size_t *outlen,
		 char *why, size_t len);

/* Internal, for tests: the names dlopen'ed ("libzstd.so.1",
 * "liblzma.so.5"). */
extern const char *cp_unpack_zstd_soname, *cp_unpack_xz_soname;

#endif
