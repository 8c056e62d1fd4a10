/*
 * stacks.h -- the profiles `cpuprof report` reads, merged into the one set
 * of stacks that every format writes.  Each sample becomes a stack of
 * frames, root first, and one value.  Every Line of a location is a frame
 * of its own: lines[0] is the innermost call, and each line but the last
 * is a function inlined into the next one, a frame marked FRAME_INLINED.
 * Frames are interned by what they show (kind, name, and with `lines` the
 * source file and line), across all the profiles merged, so that samples
 * of several files add up as `go tool pprof A B` adds them.
 *
 * A call tree (struct calltree) aggregates the stacks: one node per
 * distinct path from the root, with the value of the samples that end
 * there (self) and of those that pass through (total).
 */
#ifndef CPUPROF_CLI_STACKS_H
#define CPUPROF_CLI_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof_read.h"

enum frame_kind {
	FRAME_FUNCTION,  /* a function: the outermost line of a location */
	FRAME_INLINED,   /* a function inlined into the frame below it */
	FRAME_ADDRESS,   /* no function name: "[object]" or an address */
	FRAME_LOST,      /* "[lost]": samples the ring had no room for */
	FRAME_UNSAMPLED, /* "[unsampled: ...]": CPU after the last sample */
	FRAME_PROFILER,  /* "[profiler: ...]": cpuprof's own thread */
	FRAME_TRUNCATED, /* "[truncated]": a stack cut at the depth limit */
	FRAME_NOSTACK,   /* "[no stack]" and other "[...]" pseudo-functions */
	FRAME_WAITING,   /* "[waiting to run]": off the CPU, runnable */
	FRAME_PROCESS,   /* a grouping frame: a sample's process label */
	FRAME_THREAD,    /* a grouping frame: a sample's thread label */
	FRAME_JIT,       /* a function its JIT named (a Location of a "[jit]" Mapping) */
	FRAME_KERNEL,    /* a function of the kernel (its location's mapping is
			    [kernel.kallsyms]: record --kernel) */
	FRAME_KINDS
};

/* The short name of a kind ("function", "inlined", "lost", ...). */
const char *frame_kind_name(enum frame_kind k);
/* What a label adds to the name for a frame of kind k: " (inlined)",
 * " [jit]", " [k]", or "". */
const char *frame_kind_mark(enum frame_kind k);

struct frame {
	const char *name; /* the function's (or pseudo-frame's) name */
	const char *file; /* source file, "" if unknown */
	int64_t line;     /* with `lines` the line, else 0; part of the key */
	int64_t start_line; /* the function's first line (0 if unknown), as
			       the first location seen says; not in the key */
	enum frame_kind kind;
	/* What text formats print: name, " file:line" with `lines`, and
	 * its kind's mark: " (inlined)", " [jit]", " [k]" for the kernel's
	 * (as perf report marks them; folded stacks write "name_[j]" and
	 * "name_[k]", as flamegraph.pl and inferno colour them:
	 * put_frame_folded). */
	const char *label;
};

/* Grouping frames put at the root of every stack from its labels. */
enum stack_group { GROUP_NONE, GROUP_PROCESS, GROUP_THREAD };

struct stack_options {
	bool lines;             /* frames are function + file:line */
	enum stack_group group; /* GROUP_THREAD: process, then thread */
	const char *value;      /* the sample type to count ("cpu",
				   "samples", "off_cpu" or "off-cpu",
				   "wall"); NULL: the profiles' default
				   sample type if they name one, else cpu if
				   they have it, else their last type */
	const char *verb;       /* what messages say cannot be done with
				   profiles of other types: "compare";
				   NULL: "merge" */
};

/* One pprof Sample.  `count` is the number of times the profiler sampled
 * this stack that it stands for: the Sample's samples/count value where
 * the profiles have that type (a profiler that merges identical stacks
 * writes one Sample for many), else 1.  0 (or less) means no sampling
 * stands behind the value: cpuprof's [unsampled: ...] and [profiler: ...]
 * frames hold CPU time its clocks measured (shares.h takes them as
 * exact). */
struct stack_sample {
	uint32_t off, n; /* its frames: stackset.stack_frames[off..off+n) */
	int64_t value;
	int64_t count;
};

struct stackset {
	const struct frame *frames;
	size_t nframes;
	const uint32_t *stack_frames; /* every sample's frames, root first */
	/* One per pprof Sample, the profiles' in the order given, each's in
	 * file order: p[i]'s are samples[first..first+p[i]->nsamples), first
	 * being the Samples of p[0..i). */
	struct stack_sample *samples;
	size_t nsamples;
	int64_t total;          /* of all samples' values (saturated) */
	const char *value_type; /* the sample type counted ("cpu") */
	const char *unit;       /* its unit ("nanoseconds") */
	bool is_cpu;            /* the value is cpu/nanoseconds */
	bool has_cpu;           /* the profiles have cpu/nanoseconds */
	const char *what;       /* "CPU", "off-CPU" or "wall" for those
				   values, for totals; NULL for others */
	bool has_count;         /* count is the profiles' samples/count */
	bool has_groups;        /* a sample had a process or thread label */

	/* Private. */
	struct {
		struct frame *frames;
		size_t capframes;
		uint32_t *stack_frames;
		size_t nstack, capstack;
		size_t *hash, nhash;
		char **owned;
		size_t nowned, capowned;
		struct stack_options o;
		const struct profile *first; /* its types are every profile's */
		const char *first_name;
		int vi, ci; /* the sample types counted, -1 none */
	} priv_;
};

/* Builds ss from the n profiles p[0..n) (which must outlive ss; names[i]
 * is p[i]'s file name, for messages).  Fails (-1, with a one-line reason in
 * err) if their sample types or period types differ, if o->value names no
 * sample type, or out of memory. */
int stackset_build(struct stackset *ss, struct profile *const *p,
		   const char *const *names, size_t n,
		   const struct stack_options *o, char *err, size_t errlen);

/* stackset_build() in steps, for a command that reads one profile at a
 * time and frees its samples once added (profile_drop_samples()):
 * stackset_start() picks the value counted from p's sample types (p and
 * its name must outlive ss; p's samples are not added), and
 * stackset_add() appends the samples of each profile in turn, p first,
 * failing if its sample types or period type are not p's.  Each returns
 * 0, or -1 with a one-line reason in err. */
int stackset_start(struct stackset *ss, const struct profile *p, const char *name,
		   const struct stack_options *o, char *err, size_t errlen);
int stackset_add(struct stackset *ss, const struct profile *p, const char *name, char *err, size_t errlen);

/* Frees what stackset_build() made (also after it failed). */
void stackset_free(struct stackset *ss);

/* A node of the call tree; node 0 is the root, above every stack's
 * first frame.  Nodes are made level by level (breadth first): a node's
 * children come after it, together, in the order the samples first pass
 * to them, and before the children of the nodes after it; so node i's
 * children are [calltree_child(t, i), calltree_child_end(t, i)). */
struct cnode {
	int64_t self;   /* value of the samples whose stack ends here (their
			   total: calltree_totals()) */
	uint32_t frame; /* into stackset.frames (unused for the root) */
	uint32_t child; /* the first child: see calltree_child() */
};

struct calltree {
	struct cnode *nodes;
	size_t n;
	uint32_t *leaf; /* per sample of the stackset: the node its stack
			   ends at (0, the root, for an empty stack) */
	/* The nodes some sample's stack ends at ("leaves", though one may
	 * have children), numbered 0..nleaves-1 in node order: what a
	 * format sums per node from the samples ending there is 0 elsewhere,
	 * and a tree of millions of nodes has at most as many leaves as
	 * samples, so such sums are kept per leaf (calltree_leaf_index()).
	 * A bit per node, and the leaves before each 64 nodes. */
	uint64_t *leafbits;
	uint32_t *leafrank;
	size_t nleaves;
};

/* Node id's index among the leaves, -1 if no sample's stack ends there. */
static inline long calltree_leaf_index(const struct calltree *t, uint32_t id)
{
	uint64_t w = t->leafbits[id / 64], bit = 1ull << (id % 64);
	return w & bit ? (long)(t->leafrank[id / 64] + (uint32_t)__builtin_popcountll(w & (bit - 1))) : -1;
}

/* The first child of node i (t->n if none: then end is the same). */
static inline uint32_t calltree_child(const struct calltree *t, uint32_t i)
{
	return t->nodes[i].child;
}

/* One past the last child of node i. */
static inline uint32_t calltree_child_end(const struct calltree *t, uint32_t i)
{
	return i + 1 < t->n ? t->nodes[i + 1].child : (uint32_t)t->n;
}

/* Builds the call tree of ss into t; -1 if out of memory.  Siblings are
 * in the order of the samples, whatever their values. */
int calltree_build(struct calltree *t, const struct stackset *ss);

/* Each node's total, the value of the samples whose stack passes through
 * it, into total[] (t->n of them): kept apart, as few formats need it. */
void calltree_totals(const struct calltree *t, int64_t *total);

void calltree_free(struct calltree *t);

/* Walks t depth first from the root's children, each node's children in
 * cmp order (qsort_r-style over node indexes), with an explicit stack: a
 * hostile profile's stacks may be very deep.  visit gets each node in
 * turn as path[depth - 1], path[0..depth-1] being the nodes from the
 * root's child down to it.  Before each child of a level, cut (if not
 * NULL) gets the children of that level not yet visited, kids[0..n-1]
 * (n > 0, at that depth), and may end the level by returning nonzero.
 * arg goes to all three.  Returns 0, or -1 if out of memory. */
int calltree_walk(const struct calltree *t, int (*cmp)(const void *, const void *, void *),
		  int (*cut)(const uint32_t *kids, long n, size_t depth, void *arg),
		  void (*visit)(const uint32_t *path, size_t depth, void *arg), void *arg);

#endif
