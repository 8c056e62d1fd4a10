/*
 * rwmap.h -- a snapshot of the process's readable and writable mappings
 * (from /proc/self/maps), where the handler finds the stack bounds of
 * threads that did not record them.  Not signal context.
 */
#ifndef CPUPROF_RWMAP_H
#define CPUPROF_RWMAP_H

#include "sig/sigstate.h"

/* Parses maps text (as read from /proc/self/maps) into a sorted snapshot,
 * merging adjacent ranges.  NULL on allocation failure. */
struct cp_rwmap *cp_rwmap_parse(const char *text, size_t len);
/* Reads /proc/self/maps and parses it; NULL if it cannot be read. */
struct cp_rwmap *cp_rwmap_snapshot(void);
void cp_rwmap_free(struct cp_rwmap *m);

#endif
