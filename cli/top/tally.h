/*
 * tally.h -- what `cpuprof top` shows of record's stack tables: each
 * function's flat and cumulative CPU, and each thread's, over the last
 * interval and since the start.  The tables only grow (a stack's CPU, or a
 * new stack), so each take adds what every stack gained since the last;
 * a stack is named once, when first seen, by the symbols its image's
 * epoch is written with (record_write.h), each address once: a take
 * costs a pass over the stacks and the names of the new ones.
 */
#ifndef CPUPROF_CLI_TOP_TALLY_H
#define CPUPROF_CLI_TOP_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "record/proctree.h"

struct tally;

/* A function's CPU (ns): its own (flat) and with what it called (cum),
 * over the last interval and since the start (t). */
struct tally_fn {
	const char *name;
	int64_t flat, cum, tflat, tcum;
};

/* A thread's CPU (ns) over the last interval and since the start. */
struct tally_thread {
	int32_t pid, tid;
	char name[16];
	int64_t ns, tns;
};

/* NULL if out of memory. */
struct tally *tally_new(void);
void tally_free(struct tally *t);

/* Starts an interval: what the stacks of tree gained since the last take
 * is its CPU, added to the totals.  With baseline, what they hold now is
 * taken as the start, counted in neither.  0, or -1 if out of memory
 * (what could not be named is left for the next take). */
int tally_take(struct tally *t, const struct cp_tree *tree, int baseline);

/* The CPU the stacks gained over the last interval and since the start. */
int64_t tally_interval_ns(const struct tally *t);
int64_t tally_total_ns(const struct tally *t);

/* The functions (threads) with CPU in the interval or since the start,
 * most first: by the interval's flat CPU (a thread's CPU), or with
 * total_first since the start's; into *out, valid until the next take.  How
 * many. */
size_t tally_functions(struct tally *t, int total_first, const struct tally_fn **out);
size_t tally_threads(struct tally *t, const struct cp_tree *tree, int total_first, const struct tally_thread **out);

#endif
