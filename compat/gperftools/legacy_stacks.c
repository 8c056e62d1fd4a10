/*
 * legacy_stacks.c -- the distinct stacks of a profile in the binary format (see
 * legacy_stacks.h): a dense array of stacks in order of first appearance, a pool
 * of their PCs, and an open-addressing index by hash.  Arrays grow with
 * mremap and the index is rebuilt in a fresh mapping, so nothing here
 * calls malloc.
 */
#include <string.h>
#include <sys/mman.h>

#include "legacy_stacks.h"

#define MIN_STACKS 1024
#define MIN_PCS 16384

/* Grows the mapping *p of *cap elements of `size` bytes to hold `need`.
 * Returns 0, or -1 with *p unchanged. */
static int grow(void **p, size_t *cap, size_t need, size_t size, size_t min)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : min;
	while (n < need)
		n *= 2;
	void *q = *cap ? mremap(*p, *cap * size, n * size, MREMAP_MAYMOVE)
		       : mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* Rebuilds the index with `n` slots (a power of two).  Returns 0 or -1. */
static int reindex(struct gpt_stacks *t, size_t n)
{
	uint32_t *s = mmap(NULL, n * sizeof *s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < t->nst; i++) {
		size_t j = t->st[i].hash & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)(i + 1);
	}
	if (t->slot)
		munmap(t->slot, t->nslot * sizeof *t->slot);
	t->slot = s;
	t->nslot = n;
	return 0;
}

static uint64_t hash_pcs(const uint64_t *pcs, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (uint32_t i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

int gpt_stacks_add(struct gpt_stacks *t, const uint64_t *pcs, uint32_t n, uint64_t count)
{
	if ((t->nst + 1) * 2 > t->nslot && reindex(t, t->nslot ? t->nslot * 2 : 2 * MIN_STACKS) < 0)
		return -1;
	uint64_t h = hash_pcs(pcs, n);
	size_t j = h & (t->nslot - 1);
	for (; t->slot[j]; j = (j + 1) & (t->nslot - 1)) {
		struct gpt_stack *s = &t->st[t->slot[j] - 1];
		if (s->hash == h && s->n == n && !memcmp(&t->pcs[s->off], pcs, n * sizeof *pcs)) {
			s->count += count;
			t->total += count;
			return 0;
		}
	}
	if (t->nst >= UINT32_MAX - 1 ||
	    grow((void **)&t->st, &t->cap_st, t->nst + 1, sizeof *t->st, MIN_STACKS) < 0 ||
	    grow((void **)&t->pcs, &t->cap_pcs, t->npcs + n, sizeof *t->pcs, MIN_PCS) < 0)
		return -1;
	struct gpt_stack *s = &t->st[t->nst];
	s->hash = h;
	s->count = count;
	s->off = t->npcs;
	s->n = n;
	memcpy(&t->pcs[t->npcs], pcs, n * sizeof *pcs);
	t->npcs += n;
	t->slot[j] = (uint32_t)++t->nst;
	t->total += count;
	return 0;
}

void gpt_stacks_free(struct gpt_stacks *t)
{
	if (t->st)
		munmap(t->st, t->cap_st * sizeof *t->st);
	if (t->slot)
		munmap(t->slot, t->nslot * sizeof *t->slot);
	if (t->pcs)
		munmap(t->pcs, t->cap_pcs * sizeof *t->pcs);
	memset(t, 0, sizeof *t);
}
