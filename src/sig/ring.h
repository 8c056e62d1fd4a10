/*
 * ring.h -- SIGNAL CONTEXT.  A fixed-size, lock-free, multi-producer ring of
 * samples (a bounded queue with a sequence number per cell).  Producers are
 * signal handlers on any thread: they never block and never retry without
 * bound; a full or contended ring makes the caller count a lost sample.
 * The single consumer (the drain, serialised by its caller) never blocks
 * either: a cell claimed but not yet committed ends that drain.
 */
#ifndef CPUPROF_RING_H
#define CPUPROF_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct cp_sample {
	_Atomic uint64_t seq;       /* the ring's (ring.c), less the cell's index */
	uint64_t weight_ns; /* CPU time the sample stands for */
	uint64_t time;      /* CLOCK_MONOTONIC ns when taken (off-CPU: when the thread left the CPU) */
	uint32_t tid;       /* the sampled thread */
	uint16_t n;         /* pcs */
	uint16_t flags;     /* CP_SAMPLE_* */
	uint32_t gen;       /* the loaded objects' generation when it was taken */
	uintptr_t pcs[];
};

struct cp_ring {
	_Alignas(64) _Atomic uint64_t head; /* next cell to claim */
	_Alignas(64) _Atomic uint64_t tail; /* next cell to consume: the consumer's alone to move */
	size_t cells;                       /* power of two */
	size_t cell_size;                   /* bytes */
	unsigned depth;                     /* pcs per cell */
	size_t map_size;
	_Alignas(64) unsigned char mem[];
};

/* The bytes a ring of at least `cells` samples of `depth` pcs takes. */
size_t cp_ring_size(size_t cells, unsigned depth);
/* Lays such a ring out in mem[0..cp_ring_size()) (maybe shared with
 * another process) and returns it.  If the memory is `zeroed` (fresh from
 * mmap) only the header is written: no page of a cell is touched before a
 * sample fills it.  map_size is left 0: the
 * memory is the caller's. */
struct cp_ring *cp_ring_init(void *mem, size_t cells, unsigned depth, int zeroed);
/* Maps a ring of its own (not signal context, but async-signal-safe: mmap
 * only).  NULL on failure. */
struct cp_ring *cp_ring_create(size_t cells, unsigned depth);
/* Unmaps a ring from cp_ring_create(); rings laid out by cp_ring_init()
 * are left alone. */
void cp_ring_destroy(struct cp_ring *r);

/* Claims a cell to fill, or NULL if the ring is full or contended. */
struct cp_sample *cp_ring_claim(struct cp_ring *r);
/* Publishes a claimed cell to the consumer. */
void cp_ring_commit(struct cp_ring *r, struct cp_sample *s);
/* The oldest committed sample, or NULL; release it with cp_ring_release. */
struct cp_sample *cp_ring_peek(struct cp_ring *r);
void cp_ring_release(struct cp_ring *r, struct cp_sample *s);
/* For a consumer whose producers are gone (a process that died in the
 * middle of a sample): gives the cell at the tail up, committed or not.
 * Returns 1 if there was one, 0 if the ring is empty. */
int cp_ring_skip(struct cp_ring *r);
/* Samples claimed but not yet consumed (approximate while producers run). */
size_t cp_ring_used(const struct cp_ring *r);

#endif
