/*
 * collect.h -- `cpuprof record`'s side of the shared memory (src/shm/shm.h):
 * it makes the memory, and while the profiled tree runs it takes what
 * each process image writes there -- samples into stack tables, facts,
 * objects, thread names, how reaped children ended -- into memory of its
 * own, where a process that dies, by any means, cannot take it away.
 * Everything read from the shared memory is checked before use: a
 * process of the tree may have scribbled on it.
 */
#ifndef CPUPROF_CLI_COLLECT_H
#define CPUPROF_CLI_COLLECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proctree.h"

struct cp_collector {
	struct cp_tree tree;      /* what was collected */
	struct cp_shm_header *hdr;
	/* The layout as record made it: what is read back from the shared
	 * memory, which any profiled process can write, is never trusted
	 * to address it. */
	struct {
		uint32_t nslots, cells, depth;
		uint64_t slot_size, ring_offset, slots_offset;
	} geo;
	size_t size;
	int fd;                   /* the memfd, held by record */
	char path[64];            /* for the profiled processes: /proc/PID/fd/N */
	struct cp_image **by_slot; /* the image each slot holds now */
	uint32_t *claims_seen;    /* each slot's claim count when last taken */
	uint32_t reaped_seen;
};

/* Makes the shared memory for nslots images of rings of cells samples of
 * depth pcs.  Returns 0, or -1 with the reason in why[len]. */
int cp_collect_create(struct cp_collector *c, uint32_t nslots, uint32_t cells, uint32_t depth, char *why,
		      size_t len);
/* Takes what the tree wrote since the last call, gives back the slots of
 * images that ended, and notices images whose process died. */
void cp_collect_poll(struct cp_collector *c);
/* The last pass, once the tree is done (or given up on): everything is
 * taken, and images whose process still runs are marked as such. */
void cp_collect_finish(struct cp_collector *c);
void cp_collect_free(struct cp_collector *c);

#endif
