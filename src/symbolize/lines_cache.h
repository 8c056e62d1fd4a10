/*
 * lines_cache.h -- the answers of earlier line lookups (lines.h), kept on
 * disk per object, so that a program profiled again, or the next process
 * of a build, does not read the same DWARF again.  Reading a
 * distribution's debug file is most of the cost of a short profile: libc's
 * (libc6-dbg) is 4 MB of zlib-compressed sections that libdw inflates whole
 * (about 60 ms) before the first lookup.
 *
 * One file per object with a GNU build ID, $XDG_CACHE_HOME/cpuprof/lines/
 * BUILDID (else ~/.cache/...; no cache when neither is set, as under
 * env -i), holding the answers for the addresses asked so far, each with
 * the range of addresses it holds for (lines.h: the line-table row, cut
 * to its inline scopes), so that an address never asked before, in a row
 * one was, costs no reading of the DWARF either.  A file is
 * believed only while everything its answers came from is unchanged: the
 * object's file (its path, or another path to the same device and inode:
 * record and the preloaded library name libc by different paths on a
 * usrmerged system), the DWARF file's identity (device, inode, size, mtime)
 * and cpuprof's DWARF reader (a checksum of lines.c, compiled in).  Only
 * answers from a reading that met no trouble are kept.  Files are replaced
 * whole (written aside, then renamed), owned by the user and read only if
 * theirs; a file that does not parse is ignored.  Not for signal context.
 */
#ifndef CPUPROF_LINES_CACHE_H
#define CPUPROF_LINES_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "lines.h"

/* One object's kept answers, as loaded. */
struct cp_lines_cached;

/* The answers kept for the object at path with build_id, or NULL (no
 * build ID, no cache, or one that no longer holds). */
struct cp_lines_cached *cp_lines_cache_load(const char *path, const char *build_id);

/* 1 with *chain (frames valid until cp_lines_cache_free) and *span if c
 * holds an answer whose span holds (addr, sym_start), else 0. */
int cp_lines_cache_find(const struct cp_lines_cached *c, uint64_t addr, uint64_t sym_start,
			struct cp_lines_chain *chain, struct cp_lines_span *span);

/* Keeps c's answers (c may be NULL) and the n new ones, chains[i] holding
 * over spans[i] for the i in idx[0..n) (those with an empty span are left
 * out), as the object's file; `source` is the file its DWARF was read
 * from.  Silent on failure: a cache. */
void cp_lines_cache_save(const char *path, const char *build_id, const char *source,
			 const struct cp_lines_cached *c, const struct cp_lines_chain *chains,
			 const struct cp_lines_span *spans, const size_t *idx, size_t n);

void cp_lines_cache_free(struct cp_lines_cached *c);

#endif
