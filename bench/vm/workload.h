/*
 * workload.h -- the tick-bound VM's accuracy workload: threads that call
 * three leaf functions of known relative cost (1:2:3), either back to back
 * (busy) or in short bursts followed by a short sleep (sleepy: the seed's
 * sleep-heavy pattern), and measure each leaf call's own CPU time with the
 * thread CPU clock: the ground truth a profile is judged against.  Shared
 * by vmwork.c (the program profilers run) and experiments/probe.c (which
 * adds an in-process sampling mechanism under test).
 */
#ifndef CPUPROF_BENCH_VM_WORKLOAD_H
#define CPUPROF_BENCH_VM_WORKLOAD_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#define WL_LEAVES 3
#define WL_MAX_THREADS 64

struct wl_config {
	int threads;      /* worker threads */
	int sleepy;       /* 0: busy; 1: bursts then sleeps */
	double cpu_s;     /* CPU seconds each worker burns */
	unsigned unit_us; /* leaf_a's cost; leaf_b costs 2, leaf_c 3 units */
	unsigned sleep_us;/* sleepy: the sleep asked for after each burst */
};

struct wl_result {
	uint64_t leaf_ns[WL_LEAVES]; /* CPU inside each leaf, all threads */
	uint64_t threads_ns;         /* CPU of the workers, start to end */
	uint64_t own_ns;             /* CPU of the program's own threads in wl_run():
	                                the workers', and the calling thread's there */
	uint64_t process_ns;         /* CPU of the process at the end of the run */
	uint64_t main_ns;            /* CPU of the process when wl_run() began */
	uint64_t wall_ns;            /* wall time of the run */
	uint64_t bursts;             /* rounds of a, b, c */
	uint64_t sleeps, eintr;      /* sleeps asked for; how many ended in EINTR */
	uint64_t sleep_wall_ns;      /* wall time spent in those sleeps */
	uint64_t calib_ns;           /* the part of leaf_ns[0] spent calibrating, on the main thread */
	double iters_per_us;         /* calibration */
};

/* Names of the leaves, and the address range [lo, hi) of each one's code. */
extern const char *const wl_leaf_name[WL_LEAVES];
void wl_leaf_range(int leaf, uintptr_t *lo, uintptr_t *hi);

/* Which leaf (0..2) holds code address pc, or -1. */
int wl_leaf_of(uintptr_t pc);

/* Nonzero while the calling worker is inside its sleep call (for handlers
 * that want to know where a signal found the thread). */
extern __thread volatile sig_atomic_t wl_in_sleep;

/* Optional hooks, called on each worker thread at its start (after the
 * calibration, before the work) and at its end. */
extern void (*wl_thread_start)(int index);
extern void (*wl_thread_end)(int index);

/* Runs the workload; returns 0 or -1 (message on stderr). */
int wl_run(const struct wl_config *c, struct wl_result *r);

/* Parses "-t N -p busy|sleepy -s CPU_S -u UNIT_US -z SLEEP_US" options into
 * c (defaults: 1 thread, busy, 1.0 s, 40 us, 200 us); returns the index of
 * the first unparsed argument or -1 after printing the usage. */
int wl_parse(int argc, char **argv, struct wl_config *c);

/* Prints the ground truth as "truth key=value ..." and "range" lines. */
void wl_print(FILE *f, const struct wl_config *c, const struct wl_result *r);

#endif
