/*
 * switches.h -- off-CPU time from the kernel's context-switch records, for
 * whoever reads them: the perf engine inside the profiled process
 * (src/engines/perf.c) and `cpuprof record` from outside it
 * (cli/record/kernel.c).  Both open, beside the task clock, a
 * PERF_COUNT_SW_CONTEXT_SWITCHES event with sample_period 1 (a sample at
 * every switch-out, with the user registers and stack where the thread
 * left user mode: the call into nanosleep, read, futex...) and
 * context_switch (a PERF_RECORD_SWITCH at every switch-out and switch-in,
 * the out ones flagged PREEMPT when the thread was still runnable).  The
 * reader hands this module each thread's events in time order; it pairs
 * every switch-out with the thread's next switch-in and hands back the
 * interval, charged to the stack of the switch-out, as blocked or as
 * waiting to run.
 *
 * It also keeps each thread's lifetime within the profile (from its start:
 * fork, exec or the profile's own start, to its exit or the profile's end)
 * and the off-CPU time charged to it, so that the reader can hold the
 * profile to its truth: a thread's CPU plus its off-CPU time is its
 * lifetime (cp_switches_check).  The sample ids and the flags below are
 * what the two readers share; the rest is plain data.  Not signal context.
 */
#ifndef CPUPROF_PERF_SWITCHES_H
#define CPUPROF_PERF_SWITCHES_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/table.h"

/* Kinds of an off-CPU interval, as handed back (the callers' stack flags
 * have the same values: CP_STACK_OFF_CPU and the rest, stacktab.h). */
#define CP_OFF_CPU 4u       /* off the CPU: blocked (a sleep, I/O, a lock, a wait) */
#define CP_OFF_RUNNABLE 8u  /* ... runnable, waiting for a CPU (preempted, or new) */
#define CP_OFF_BEFORE 16u   /* ... since before the profile saw it run: no stack */

/* One thread as the module knows it. */
struct cp_switch_thread {
	pid_t tid;               /* 0: an empty slot */
	uint64_t start, end;     /* its life within the profile (end 0: alive) */
	uint64_t out_time;       /* off the CPU since (state CP_SW_OFF) */
	uint32_t out_flags;      /* CP_OFF_* of the interval under way */
	void *out_ctx;           /* the reader's, from the switch-out's sample */
	uint64_t out_word;
	uintptr_t *pcs;          /* the stack of that sample */
	uint32_t n, cap;
	uint32_t stack_flags;    /* the reader's flags of that stack (truncated...) */
	int have_stack;          /* pcs[0..n) is the stack of this switch-out */
	uint64_t stack_time;
	int state;               /* CP_SW_UNKNOWN, CP_SW_ON or CP_SW_OFF */
	int new_thread;          /* made during the profile: runnable until it first runs */
	uint64_t in_time;        /* on the CPU since (its start, or its last switch-in) */
	uint64_t last_sample;    /* its last CPU sample */
	uint64_t run_after;      /* CPU it used since that sample (by the switch records) */
	uint64_t off_ns, runnable_ns; /* handed back so far (runnable_ns is part of off_ns) */
	uint64_t switches;       /* intervals handed back */
};

/* What a thread is doing, as far as its events tell. */
enum { CP_SW_UNKNOWN, CP_SW_ON, CP_SW_OFF };

/* Hands back one off-CPU interval of thread tid: ns nanoseconds from
 * time `from`, of kind
 * `kind` (CP_OFF_*), charged to pcs[0..n) (leaf first; n 0 when the stack
 * is not known) with the reader's stack_flags, and the reader's ctx from
 * the sample at the switch-out (NULL without one). */
typedef void cp_switch_emit_fn(void *arg, void *ctx, uint64_t word, pid_t tid, const uintptr_t *pcs, uint32_t n,
			       uint32_t stack_flags, uint32_t kind, uint64_t from, uint64_t ns);

struct cp_switches {
	cp_switch_emit_fn *emit;
	void *arg;
	struct cp_table threads;    /* of struct cp_switch_thread, by tid */
	uint64_t unpaired;          /* switch-ins with no switch-out before them (records lost) */
	uint64_t stackless;         /* switch-outs whose sample was lost */
	/* The ids of the context-switch events (PERF_EVENT_IOC_ID), which
	 * tell their samples from the task clock's in a shared ring. */
	uint64_t *ids;
	size_t nids, capids;
};

/* Bytes of the user stack each switch-out's sample copies: a quarter of
 * a CPU sample's.  Where a thread blocks, its stack is seldom deep: at
 * nearly every switch-out of work_offcpu, xz -T2, a shell pipeline and
 * sqlite3 all of it was within 3 KiB, and 4 KiB kept as much of their
 * off-CPU time whole as 8 (bench/offcpu/whole.sh,
 * docs/benchmarks-offcpu.md); deeper ones end in [truncated].  The copy
 * is a small part of what a switch costs: 1 KiB instead of 8 saved about
 * 1 point of the 7.4% --off-cpu added with both threads of a ping-pong
 * on one CPU (bench/offcpu/paired.sh). */
#ifndef CP_SWITCH_STACK_COPY /* a build may try another (bench/offcpu/paired.sh) */
#define CP_SWITCH_STACK_COPY 4096
#endif

/* The context-switch event both readers open: a sample at every
 * switch-out (period 1, taken in kernel mode: exclude_kernel 0, which
 * needs root, CAP_PERFMON or perf_event_paranoid <= 1) in the layout of
 * every sample (records.h) less the count, with CP_SWITCH_STACK_COPY
 * bytes of the user stack; the switch records; inherited; no side
 * records of its own.  The caller adds what its rings want
 * (inherit_thread, watermarks, enable_on_exec). */
void cp_switches_attr(struct perf_event_attr *a);
/* Opens that event (*a) on pid and cpu writing into ring_fd's ring (or
 * its own, for a probe: -1), and notes its id.  The fd, or a negative
 * errno. */
int cp_switches_open(struct cp_switches *s, struct perf_event_attr *a, pid_t pid, int cpu, int ring_fd);
/* A record of the thread's life or switches (FORK: it starts, made then;
 * EXIT; SWITCH out or in), handed on in time order. */
struct cp_perf_event;
void cp_switches_record(struct cp_switches *s, const struct cp_perf_event *ev);
/* Why off-CPU time is absent when opening that event failed with the
 * negative errno e, and what would allow it, into why[len]. */
void cp_switches_refused(int e, char *why, size_t len);

void cp_switches_init(struct cp_switches *s, cp_switch_emit_fn *emit, void *arg);
void cp_switches_free(struct cp_switches *s);

/* The id of a context-switch event opened (0 or -ENOMEM), and whether a
 * sample's PERF_SAMPLE_IDENTIFIER is one of them. */
int cp_switches_add_id(struct cp_switches *s, uint64_t id);
int cp_switches_is_switch(const struct cp_switches *s, uint64_t id);

/* The events of one thread, in time order (CLOCK_MONOTONIC ns; each
 * thread's events in the order of their times, whatever the other
 * threads').  A thread seen first in another event starts then, except
 * that a switch-in as its first event means it was off the CPU from the
 * profile's start (cp_switches_begin must have said when that was). */

/* Thread tid starts at `time`: made then (`made`: it waits to run until
 * its first switch-in), or found when the profile started (running or
 * not: its first event says).  Nothing if it is known. */
void cp_switches_begin(struct cp_switches *s, pid_t tid, uint64_t time, int made);
/* A CPU sample of tid at `time`: it was on the CPU then. */
void cp_switches_sample(struct cp_switches *s, pid_t tid, uint64_t time);
/* The sample of tid's switch-out: its stack (copied), with the reader's
 * flags and context. */
void cp_switches_out_stack(struct cp_switches *s, pid_t tid, uint64_t time, const uintptr_t *pcs, uint32_t n,
			   uint32_t stack_flags, void *ctx, uint64_t word);
/* tid's switch-out record; `preempted`: it was still runnable. */
void cp_switches_out(struct cp_switches *s, pid_t tid, uint64_t time, int preempted);
/* tid's switch-in record: the interval since its switch-out is handed
 * back. */
void cp_switches_in(struct cp_switches *s, pid_t tid, uint64_t time);
/* tid exits at `time` (on the CPU: an exiting thread runs). */
void cp_switches_end(struct cp_switches *s, pid_t tid, uint64_t time);
/* The profile ends at `time`: every thread still alive ends then, and an
 * interval under way is handed back up to it. */
void cp_switches_finish(struct cp_switches *s, uint64_t time);

/* The thread tid, or NULL. */
const struct cp_switch_thread *cp_switches_thread(const struct cp_switches *s, pid_t tid);

/* The truth check: for each thread whose life began and ended within the
 * profile's knowledge (all of them, once cp_switches_finish has run),
 * its CPU by the task clock (cpu_ns(arg, tid), or -1 if the reader does
 * not know it: that thread is left out) plus its off-CPU time, over its
 * lifetime.  Threads alive less than min_life_ns are left out: a few
 * microseconds of skew between the clocks would be a large ratio. */
struct cp_switch_check {
	uint64_t threads;        /* checked */
	double min, max;         /* (cpu + off) / life over them (0 if none) */
	pid_t worst;             /* the one furthest from 1 */
	uint64_t life_ns, cpu_ns, off_ns; /* its numbers */
};
void cp_switches_check(const struct cp_switches *s, int64_t (*cpu_ns)(void *arg, pid_t tid), void *arg,
		       uint64_t min_life_ns, struct cp_switch_check *out);
/* Adds the check of b (another process, or image) into a. */
void cp_switch_check_add(struct cp_switch_check *a, const struct cp_switch_check *b);

#endif
