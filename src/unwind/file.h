/*
 * file.h -- the unwind table of an ELF file or image as it lies on disk,
 * in its link-time addresses: for walking the stacks of another process,
 * whose objects are mapped at addresses of its own (a walk looks a pc up
 * at pc - bias: src/sig/unwind_table.h).  One table serves every process
 * that maps the same file.  Not signal context.
 */
#ifndef CPUPROF_UNWIND_FILE_H
#define CPUPROF_UNWIND_FILE_H

#include <stddef.h>

#include "base/elf.h"
#include "sig/unwind_table.h"

/* The table of e from its .eh_frame_hdr and .eh_frame, covering its
 * executable PT_LOAD segments; its size in *bytes, and *cached set if it
 * came from the table cache (table_cache.h).  NULL with the reason in
 * why[len] (and *rejected set if the .eh_frame was malformed rather than
 * absent). */
struct cp_utab *cp_unwind_table_of_elf(const struct cp_elf *e, size_t *bytes, int *rejected, int *cached,
				       char *why, size_t len);

#endif
