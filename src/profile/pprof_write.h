/*
 * pprof_write.h -- writes an aggregated profile as a gzipped pprof
 * (profile.proto) file, symbolizing every PC in-process from the ELF
 * symbol tables of the loaded objects.  Not for signal context.
 */
#ifndef CPUPROF_PPROF_WRITE_H
#define CPUPROF_PPROF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "stacktab.h"

struct cp_symbols;
struct cp_jit;

struct cp_pseudo_sample {
	const char *name; /* "[lost]", ... */
	uint64_t count;   /* samples it stands for (0: CPU no sample saw) */
	uint64_t ns;      /* CPU ns */
};

struct cp_profile_meta {
	uint64_t period_ns;     /* sampling period: 1e9 / hz */
	int64_t time_nanos;     /* wall clock at start, ns since the epoch */
	int64_t duration_nanos; /* wall time covered */
	/* Its start on CLOCK_MONOTONIC, from which its samples' times are
	 * counted (times.h); 0: the time base's start. */
	uint64_t start_mono_ns;
	/* CPU the profile accounts for without a stack of its own (lost
	 * samples, CPU no sample saw): each written as one sample whose only
	 * frame is a function named `name`, if its count or ns is not 0. */
	const struct cp_pseudo_sample *pseudo;
	size_t npseudo;
	const char *const *comments; /* written as profile comments, in order */
	size_t ncomments;
	/* The profile has off-CPU time: the sample types are samples/count,
	 * cpu/nanoseconds, off_cpu/nanoseconds and wall/nanoseconds (cpu +
	 * off_cpu), wall the default, and the tables' CP_STACK_OFF_CPU stacks
	 * are written (each a Sample of off_cpu and wall alone, its frames
	 * led by [waiting to run] where it waited for a CPU).  Otherwise
	 * samples/count and cpu/nanoseconds, and those stacks are left out. */
	int off_cpu;
};

/* The samples of one address space (a process image), and the labels they
 * carry: pid and process (if given), tid and thread (for each stack
 * sampled in a thread). */
struct cp_profile_part {
	const struct cp_symbols *syms;  /* the objects its addresses are in */
	/* Names of its JIT's code (symbolize/jit.h, finished), for addresses
	 * in no file's mapping; NULL: none.  Their Locations are in Mappings
	 * of their own, named "[jit]". */
	const struct cp_jit *jit;
	const struct cp_stacktab *tab;
	/* tab itself, if the writer may free it (cp_stacktab_free) once its
	 * samples are encoded, before the lines child is forked, which would
	 * otherwise be given its pages too (issue 32); NULL: tab is kept.
	 * After the write, whatever it returned, the table may be empty: only
	 * a table its caller needs no more is given here. */
	struct cp_stacktab *spend;
	int64_t pid;                    /* 0: no pid label */
	const char *process;            /* NULL: no process label */
	/* The name of thread tid, or NULL (NULL: no thread labels). */
	const char *(*thread_name)(const void *arg, uint32_t tid);
	const void *arg;
	/* Its own frames that are not code (as meta's, with its labels). */
	const struct cp_pseudo_sample *pseudo;
	size_t npseudo;
};

/* Writes the parts to `path` (replacing it atomically: a temporary file
 * in the same directory, then rename; a path that is not a regular file
 * is written into).  Returns 0, or a negative errno with a message in
 * err[errlen]. */
int cp_pprof_write_parts(const char *path, const struct cp_profile_part *parts, size_t nparts,
		      const struct cp_profile_meta *meta, char *err, size_t errlen);

/* Writes `tab`, sampled in this process, to `path` as one part without
 * labels, symbolized from the objects loaded now. */
int cp_pprof_write(const char *path, const struct cp_stacktab *tab,
		const struct cp_profile_meta *meta, char *err, size_t errlen);


/* Internal, for the benchmark (bench/lines/): 0 writes names only, as
 * before source lines, to measure what they cost.  1 by default. */
extern int cp_pprof_lines;

#endif
