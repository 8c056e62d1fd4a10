/*
 * every.h -- `cpuprof record --every DURATION`: the run in windows, each
 * written as a whole profile of its own as soon as it ends, for runs too
 * long for one profile to say when something happened (a server, a soak
 * test).  A window ends when DURATION has passed since it began, when
 * SIGUSR1 reaches record, or when the run ends (that last window is
 * written like the others).  From outside only (the kernel collector's
 * windows: kernel.h).
 *
 * Names: window n of FILE is FILE with n in four digits (more past 9999)
 * put before its extension -- the last ".EXT" of its base name, ".pb.gz"
 * taken whole -- or after it where it has none: cpu.pb.gz gives
 * cpu.0001.pb.gz, cpu.0002.pb.gz, ...; out.pprof out.0001.pprof; prof
 * prof.0001.  So the names sort in the order of the windows (ls, a shell's
 * glob), keep the extension tools look at, and are known before the run:
 * the n-th window is always the same file.
 */
#ifndef CPUPROF_CLI_EVERY_H
#define CPUPROF_CLI_EVERY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel.h"
#include "record_write.h"

/* The windows being written at once, at most: a window that ends while
 * so many are waits for the oldest. */
#define EVERY_WRITERS 4

struct every {
	long ms;                  /* the windows' length; 0: one profile of the whole run */
	char text[48];            /* ... as given, with its flag ("--every 10s") */
	int64_t due_ns;           /* CLOCK_MONOTONIC when the window being recorded ends */
	unsigned n;               /* the windows ended so far */
	const char *path, *shown; /* FILE, absolute and as given */
	pid_t writers[EVERY_WRITERS];
	size_t nwriters;
	unsigned failed;          /* windows not written */
};

/* Window n's file of FILE `path` (malloc'd), or NULL if out of memory. */
char *every_name(const char *path, unsigned n);

/* Starts the first window of collector k (its events' start is its
 * start). */
void every_begin(struct every *e, struct cp_kcollector *k);

/* A wait of `timeout` ms, cut short to the window's end. */
int every_timeout(const struct every *e, int timeout);

/* Whether the window's time is up. */
bool every_due(const struct every *e);

/* Ends the window now (why: what ended it, for its window_ended comment)
 * and has it written, by a copy of record (a child process) while this one
 * goes on reading the rings; starts the next.  r: what the profile says of
 * the run. */
void every_cut(struct every *e, struct cp_kcollector *k, const struct record_run *r, const char *why);

/* Once cp_kernel_finish() has ended the last window: waits for the
 * windows being written, writes the last here, and says which files were
 * written.  0, or -1 if a window could not be written. */
int every_last(struct every *e, struct cp_kcollector *k, const struct record_run *r, const char *why);

/* Whether pid, a child that ended with status, was a window's writer
 * (then reaped). */
bool every_reaped(struct every *e, pid_t pid, int status);

/* Reaps the writers that have ended. */
void every_poll(struct every *e);

#endif
