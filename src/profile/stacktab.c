/*
 * stacktab.c -- the aggregated profile of stacktab.h: distinct stacks in
 * insertion order plus an open-addressing index (linear probing, kept at
 * most half full) from a 64-bit hash of (tid, pcs, n, flags) to their
 * position.
 * Each stack is a struct with its encoded pcs in the flexible array: a
 * sample's stack is encoded first (into the table's scratch), then hashed
 * and compared as those bytes.  The stacks are packed one after the other
 * in blocks, 512 bytes first, each twice the last up to 256 KiB (mapped
 * from 64 KiB): not a malloc each (issue 32: 16 bytes of the allocator's and the
 * rounding up per stack, and a heap that freeing gives back to the system
 * only in part, where an unmapped block is gone at once).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/array.h"
#include "stacktab.h"

/* A block of stacks: this header, then the stacks. */
struct cp_stack_block {
	struct cp_stack_block *next;
	size_t size; /* bytes it has, the header's included */
	size_t used; /* bytes given out, the header's included */
	int mapped;  /* mapped (else malloc'd) */
};

/* The first block, 512 bytes, is malloc'd, as are the next while they are
 * smaller than BLOCK_MAP: a table of a few stacks (record keeps one for
 * each process it saw, a build's thousands) takes what they need, not a
 * page. */
#define BLOCK_FIRST 512u
#define BLOCK_MAP (64u << 10)
#define BLOCK_MAX (256u << 10)

void cp_stacktab_init(struct cp_stacktab *t)
{
	memset(t, 0, sizeof *t);
}

/* Room for a stack of `bytes` in the table's blocks, mapping one more if
 * none after the one being filled has it.  NULL if out of memory (the
 * table unchanged but for a block mapped, empty, for later). */
static struct cp_stack *stack_alloc(struct cp_stacktab *t, size_t bytes)
{
	bytes = (bytes + 7) & ~(size_t)7;
	struct cp_stack_block *b = t->block, *last = NULL;
	while (b && b->used + bytes > b->size) {
		last = b;
		b = b->next;
	}
	if (!b) {
		size_t size = last ? last->size * 2 : BLOCK_FIRST;
		if (size > BLOCK_MAX)
			size = BLOCK_MAX;
		if (size < bytes + sizeof *b)
			size = (bytes + sizeof *b + 4095) & ~(size_t)4095;
		int mapped = size >= BLOCK_MAP;
		void *p = mapped ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
				 : malloc(size);
		if (p == (mapped ? MAP_FAILED : NULL))
			return NULL;
		b = p;
		*b = (struct cp_stack_block){ NULL, size, sizeof *b, mapped };
		if (last)
			last->next = b;
		else
			t->blocks = b;
	}
	t->block = b;
	struct cp_stack *s = (struct cp_stack *)((char *)b + b->used);
	b->used += bytes;
	return s;
}

void cp_stacktab_clear(struct cp_stacktab *t)
{
	for (size_t i = 0; i < t->len; i++)
		cp_times_free(&t->items[i]->times);
	for (struct cp_stack_block *b = t->blocks; b; b = b->next)
		b->used = sizeof *b;
	t->block = t->blocks;
	t->len = 0;
	if (t->index)
		memset(t->index, 0, t->nindex * sizeof *t->index);
	t->total_count = 0;
	t->total_ns = 0;
	t->total_off_count = 0;
	t->total_off_ns = 0;
	t->total_runnable_ns = 0;
}

/* Adds a stack's count and ns to the table's totals: CPU, or off-CPU. */
static void add_totals(struct cp_stacktab *t, uint32_t flags, uint64_t count, uint64_t ns)
{
	if (flags & CP_STACK_OFF_CPU) {
		t->total_off_count += count;
		t->total_off_ns += ns;
		if (flags & CP_STACK_RUNNABLE)
			t->total_runnable_ns += ns;
	} else {
		t->total_count += count;
		t->total_ns += ns;
	}
}

void cp_stacktab_free(struct cp_stacktab *t)
{
	cp_stacktab_clear(t);
	for (struct cp_stack_block *b = t->blocks, *next; b; b = next) {
		next = b->next;
		if (b->mapped)
			munmap(b, b->size);
		else
			free(b);
	}
	free(t->items);
	free(t->index);
	free(t->scratch);
	cp_stacktab_init(t);
}

/* Encodes pcs[n] into out (room for 10 bytes each); returns the bytes. */
static size_t stack_encode(const uintptr_t *pcs, uint32_t n, uint8_t *out)
{
	size_t len = 0;
	uint64_t prev = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t d = (uint64_t)pcs[i] - prev;
		/* zigzag: small differences either way are small numbers */
		uint64_t z = (d << 1) ^ (uint64_t)((int64_t)d >> 63);
		while (z >= 0x80) {
			out[len++] = (uint8_t)(z | 0x80);
			z >>= 7;
		}
		out[len++] = (uint8_t)z;
		prev = (uint64_t)pcs[i];
	}
	return len;
}

void cp_stack_pcs(const struct cp_stack *s, uintptr_t *pcs)
{
	const uint8_t *p = s->code;
	uint64_t prev = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		uint64_t z = 0;
		for (unsigned shift = 0;; shift += 7) {
			uint8_t c = *p++;
			z |= (uint64_t)(c & 0x7f) << shift;
			if (!(c & 0x80))
				break;
		}
		prev += (z >> 1) ^ (0 - (z & 1));
		pcs[i] = (uintptr_t)prev;
	}
}

/* A multiply-xorshift hash over a stack's code, eight bytes at a time. */
static uint64_t stack_hash(uint32_t tid, const uint8_t *code, uint32_t size, uint32_t n, uint32_t flags)
{
	uint64_t h = (0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 32 | flags)) + tid * 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < size; i += 8) {
		uint64_t w = 0;
		memcpy(&w, code + i, size - i < 8 ? size - i : 8);
		h ^= w;
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h;
}

static int stack_equal(const struct cp_stack *s, uint32_t tid, const uint8_t *code, uint32_t size,
		       uint32_t n, uint32_t flags)
{
	return s->tid == tid && s->n == n && s->flags == flags && s->size == size &&
	       (size == 0 || memcmp(s->code, code, size) == 0);
}

/* Slot of the index where (tid, code, n, flags) is, or the empty slot
 * where it would go.  The index must have at least one empty slot. */
static size_t stacktab_slot(const struct cp_stacktab *t, uint64_t h, uint32_t tid,
			    const uint8_t *code, uint32_t size, uint32_t n, uint32_t flags)
{
	size_t mask = t->nindex - 1;
	size_t i = (size_t)h & mask;
	while (t->index[i] != 0) {
		const struct cp_stack *s = t->items[t->index[i] - 1];
		if (stack_equal(s, tid, code, size, n, flags))
			break;
		i = (i + 1) & mask;
	}
	return i;
}

/* Replaces the index with one of nindex slots; on failure the old index
 * stays.  Returns 0 or -ENOMEM. */
static int stacktab_rehash(struct cp_stacktab *t, size_t nindex)
{
	uint32_t *index = calloc(nindex, sizeof *index);
	if (!index)
		return -ENOMEM;
	free(t->index);
	t->index = index;
	t->nindex = nindex;
	for (size_t k = 0; k < t->len; k++) {
		const struct cp_stack *s = t->items[k];
		uint64_t h = stack_hash(s->tid, s->code, s->size, s->n, s->flags);
		size_t i = (size_t)h & (nindex - 1);
		while (index[i] != 0)
			i = (i + 1) & (nindex - 1);
		index[i] = (uint32_t)(k + 1);
	}
	return 0;
}

int cp_stacktab_add(struct cp_stacktab *t, const uintptr_t *pcs, uint32_t n,
		 uint32_t flags, uint64_t count, uint64_t ns)
{
	return cp_stacktab_add_tid(t, 0, pcs, n, flags, count, ns);
}

/* The entry for (tid, code of n pcs, flags), created empty if needed;
 * NULL if out of memory (the table is then unchanged). */
static struct cp_stack *entry_coded(struct cp_stacktab *t, uint32_t tid, const uint8_t *code, uint32_t size,
				    uint32_t n, uint32_t flags)
{
	uint64_t h = stack_hash(tid, code, size, n, flags);
	size_t i = 0;
	if (t->nindex) {
		i = stacktab_slot(t, h, tid, code, size, n, flags);
		if (t->index[i] != 0)
			return t->items[t->index[i] - 1];
	}

	/* A new stack.  Grow what must grow first: each step either fails
	 * leaving the table as it was or succeeds without changing its
	 * contents. */
	if (t->len >= UINT32_MAX - 1)
		return NULL;
	if (cp_array_grow((void **)&t->items, &t->cap, t->len + 1, sizeof *t->items, 64))
		return NULL;
	if ((t->len + 1) * 2 > t->nindex) {
		size_t nindex = t->nindex ? t->nindex * 2 : 128;
		if (nindex > SIZE_MAX / sizeof *t->index ||
		    stacktab_rehash(t, nindex) != 0)
			return NULL;
		i = stacktab_slot(t, h, tid, code, size, n, flags);
	}
	struct cp_stack *s = stack_alloc(t, sizeof *s + size);
	if (!s)
		return NULL;
	*s = (struct cp_stack){ .n = n, .flags = flags, .tid = tid, .size = size };
	if (size)
		memcpy(s->code, code, size);
	t->items[t->len++] = s;
	t->index[i] = (uint32_t)t->len;
	return s;
}

/* The entry for (tid, pcs, n, flags), created empty if needed; NULL if
 * out of memory (the table is then unchanged). */
static struct cp_stack *stacktab_entry(struct cp_stacktab *t, uint32_t tid, const uintptr_t *pcs, uint32_t n,
				       uint32_t flags)
{
	if (n > (UINT32_MAX - 64) / 10 ||
	    cp_array_grow((void **)&t->scratch, &t->capscratch, (size_t)n * 10, 1, 512))
		return NULL;
	size_t size = stack_encode(pcs, n, t->scratch);
	return entry_coded(t, tid, t->scratch, (uint32_t)size, n, flags);
}

int cp_stacktab_add_tid(struct cp_stacktab *t, uint32_t tid, const uintptr_t *pcs, uint32_t n, uint32_t flags,
		     uint64_t count, uint64_t ns)
{
	struct cp_stack *s = stacktab_entry(t, tid, pcs, n, flags);
	if (!s)
		return -ENOMEM;
	s->count += count;
	s->ns += ns;
	add_totals(t, flags, count, ns);
	return 0;
}

int cp_stacktab_add_at(struct cp_stacktab *t, uint32_t tid, const uintptr_t *pcs, uint32_t n, uint32_t flags,
		       uint64_t ns, uint64_t time_ns)
{
	struct cp_stack *s = stacktab_entry(t, tid, pcs, n, flags);
	const struct cp_time_base *b = cp_times_base();
	int rc = s && b ? cp_times_add(&s->times, b, time_ns, ns, (flags & CP_STACK_OFF_CPU) != 0) : 0;
	if (!s || rc == -ENOMEM)
		return -ENOMEM; /* a new entry stays, empty: the writer skips it */
	s->count++;
	s->ns += ns;
	add_totals(t, flags, 1, ns);
	return 0;
}

int cp_stacktab_copy(struct cp_stacktab *dst, const struct cp_stacktab *src)
{
	cp_stacktab_init(dst);
	for (size_t i = 0; i < src->len; i++) {
		const struct cp_stack *s = src->items[i];
		struct cp_stack *d = entry_coded(dst, s->tid, s->code, s->size, s->n, s->flags);
		if (!d || cp_times_copy(&d->times, &s->times) < 0) {
			cp_stacktab_free(dst);
			return -ENOMEM;
		}
		d->count = s->count;
		d->ns = s->ns;
		add_totals(dst, s->flags, s->count, s->ns);
	}
	return 0;
}

uint64_t cp_stacktab_scale_down(struct cp_stacktab *t, double (*factor)(uint32_t tid))
{
	uint64_t before = t->total_ns;
	t->total_ns = 0;
	for (size_t i = 0; i < t->len; i++) {
		struct cp_stack *s = t->items[i];
		if (s->flags & CP_STACK_OFF_CPU)
			continue;
		double f = factor(s->tid);
		if (f < 1.0)
			s->ns = (uint64_t)((double)s->ns * f + 0.5);
		t->total_ns += s->ns;
	}
	return before > t->total_ns ? before - t->total_ns : 0;
}
