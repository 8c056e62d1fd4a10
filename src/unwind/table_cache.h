/*
 * table_cache.h -- unwind tables kept on disk, so that the next
 * `cpuprof record` (file.h) or profiled process (tables.c) does not parse
 * and encode the same .eh_frame again: libc's is about 3,700 FDEs, 4 ms to build at best (6 ms in a
 * record's first walk, with the page faults), where reading back its
 * 37 KB table, with the CRCs that check it, takes 0.26 ms.
 *
 * One file per object with a GNU build ID, in the cache "unwind"
 * (base/cachefile.h).  A file is believed only for the same build ID and
 * the same bytes the table is made from (the lengths and CRC-32s of the
 * .eh_frame_hdr, the .eh_frame and the code's ranges: a file changed
 * after it was linked keeps its build ID), from the same encoder (a
 * checksum of its sources, compiled in) on the same architecture; and only
 * if the table's index is consistent (every offset within the table).
 * Tables are kept in the object's link-time addresses, as built from its
 * file; tables.c moves them by the load bias both ways.
 * Not signal context.
 */
#ifndef CPUPROF_UNWIND_TABLE_CACHE_H
#define CPUPROF_UNWIND_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sig/unwind_table.h"

/* What an object's table is made from: its .eh_frame_hdr, its .eh_frame
 * and the ranges of its code the table covers, by length and CRC-32. */
struct cp_utab_source {
	uint64_t hdr_len, eh_len, text_len;
	uint32_t hdr_crc, eh_crc, text_crc;
};

/* Sets *src from those bytes (computed once for a load and a save). */
void cp_utab_source_init(struct cp_utab_source *src, const void *hdr, size_t hdr_len, const void *eh,
			 size_t eh_len, const void *text, size_t text_len);

/* The table kept for the object with build_id made from src (one
 * malloc'd block, as cp_unwind_build gives), its size in *bytes; NULL if
 * none holds. */
struct cp_utab *cp_utab_cache_load(const char *build_id, const struct cp_utab_source *src, size_t *bytes);

/* Keeps t (bytes long) as that object's table.  Silent on failure. */
void cp_utab_cache_save(const char *build_id, const struct cp_utab_source *src, const struct cp_utab *t,
			size_t bytes);

#endif
