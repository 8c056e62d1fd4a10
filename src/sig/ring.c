/*
 * ring.c -- SIGNAL CONTEXT.  The sample ring: a bounded multi-producer queue
 * in the manner of Vyukov's, each cell carrying a sequence number that says
 * whose turn it is.  seq == pos: free for the producer claiming pos;
 * pos + 1: committed, for the consumer; pos + cells: free for the next lap.
 * A cell stores its sequence number less its own index, so that zeroed
 * memory is a ring whose every cell is free for the first lap: laying a
 * ring out writes its header only, and a cell's page is first touched by
 * the sample that fills it.
 */
#include "ring.h"

#include <sys/mman.h>

/* Bounded retries when producers race for the same cell: past them the
 * sample is lost rather than spun for. */
#define CLAIM_TRIES 8

static struct cp_sample *cell_at(struct cp_ring *r, uint64_t pos)
{
	return (struct cp_sample *)(r->mem + (pos & (r->cells - 1)) * r->cell_size);
}

/* The cell's sequence number, stored less its index. */
static uint64_t seq_of(const struct cp_ring *r, struct cp_sample *c, memory_order mo)
{
	uint64_t idx = (uint64_t)((const unsigned char *)c - r->mem) / r->cell_size;
	return atomic_load_explicit(&c->seq, mo) + idx;
}

static void set_seq(const struct cp_ring *r, struct cp_sample *c, uint64_t seq, memory_order mo)
{
	uint64_t idx = (uint64_t)((const unsigned char *)c - r->mem) / r->cell_size;
	atomic_store_explicit(&c->seq, seq - idx, mo);
}

static size_t cell_bytes(unsigned depth)
{
	return (sizeof(struct cp_sample) + depth * sizeof(uintptr_t) + 63) & ~(size_t)63;
}

static size_t round_cells(size_t cells)
{
	size_t n = 1;
	while (n < cells)
		n <<= 1;
	return n;
}

size_t cp_ring_size(size_t cells, unsigned depth)
{
	return sizeof(struct cp_ring) + round_cells(cells) * cell_bytes(depth);
}

struct cp_ring *cp_ring_init(void *mem, size_t cells, unsigned depth, int zeroed)
{
	struct cp_ring *r = mem;
	size_t n = round_cells(cells);
	r->cells = n;
	r->cell_size = cell_bytes(depth);
	r->depth = depth;
	r->map_size = 0;
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	/* Zero cells are each free for their first lap. */
	if (!zeroed)
		for (size_t i = 0; i < n; i++)
			atomic_store_explicit(&cell_at(r, i)->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	return r;
}

struct cp_ring *cp_ring_create(size_t cells, unsigned depth)
{
	size_t size = cp_ring_size(cells, depth);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct cp_ring *r = cp_ring_init(p, cells, depth, 1);
	r->map_size = size;
	return r;
}

void cp_ring_destroy(struct cp_ring *r)
{
	if (r && r->map_size)
		munmap(r, r->map_size);
}

/* Signal context. */
struct cp_sample *cp_ring_claim(struct cp_ring *r)
{
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
	for (int i = 0; i < CLAIM_TRIES; i++) {
		struct cp_sample *c = cell_at(r, pos);
		uint64_t seq = seq_of(r, c, memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);
		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				return c;
			/* pos now holds the current head: try again there. */
		} else if (diff < 0) {
			return NULL; /* full: the consumer has not freed this cell */
		} else {
			pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		}
	}
	return NULL;
}

/* Signal context.  The claimer owns the cell, whose seq is still its pos. */
void cp_ring_commit(struct cp_ring *r, struct cp_sample *s)
{
	uint64_t pos = seq_of(r, s, memory_order_relaxed);
	set_seq(r, s, pos + 1, memory_order_release);
}

/* The consumer's position: it alone moves it, so relaxed is enough. */
static uint64_t tail_of(const struct cp_ring *r)
{
	return atomic_load_explicit(&((struct cp_ring *)r)->tail, memory_order_relaxed);
}

static void advance(struct cp_ring *r, struct cp_sample *c, uint64_t tail)
{
	set_seq(r, c, tail + r->cells, memory_order_release);
	atomic_store_explicit(&r->tail, tail + 1, memory_order_relaxed);
}

struct cp_sample *cp_ring_peek(struct cp_ring *r)
{
	uint64_t tail = tail_of(r);
	struct cp_sample *c = cell_at(r, tail);
	uint64_t seq = seq_of(r, c, memory_order_acquire);
	return seq == tail + 1 ? c : NULL;
}

void cp_ring_release(struct cp_ring *r, struct cp_sample *s)
{
	advance(r, s, tail_of(r));
}

/* Signal context. */
size_t cp_ring_used(const struct cp_ring *r)
{
	uint64_t head = atomic_load_explicit(&((struct cp_ring *)r)->head, memory_order_relaxed);
	uint64_t tail = tail_of(r);
	return head > tail ? (size_t)(head - tail) : 0;
}

/* Not signal context: the consumer's, for a ring whose producer died. */
int cp_ring_skip(struct cp_ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire), tail = tail_of(r);
	if (head <= tail)
		return 0;
	advance(r, cell_at(r, tail), tail);
	return 1;
}
