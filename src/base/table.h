/*
 * table.h -- open-addressing hash tables of fixed-size entries (threads,
 * processes, counts by thread and CPU), whose key, read by the table's
 * key_of, is never 0: 0 marks an empty slot.  Linear probing, at most half
 * full, the capacity a power of two.  Not for signal context (calloc).
 */
#ifndef CPUPROF_TABLE_H
#define CPUPROF_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

struct cp_table {
	void *e;                             /* cap entries of `size` bytes */
	size_t n, cap, size;
	uint64_t (*key_of)(const void *entry); /* 0: an empty slot */
};

/* The slot of key: the entry that has it, or the empty one it would go in. */
static inline void *cp_table_slot(const struct cp_table *t, uint64_t key)
{
	size_t i = cp_hash64(key) & (t->cap - 1);
	uint8_t *e = t->e;
	for (;; i = (i + 1) & (t->cap - 1)) {
		uint64_t k = t->key_of(e + i * t->size);
		if (k == 0 || k == key)
			return e + i * t->size;
	}
}

/* The entry of key, or NULL. */
static inline void *cp_table_find(const struct cp_table *t, uint64_t key)
{
	if (!t->cap || key == 0)
		return NULL;
	void *e = cp_table_slot(t, key);
	return t->key_of(e) ? e : NULL;
}

/* The entry of key, or, if there is none, a zeroed slot for it (*made 1),
 * which the caller must give the key at once.  NULL if out of memory. */
static inline void *cp_table_get(struct cp_table *t, uint64_t key, int *made)
{
	*made = 0;
	if (key == 0)
		return NULL;
	void *found = cp_table_find(t, key);
	if (found)
		return found; /* no room needed */
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint8_t *e = calloc(cap, t->size);
		if (!e)
			return NULL;
		struct cp_table bigger = { e, t->n, cap, t->size, t->key_of };
		for (size_t i = 0; i < t->cap; i++) {
			const uint8_t *old = (const uint8_t *)t->e + i * t->size;
			uint64_t k = t->key_of(old);
			if (k)
				memcpy(cp_table_slot(&bigger, k), old, t->size);
		}
		free(t->e);
		*t = bigger;
	}
	void *slot = cp_table_slot(t, key);
	if (!t->key_of(slot)) {
		memset(slot, 0, t->size);
		t->n++;
		*made = 1;
	}
	return slot;
}

/* Frees the entries (not what they point at). */
static inline void cp_table_free(struct cp_table *t)
{
	free(t->e);
	t->e = NULL;
	t->n = t->cap = 0;
}

#endif
