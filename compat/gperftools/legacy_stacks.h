/*
 * legacy_stacks.h -- the distinct stacks of a profile in the binary format, each
 * with its count of sampling periods.  The memory is mmap'd, never
 * malloc'd, so that ProfilerFlush() can read the table from a signal
 * handler without meeting a malloc lock the interrupted code holds.
 */
#ifndef GPT_STACKS_H
#define GPT_STACKS_H

#include <stddef.h>
#include <stdint.h>

struct gpt_stack {
	uint64_t hash;
	uint64_t count; /* sampling periods */
	uint64_t off;   /* its PCs: pcs[off .. off + n) */
	uint32_t n;
};

struct gpt_stacks {
	struct gpt_stack *st; /* in order of first appearance */
	size_t nst, cap_st;
	uint32_t *slot;       /* open addressing: index + 1 into st, 0 if empty */
	size_t nslot;         /* a power of two, at least twice nst */
	uint64_t *pcs;
	size_t npcs, cap_pcs;
	uint64_t total;       /* the sum of the counts */
};

/* Adds `count` periods to the stack pcs[0..n) (the interrupted PC first).
 * Returns 0, or -1 if memory ran out (the sample is then not counted). */
int gpt_stacks_add(struct gpt_stacks *t, const uint64_t *pcs, uint32_t n, uint64_t count);

/* Frees the table's memory and empties it.  Async-signal-safe. */
void gpt_stacks_free(struct gpt_stacks *t);

#endif
