/*
 * shm.h -- the shared memory of `cpuprof record`: the record process
 * creates it, every profiled process of the tree maps it, takes a slot of
 * its own and writes its samples there as it takes them, so that no
 * sample depends on how the process ends.  The layout is shared by the
 * library (src/shm/writer.c, the writer side) and the CLI (cli/record/record.c, the
 * reader side); the reader trusts nothing it reads there.
 *
 * A slot holds one process image (a process, or what it became by exec):
 * who it is, what its profile says about itself (its facts, a seqlock),
 * the objects it loaded (append-only, each with the generation it came
 * in), its threads' names (append-only, the latest entry of a thread
 * wins) and its sample ring (src/sig/ring.h, a cell per sample).  The
 * header has the futex the record process sleeps on and the table of
 * children that profiled processes reaped, with how each ended.
 */
#ifndef CPUPROF_SHM_H
#define CPUPROF_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/facts.h"

#define CP_SHM_MAGIC 0x3170726670637063ull /* "cpcpfrp1" */
#define CP_SHM_VERSION 4 /* 4: samples keep their times, facts their monotonic start */
#define CP_SHM_ENV "CPUPROF_SHM" /* its path, for the profiled processes */

#define CP_SHM_PATH_MAX 512  /* an object's path, cut if longer */
#define CP_SHM_BUILD_ID 129  /* build IDs as hex (symbols.h keeps 64 bytes), and the NUL */
#define CP_SHM_MAX_SEGS 4    /* executable segments kept per object */
#define CP_SHM_MAX_OBJS 512  /* objects per process image */
#define CP_SHM_MAX_NAMES 4096
#define CP_SHM_MAX_REAPED 4096

/* Slot states. */
enum {
	CP_SLOT_FREE = 0,
	CP_SLOT_LIVE,  /* taken by a process that writes into it */
	CP_SLOT_ENDED, /* its process wrote its last sample (exit, exec) */
};

struct cp_shm_seg {
	uint64_t start, limit, file_offset;
};

struct cp_shm_obj {
	char path[CP_SHM_PATH_MAX];
	char build_id[CP_SHM_BUILD_ID];
	uint32_t nsegs;
	uint64_t bias;
	struct cp_shm_seg segs[CP_SHM_MAX_SEGS];
	uint32_t gen; /* the object generation it was first seen in */
};

struct cp_shm_name {
	int32_t tid;
	char name[16];
};

struct cp_shm_slot {
	_Atomic uint32_t state;
	_Atomic uint32_t claims; /* how often it was taken */
	int32_t pid, ppid;
	int64_t start_ns;        /* CLOCK_MONOTONIC when it was taken */
	char exe[CP_SHM_PATH_MAX];
	char comm[16];
	_Atomic uint32_t facts_seq; /* odd while being written */
	struct cp_facts facts;
	_Atomic uint32_t objgen;  /* the generation of the loaded objects */
	_Atomic uint32_t nobjs;   /* entries published */
	struct cp_shm_obj objs[CP_SHM_MAX_OBJS];
	_Atomic uint32_t nnames;
	struct cp_shm_name names[CP_SHM_MAX_NAMES];
	/* The sample ring (src/sig/ring.h) follows, at ring_offset. */
};

/* A child that a profiled process reaped with wait*(): how it ended and
 * the CPU the kernel charged to it (with its own reaped children). */
struct cp_shm_reaped {
	_Atomic uint32_t ready;
	int32_t pid, status;
	int64_t cpu_ns;
};

struct cp_shm_header {
	uint64_t magic;
	uint32_t version;
	uint32_t nslots;
	uint64_t slot_size;   /* bytes of a slot, ring included */
	uint64_t ring_offset; /* of the ring within a slot */
	uint32_t ring_cells;
	uint32_t depth;       /* pcs a ring cell holds */
	int32_t record_pid;
	_Atomic uint32_t wake;     /* the record process sleeps on it */
	_Atomic uint32_t no_slot;  /* processes that found no free slot */
	_Atomic uint32_t nreaped;
	struct cp_shm_reaped reaped[CP_SHM_MAX_REAPED];
	/* The slots follow, at slots_offset, each slot_size bytes. */
	uint64_t slots_offset;
};

static inline struct cp_shm_slot *cp_shm_slot_at(struct cp_shm_header *h, uint32_t i)
{
	return (struct cp_shm_slot *)((uint8_t *)h + h->slots_offset + (uint64_t)i * h->slot_size);
}

#endif
