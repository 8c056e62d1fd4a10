/*
 * record_live.h -- record's run for a command that reads what is being
 * collected while it runs (`cpuprof top`): the same collector, the same
 * way of running CMD or attaching to running processes, of passing
 * signals on and of ending CMD, but no profile written.  At every pass of
 * record's loop (whenever records or signals wake it, or its poll times out) the caller's pass() sees the tree as
 * collected so far, and once more after the last records are in; pass()
 * may ask the run to end, which ends it as a SIGINT sent to record would:
 * CMD is passed SIGINT and has the grace to end before it is killed, and
 * processes attached to are let go, running on.
 */
#ifndef CPUPROF_CLI_RECORD_LIVE_H
#define CPUPROF_CLI_RECORD_LIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "flags.h"
#include "proctree.h"

/* What a pass sees. */
struct record_live_view {
	const struct cp_tree *tree; /* the images, their stack tables growing as samples come */
	uint64_t lost;              /* samples lost so far: the kernel's, and those not kept */
	int64_t reaped_cpu_ns;      /* the CPU the kernel charged to the processes record reaped */
	pid_t root;                 /* CMD's process, or the first attached to */
	int final;                  /* the last pass: everything is in, the events are closed */
	int status;                 /* CMD's wait status, at the last pass */
	const char *stopped;        /* -p: what ended the run, at the last pass; else NULL */
};

struct record_live {
	char **cmd;                 /* CMD and its arguments (NULL-terminated), or NULL with pids */
	const char *pids;           /* -p's list, or NULL */
	/* The settings as the caller read them, by the library's rules
	 * (FLAG_SETTING of CP_OPT_HZ, CP_OPT_DEPTH, CP_OPT_UNWIND). */
	struct flag_value hz, depth, unwind;
	long grace;                 /* seconds CMD has to end once passed a signal */
	long duration;              /* with pids: seconds until the run ends (0: none) */
	/* Called at each pass, and at the last with view->final set; returns
	 * nonzero to end the run (at the last, ignored). */
	int (*pass)(void *arg, const struct record_live_view *view);
	void *arg;
};

/* Runs l->cmd, or attaches to l->pids, as `cpuprof record` does (from
 * outside where the kernel allows it, else preloaded), calling l->pass
 * until the run ends.  Returns what record would: CMD's exit status
 * (128+N if signal N killed it), 126 or 127 if it could not be run, 0
 * when attached, 2 if the processes could not be attached to (said on
 * stderr, as record says it). */
int record_live_run(const struct record_live *l);

#endif
