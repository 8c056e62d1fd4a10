/*
 * legacy.h -- writing gperftools' binary CPU profile (legacy.c).
 */
#ifndef GPT_LEGACY_H
#define GPT_LEGACY_H

#include <stddef.h>
#include <stdint.h>

#include "legacy_stacks.h"

/* Writes the whole profile of table t, sampled every period_us
 * microseconds, into fd from its start (truncating a regular file first),
 * with the text of /proc/self/maps after it.  *binary gets the size of
 * the part before the map.  Returns 0 or a negative errno.  Uses only
 * system calls and a static buffer: callers take turns, and may be
 * signal handlers. */
int gpt_legacy_write(int fd, const struct gpt_stacks *t, uint64_t period_us, size_t *binary);

#endif
