/*
 * cachefile.h -- files of cpuprof's on-disk caches (the lines cache, the
 * unwind table cache, the symbol table cache): where they live, and reading and writing one whole,
 * with a CRC-32 that a damaged or cut file fails.  A cache lives in
 * $XDG_CACHE_HOME/cpuprof/KIND/ (else ~/.cache/cpuprof/KIND/; none when
 * neither is set, as under env -i), a directory of the user's own, mode
 * 0700; a file is read only if it is a regular file of the user's, and
 * replaced whole (written aside, then renamed).  Not for signal context.
 */
#ifndef CPUPROF_CACHEFILE_H
#define CPUPROF_CACHEFILE_H

#include <stddef.h>
#include <stdint.h>

/* The directory of the cache `kind` into dir[len], made if missing and
 * `make`.  0, or -1 if there is none. */
int cp_cache_dir(const char *kind, char *dir, size_t len, int make);

/* Is b a plausible file name for an object's cache: a GNU build ID, in
 * lowercase hex? */
int cp_cache_key_valid(const char *b);

/* The file dir/name, at most max bytes, whose trailing CRC-32 holds:
 * malloc'd, its length without the CRC in *len.  NULL if it is missing,
 * not the user's regular file, too large, or damaged. */
char *cp_cache_read(const char *dir, const char *name, size_t max, size_t *len);

/* Writes buf[len] and its CRC-32 as dir/name.  Silent on failure: a
 * cache. */
void cp_cache_write(const char *dir, const char *name, const void *buf, size_t len);

/* A file as a cache entry made from it is checked against: changed
 * contents change its size or mtime, a replaced file its inode. */
struct cp_cache_file_id {
	uint64_t dev, ino, size, sec, nsec;
};

/* *id of the file at path (symlinks followed); 0, or -1 if it cannot be
 * stat'ed. */
int cp_cache_file_id(const char *path, struct cp_cache_file_id *id);

#endif
