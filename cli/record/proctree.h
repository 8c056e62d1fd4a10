/*
 * proctree.h -- what `cpuprof record` knows of the processes of the tree it
 * profiles, however it learns it (from the kernel's rings, kernel.c; or
 * from processes that preloaded the library, collect.c): one image per
 * process and per program it exec'd, each with its samples, the objects it
 * had loaded, its threads' names and how it ended.  record_write.c writes
 * the profiles from it.
 */
#ifndef CPUPROF_CLI_TREE_H
#define CPUPROF_CLI_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/facts.h"
#include "profile/stacktab.h"
#include "shm/shm.h"

struct cp_jit;

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
	char **files;             /* beside objs (from outside only, else NULL): where record reads each, if
	                             not at its path (a container's file, through its root), or NULL */
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
	const char *unprofiled;   /* why it was not profiled (a setuid program), or NULL */
	int counted;              /* its CPU is the kernel's count of its own threads (kernel.c), not what a
	                             process published: a wait's count, which has its children's, is not better */
	char corrupt[128];        /* why its slot was given up as unreadable, or "" */
	struct cp_jit *jit;       /* what its JIT named (symbolize/jit.h), or NULL */
	int over;                 /* record --every: it can take no more samples (its process ended or exec'd):
	                             let go once the window it ended in is written */
};

struct cp_kallsyms;
struct cp_tree {
	/* The kernel's names, where samples have kernel frames (record
	 * --kernel, from outside), else NULL: their object in every image. */
	const struct cp_kallsyms *kernel;
	struct cp_image **images;
	size_t nimages, capimages;
	uint32_t no_slot;         /* processes that found no slot in record's shared memory */
};

/* A new image, empty (no epoch yet), appended to t; NULL if out of
 * memory. */
struct cp_image *cp_tree_new_image(struct cp_tree *t);
/* Adds an epoch for the objects of generation gen to m.  0 or -1. */
int cp_image_add_epoch(struct cp_image *m, uint32_t gen);
/* Multiplies what image m's samples hold (its stack tables, sampled_ns
 * and dropped_ns) by f, at most 1. */
void cp_image_scale(struct cp_image *m, double f);
/* The epoch of a sample of object generation gen. */
struct cp_epoch *cp_image_epoch_for(struct cp_image *m, uint32_t gen);
/* How process pid ended, from a wait (status, and the CPU of its
 * rusage): its last image ends with it. */
void cp_tree_status(struct cp_tree *t, pid_t pid, int status, int64_t cpu_ns);
/* Empties what image m's samples hold (its stack tables, keeping their
 * memory for the next window's, and its counts of samples): record
 * --every, once a window is written. */
void cp_image_clear_samples(struct cp_image *m);
/* Frees image m (no longer in any tree). */
void cp_image_free(struct cp_image *m);
/* The name of thread tid in image m, or its process's name. */
const char *cp_image_thread_name(const struct cp_image *m, int32_t tid);
void cp_tree_free(struct cp_tree *t);

#endif
