/*
 * stacktab.h -- the aggregated profile: a table from call stack to
 * (sample count, CPU nanoseconds), and, in profiles of off-CPU time, from
 * the stack where a thread left the CPU to (times, off-CPU nanoseconds).  Filled by the drain thread and by
 * cpuprof_stop(); read by the pprof writer.  Not for signal context (it
 * allocates); callers serialise access themselves.
 */
#ifndef CPUPROF_STACKTAB_H
#define CPUPROF_STACKTAB_H

#include <stddef.h>
#include <stdint.h>

#include "times.h"

/* One distinct stack: its pcs, pcs[0] the interrupted PC (leaf),
 * pcs[1..n-1] return addresses, innermost first, exactly as the unwinder
 * found them, kept encoded (cp_stack_pcs() decodes them): each the
 * zigzag varint of its difference from the one before (the first's from
 * 0).  Return addresses of one stack are mostly in one object, a few
 * KiB apart, so a 30-frame stack takes about 80 bytes, not 240: a
 * profile of many distinct stacks is mostly its stacks. */
struct cp_stack {
	uint64_t count; /* samples (CP_STACK_OFF_CPU: times the thread left the CPU here) */
	uint64_t ns;    /* CPU nanoseconds those samples stand for (CP_STACK_OFF_CPU: off-CPU ns) */
	uint32_t n;     /* number of pcs (0 is allowed: a sample with no PC) */
	uint32_t flags; /* CP_STACK_* */
	uint32_t tid;   /* the thread it was sampled in (0: not told) */
	uint32_t size;  /* bytes of code */
	struct cp_times times; /* when its samples were taken, those added with a time */
	uint8_t code[];
};

/* Stack s's pcs, leaf first, into pcs[s->n]. */
void cp_stack_pcs(const struct cp_stack *s, uintptr_t *pcs);

/* The stack was cut at the depth limit; more frames existed. */
#define CP_STACK_TRUNCATED 1u
/* pcs[1] is the link register's value at the interrupt: the caller of
 * pcs[0] if that function had not stored its return address yet (a leaf, a
 * prologue), else stale.  Writers keep it only if
 * cp_symbols_code_outside_function(pcs[0], pcs[1] - 1) says it is a call
 * site in another function. */
#define CP_STACK_LINK_REG 2u
/* Off-CPU time, not CPU (perf/switches.h has the same values): the thread
 * was switched out with this user stack and stayed off the CPU `ns`.
 * RUNNABLE: it was still runnable, waiting for a CPU (preempted, or a new
 * thread before its first run); BEFORE: it was off the CPU since before
 * the profile saw it run (pcs unknown, n 0). */
#define CP_STACK_OFF_CPU 4u
#define CP_STACK_RUNNABLE 8u
#define CP_STACK_BEFORE 16u

struct cp_stack_block;
struct cp_stacktab {
	struct cp_stack **items; /* distinct stacks, in insertion order */
	size_t len, cap;
	uint32_t *index; /* open-addressing hash: 1 + position in items, 0 = empty */
	size_t nindex;   /* power of two */
	uint64_t total_count, total_ns;     /* of the CPU stacks */
	uint64_t total_off_count, total_off_ns; /* of the CP_STACK_OFF_CPU ones */
	uint64_t total_runnable_ns;             /* ... of them CP_STACK_RUNNABLE */
	uint8_t *scratch;                       /* a stack being encoded */
	size_t capscratch;
	/* The stacks' memory: blocks for them (stacktab.c), in the
	 * order they were made, and the one stacks are put in now. */
	struct cp_stack_block *blocks, *block;
};

void cp_stacktab_init(struct cp_stacktab *t);
void cp_stacktab_free(struct cp_stacktab *t);
/* Drops every stack but keeps the memory for reuse. */
void cp_stacktab_clear(struct cp_stacktab *t);
/* Adds count/ns to the entry for (tid, pcs, n, flags), creating it if
 * needed.  Returns 0 or -ENOMEM (the table is then unchanged). */
int cp_stacktab_add_tid(struct cp_stacktab *t, uint32_t tid, const uintptr_t *pcs, uint32_t n, uint32_t flags,
		     uint64_t count, uint64_t ns);
/* Adds one sample of ns taken at time_ns (CLOCK_MONOTONIC) to the entry
 * for (tid, pcs, n, flags), and its time, where times are kept
 * (times.h): an off-CPU stack's time is when the thread left the CPU
 * (past CP_TIMES_MAX_BYTES, the sample is kept without it).  0 or
 * -ENOMEM (the sample is then not kept; an entry it made stays, empty). */
int cp_stacktab_add_at(struct cp_stacktab *t, uint32_t tid, const uintptr_t *pcs, uint32_t n, uint32_t flags,
		       uint64_t ns, uint64_t time_ns);
/* The same for a stack of no thread in particular (tid 0). */
int cp_stacktab_add(struct cp_stacktab *t, const uintptr_t *pcs, uint32_t n,
		 uint32_t flags, uint64_t count, uint64_t ns);
/* Makes dst (not initialised) a copy of src.  0 or -ENOMEM (dst is then
 * empty). */
int cp_stacktab_copy(struct cp_stacktab *dst, const struct cp_stacktab *src);
/* Multiplies the ns of each CPU stack by factor(tid) of its thread where
 * that is below 1, and returns how many ns that took off. */
uint64_t cp_stacktab_scale_down(struct cp_stacktab *t, double (*factor)(uint32_t tid));

#endif
