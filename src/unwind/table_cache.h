/*
 * table_cache.h -- unwind tables of files (file.h) kept on disk, so that
 * the next `cpuprof record` does not parse and encode the same .eh_frame
 * again: libc's is about 3,700 FDEs, 3 to 7 ms of a short record's CPU,
 * where reading back its 37 KB table costs a tenth of a millisecond.
 *
 * One file per object with a GNU build ID, in the cache "unwind"
 * (base/cachefile.h).  A file is believed only for the same build ID and
 * the same .eh_frame_hdr (its length and CRC-32: the search table lists
 * every FDE's start, so any change of the code's layout changes it), from
 * the same encoder (a checksum of its sources, compiled in) on the same
 * architecture; and only if the table's index is consistent (every offset
 * within the table).  Not signal context.
 */
#ifndef CPUPROF_UNWIND_TABLE_CACHE_H
#define CPUPROF_UNWIND_TABLE_CACHE_H

#include <stddef.h>

#include "sig/unwind_table.h"

/* The table kept for the object with build_id whose .eh_frame_hdr is
 * hdr[hdr_len] (one malloc'd block, as cp_unwind_build gives), its size in
 * *bytes; NULL if none holds. */
struct cp_utab *cp_utab_cache_load(const char *build_id, const void *hdr, size_t hdr_len, size_t *bytes);

/* Keeps t (bytes long) as that object's table.  Silent on failure. */
void cp_utab_cache_save(const char *build_id, const void *hdr, size_t hdr_len, const struct cp_utab *t,
			size_t bytes);

#endif
