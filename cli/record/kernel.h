/*
 * kernel.h -- `cpuprof record` from outside the processes it profiles.
 * record opens the sampling events itself, on CMD (before it runs: they
 * come on at its exec) or on running processes, inherited by every thread
 * and process they start however they are made (fork, vfork, clone, exec,
 * an empty environment, a static binary); it reads the kernel's rings --
 * each sample's registers and a copy of the top of its stack, and the
 * kernel's records of forks, execs, mappings, names and exits --, unwinds
 * each sample with the unwind table of the file its code is in (one table
 * per file for the whole tree, built when first needed), and fills the
 * tree's images (proctree.h), which record_write.c writes.  Nothing is
 * preloaded into any process, and nothing of theirs is touched: no signal,
 * no descriptor, no memory.
 */
#ifndef CPUPROF_CLI_KERNEL_H
#define CPUPROF_CLI_KERNEL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proctree.h"

struct cp_kernel_conf {
	int hz;           /* asked for */
	unsigned depth;   /* most frames kept */
	int unwind;       /* enum cp_unwind_mode */
	const char *engine; /* "perf" (the task clock) or "hw" (cycles) */
	int off_cpu;      /* also off-CPU time: a context-switch event beside the task clock */
	int kframes;      /* --kernel: also the kernel's part of each stack, where the kernel allows it */
};

struct cp_kcollector;

/* Whether this process may open the sampling events it would open on its
 * own children (the task clock, or cycles for hw, with a copy of the
 * stack, inherited).  0, or a negative errno with what refused and what
 * would allow it in why[len]. */
int cp_kernel_probe(const struct cp_kernel_conf *c, char *why, size_t len);

/* Whether a PMU counts CPU cycles here (what the hw engine inside each
 * process needs first).  0, or a negative errno with why in why[len]. */
int cp_kernel_pmu(char *why, size_t len);

/* Whether this process may open the context-switch samples off-CPU time
 * needs (their samples are taken in the kernel as a thread leaves the
 * CPU: root, CAP_PERFMON or perf_event_paranoid <= 1).  0, or a negative
 * errno with what refused and what would allow it in why[len]. */
int cp_kernel_probe_off_cpu(const struct cp_kernel_conf *c, char *why, size_t len);

/* Opens the events on process pid, which has not exec'd CMD yet: they
 * start counting at its exec.  0, or a negative errno with why[len]. */
int cp_kernel_start(struct cp_kcollector **out, const struct cp_kernel_conf *c, pid_t pid, char *why, size_t len);

/* Opens the events on every thread of the running processes pids[0..n),
 * with what each has mapped now.  0, or a negative errno with why[len]
 * (then nothing stays open). */
int cp_kernel_attach(struct cp_kcollector **out, const struct cp_kernel_conf *c, const pid_t *pids, size_t n,
		     char *why, size_t len);

/* With kframes asked for: why the profile has none (what refused them),
 * or NULL where it has them (or they were not asked for). */
const char *cp_kernel_kframes_absent(const struct cp_kcollector *k);

/* The descriptors to poll for POLLIN (the rings, woken a quarter full)
 * into out[max]; how many. */
size_t cp_kernel_pollfds(const struct cp_kcollector *k, struct pollfd *out, size_t max);

/* Takes what the kernel wrote since the last call. */
void cp_kernel_poll(struct cp_kcollector *k);

/* How process pid ended, from a wait of record's own: its status, CPU
 * and context switches (its rusage). */
void cp_kernel_status(struct cp_kcollector *k, pid_t pid, int status, int64_t cpu_ns, int64_t switches);

/* Whether every process attached to has ended. */
int cp_kernel_all_ended(const struct cp_kcollector *k);

/* The last pass: the events are closed (what they wrote stays readable),
 * everything is taken, and each image's facts are made.  The processes
 * run on unchanged.  wall_ns: the wall time the tree ran. */
void cp_kernel_finish(struct cp_kcollector *k);

/* After the finish: where the tree's samples and counts hold more CPU than
 * cpu_ns, what the kernel charged to it (CMD's rusage and the orphans'),
 * every image's are scaled down to it and its facts say by how much
 * (ahead_ns).  The task clock runs on while a virtual machine's host has
 * taken its CPU (steal time), and the kernel's charge does not.  Where
 * they hold less, the part its `switches` context switches explain
 * (cp_perf_unseen) is the images' wakeup_ns, shared as their CPU is.  Not
 * while a process of the tree still runs: cpu_ns has none of its CPU. */
void cp_kernel_hold_to(struct cp_kcollector *k, int64_t cpu_ns, int64_t switches);

/* What was collected; the CPU the events counted in all (-p's measure of
 * the window); what record itself used. */
struct cp_tree *cp_kernel_tree(struct cp_kcollector *k);
int64_t cp_kernel_counted_ns(const struct cp_kcollector *k);
/* -p: what the scheduler counted of the live threads of the processes
 * over the window (a thread that ended within it is missed): the measure
 * the events' count is checked against. */
int64_t cp_kernel_scheduler_ns(const struct cp_kcollector *k);
/* The samples the kernel said it lost so far (its rings were full). */
uint64_t cp_kernel_lost(const struct cp_kcollector *k);

/* record --every (kernel_window.c): the profile in windows, each whole on
 * its own.  cp_kernel_window_start() starts the first window (the events'
 * start is its start: call it before the first poll) or, once the window
 * ended is written, the next: what grows with samples is emptied (the
 * stack tables, the images' counts) and what can take no more samples (the
 * images of processes that ended or exec'd) let go, while the processes,
 * threads, files, unwind tables and rings stay.  cp_kernel_window_end()
 * ends the window now: every record until then is taken, and each image's
 * facts are made for the window alone, held to the CPU the kernel's clocks
 * say the tree used in it (cp_kernel_window_cpu_ns), as cp_kernel_finish()
 * and cp_kernel_hold_to() do for a whole run; the tree then holds the
 * window, to be written.  The last window is ended by cp_kernel_finish(),
 * which holds it so too (no cp_kernel_hold_to). */
void cp_kernel_window_start(struct cp_kcollector *k);
void cp_kernel_window_end(struct cp_kcollector *k);
/* The CPU of the window ended, by the processes' clocks; into *by_events
 * (if not NULL) how many processes' part of it is their events' count
 * instead (they ended, reaped by another than record, their clock gone). */
int64_t cp_kernel_window_cpu_ns(const struct cp_kcollector *k, size_t *by_events);
/* Process pid (record's child) has ended and is not reaped yet: with
 * windows, its CPU clock is read now, its last. */
void cp_kernel_ending(struct cp_kcollector *k, pid_t pid);
/* Reads the names of the JITs' code of the processes still running into
 * their images, letting go of their files: for the writer of a window that
 * is not the last, in a copy of record (a child), whose files are its own. */
void cp_kernel_window_names(struct cp_kcollector *k);

void cp_kernel_free(struct cp_kcollector *k);

#endif
