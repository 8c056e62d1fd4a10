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

#include "profile/facts.h"
#include "shm/shm.h"
#include "profile/stacktab.h"

/* The samples of one image taken while one set of objects was loaded: a
 * new epoch starts when an object is loaded where another was. */
struct cp_epoch {
	uint32_t gen;             /* the first object generation it covers */
	struct cp_stacktab tab;   /* keyed by thread and stack */
};

struct cp_image_name {
	int32_t tid;
	char name[16];
};

/* One process image: a process, or what it became after an exec. */
struct cp_image {
	int32_t pid, ppid;
	uint32_t slot;            /* where it was written */
	uint32_t order;           /* images of the same pid: 0, 1, ... in exec order */
	char exe[CP_SHM_PATH_MAX];
	char comm[16];
	int64_t start_ns;
	struct cp_facts facts;    /* as last published */
	int have_facts;
	struct cp_shm_obj *objs;  /* as published, in order */
	uint32_t nobjs;
	struct cp_image_name *names; /* in the order published: the last of a tid wins */
	size_t nnames, capnames;
	struct cp_epoch *epochs;
	size_t nepochs;
	uint64_t samples, sampled_ns, dropped, dropped_ns;
	int done;                 /* its slot is drained and given back */
	int dead;                 /* its process is gone (or replaced by an exec) */
	int replaced;             /* by an exec: a later image of the same pid took over */
	int have_status;          /* how the process ended, from a wait */
	int status;
	int64_t wait_cpu_ns;      /* the CPU the kernel charged to it, from that wait (-1: none) */
	int64_t live_cpu_ns;      /* still running at the finish: the kernel's count then (0: none) */
	int pidfd;
	char corrupt[128];        /* why its slot was given up as unreadable, or "" */
};

struct cp_collector {
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
	struct cp_image **images;
	size_t nimages, capimages;
	struct cp_image **by_slot; /* the image each slot holds now */
	uint32_t *claims_seen;    /* each slot's claim count when last taken */
	uint32_t reaped_seen;
	uint32_t no_slot;         /* processes that found no slot */
};

/* Makes the shared memory for nslots images of rings of cells samples of
 * depth pcs.  Returns 0, or -1 with the reason in why[len]. */
int cp_collect_create(struct cp_collector *c, uint32_t nslots, uint32_t cells, uint32_t depth, char *why,
		      size_t len);
/* Takes what the tree wrote since the last call, gives back the slots of
 * images that ended, and notices images whose process died. */
void cp_collect_poll(struct cp_collector *c);
/* How process pid ended, from a wait of record's own (status, and the CPU
 * of its rusage). */
void cp_collect_status(struct cp_collector *c, pid_t pid, int status, int64_t cpu_ns);
/* The last pass, once the tree is done (or given up on): everything is
 * taken, and images whose process still runs are marked as such. */
void cp_collect_finish(struct cp_collector *c);
/* The name of thread tid in image m, or its process's name. */
const char *cp_image_thread_name(const struct cp_image *m, int32_t tid);
void cp_collect_free(struct cp_collector *c);

#endif
