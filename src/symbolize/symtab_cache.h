/*
 * symtab_cache.h -- function symbol tables (symbols.h) kept on disk, so
 * that the next profile does not read and sort the same .symtab again:
 * libc's debug file (libc6-dbg) has 10,000 symbols, 6,800 of them
 * functions, about 1.3 ms to read, select and sort at best and 3 ms of a
 * record's CPU (cold), where reading back the kept table takes a tenth.
 *
 * One file per object with a GNU build ID, in the cache "symbols"
 * (base/cachefile.h), holding the table as cp_symbols_read_file built it
 * from one file (the object's separate debug file, or the object itself).
 * It is believed only for the same file (its device, inode, size and
 * mtime, by whatever path), read by the same code (a checksum of symbols.c,
 * compiled in), and only if the table is what a build gives: starts
 * strictly increasing, every name inside the names.  Only tables whose
 * file had the object's build ID are kept.  Not for signal context.
 */
#ifndef CPUPROF_SYMTAB_CACHE_H
#define CPUPROF_SYMTAB_CACHE_H

#include "symbols.h"

/* The table kept for the object with build_id, read from the file at
 * path, into *t; 0, or -1 if none holds. */
int cp_symtab_cache_load(const char *build_id, const char *path, struct cp_symtab *t);

/* Keeps t, read from the file at path, as that object's.  Silent on
 * failure. */
void cp_symtab_cache_save(const char *build_id, const char *path, const struct cp_symtab *t);

#endif
