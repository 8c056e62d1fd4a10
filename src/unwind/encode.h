/*
 * encode.h -- encodes parsed unwind rows (ehframe.h) into the compact
 * table the signal handler reads (src/sig/unwind_table.h).  Not signal
 * context.
 */
#ifndef CPUPROF_UNWIND_BUILD_H
#define CPUPROF_UNWIND_BUILD_H

#include <stddef.h>

#include "ehframe.h"
#include "sig/unwind_table.h"

/* FDEs per block of the table's index: a lookup decodes at most this many
 * FDE records after its binary search. */
#define UNWIND_BLOCK_FDES 16

/* Builds the table of r (whose addresses are run-time addresses) as one
 * malloc'd block, its size in *bytes.  Returns NULL with a reason in err
 * if r is empty, spans 4 GiB or more, or memory runs out. */
struct cp_utab *cp_unwind_build(const struct ehf_result *r, size_t *bytes, char *err, size_t errlen);

/* Like cp_unwind_build with a chosen block size (for the benchmark). */
struct cp_utab *cp_unwind_build_blocks(const struct ehf_result *r, unsigned block_fdes, size_t *bytes, char *err,
				    size_t errlen);

#endif
