/*
 * record_write.h -- the profile `cpuprof record` writes from what it
 * collected (collect.h): one pprof file of the whole tree, its samples
 * labelled with their process (pid, process) and thread (tid, thread), or
 * one file per process image; symbols come from the object files on disk,
 * as each process had them loaded.  The comments add up the tree: the CPU
 * the kernel charged to it, what the profile covers of it, how each
 * process ended and which processes could not be profiled, by name.
 */
#ifndef CPUPROF_CLI_RECORD_WRITE_H
#define CPUPROF_CLI_RECORD_WRITE_H

#include <stdint.h>
#include <sys/types.h>

#include "proctree.h"

/* What record knows of the run besides what it collected. */
struct record_run {
	const char *cmd;     /* CMD's name, for messages */
	int status;          /* CMD's wait status */
	int64_t tree_cpu_ns; /* what the kernel charged to CMD and every process it reaped, and to orphans */
	int64_t tree_user_ns; /* ... of it in user mode (0: not known) */
	pid_t root;
	int per_process;     /* one file per process image */
	int told_to_stop;    /* the signal that told record to stop, or 0 */
	const char *mode;    /* how it was recorded: "outside", "preload" or "attached" */
	const char *refusal; /* why not from outside, or "" */
	const char *attached; /* -p: what ended the recording */
	int64_t scheduler_ns; /* -p: the scheduler's count of the window, for comparison */
	int off_cpu;         /* --off-cpu asked for */
	const char *off_cpu_absent; /* ... and why the profile has none, or NULL (it has) */
	int kframes;         /* --kernel asked for */
	const char *kframes_absent; /* ... and why the profile has none where the collector could not say, or NULL */
	/* --every: the window's number from 1 (0: the whole run), what ended
	 * it, whether it is the last, and how many processes' CPU in
	 * tree_cpu_ns (the window's, by the processes' clocks) is their events'
	 * count instead. */
	unsigned window;
	const char *window_ended;
	int window_last;
	size_t window_by_events;
};

/* Writes the profile(s) to path (shown as `shown` in messages) and says
 * on stderr what was written.  Returns 0, or -1 after saying why not. */
int record_write(const struct cp_tree *c, const char *path, const char *shown, const struct record_run *r);

/* The symbols of the objects image m had loaded in its epoch e, as the
 * writer names that epoch's samples with (and the kernel's, where kernel
 * is not NULL), for a view that names them as they come (cpuprof top).
 * NULL if out of memory; free with cp_symbols_free(). */
struct cp_kallsyms;
struct cp_symbols *record_epoch_symbols(const struct cp_image *m, size_t e, const struct cp_kallsyms *kernel);

#endif
