/*
 * tables.h -- the unwind tables of the loaded objects: the objects are
 * listed when a profile starts and again whenever objects are loaded or
 * unloaded (cpuprof's own thread checks); each object's table is built
 * from its .eh_frame the first time a walk needs it, or as soon as the
 * object is listed where a walk cannot be done again (eager); the set is
 * published to the walks through cp_sig.unwind without locks, and what a
 * new set replaces is freed only once no handler can be reading it.  Not
 * signal context.
 */
#ifndef CPUPROF_UNWIND_H
#define CPUPROF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Sets cp_sig.unwind_mode and, unless it is fp, lists the loaded objects
 * and publishes their set.  With `eager` (the signal engines, whose
 * handler walks a live stack that is gone once a table could be built)
 * every object's table is built before the set is published, here and
 * whenever objects are listed again; without it (the perf engines, which
 * walk a copy again once cp_unwind_build_wanted() built what the walk
 * lacked) none is built yet.  The handler must not be sampling yet. */
void cp_unwind_start(int mode, int eager);

/* Builds the tables that walks asked for since the last call
 * (cp_sig.unwind_want) and publishes them.  Returns 1 if it built any: a
 * walk that was not complete may then be done again. */
int cp_unwind_build_wanted(void);

/* Rebuilds and republishes the tables if objects were loaded or unloaded
 * since the last look.  Returns 1 if they were. */
int cp_unwind_refresh(void);

/* Frees replaced tables once no handler can be reading them. */
void cp_unwind_reclaim(void);

/* For the keeper, after each wake-up: looks for loaded or unloaded
 * objects when it is time -- every 100 ms, and when a sample's pc was in
 * no object (at once, then at most every 10 ms: code without tables may
 * well be hot) --, builds the tables walks asked for, and reclaims replaced
 * tables.  Returns 1 if the set changed. */
int cp_unwind_tick(void);

/* How long (ms, at most max) the drainer may sleep before cp_unwind_tick
 * wants to run again. */
int cp_unwind_timeout_ms(int max);

/* Unpublishes the tables.  If `quiet` (no handler is running or can start
 * sampling) frees what only this profile needed; the objects' tables stay,
 * for the next profile to reuse while the objects stay loaded.  Otherwise
 * leaves everything allocated: a stuck handler may still read it. */
void cp_unwind_stop(int quiet);

/* In a child after fork(): forget the parent's state. */
void cp_unwind_after_fork(void);

/* One loaded object as the tables see it. */
struct unwind_object {
	const char *name;      /* path; the main program as /proc/self/exe gives it */
	int has_table;
	size_t table_bytes;    /* memory of its table */
	size_t eh_frame_bytes; /* size of its .eh_frame */
	size_t fdes, rows;
	uint64_t build_ns;     /* time to parse and encode, or read back */
	int cached;            /* its table came from the table cache */
	const char *why;       /* without a table: why ("" if it has one) */
	int rejected;          /* its .eh_frame was malformed */
};

/* Calls fn for every object of the current tables, under the tables' lock
 * (fn must not call back into unwind_*). */
void cp_unwind_each_object(void (*fn)(const struct unwind_object *o, void *arg), void *arg);

#endif
