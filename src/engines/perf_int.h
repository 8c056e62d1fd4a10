/*
 * perf_int.h -- the inside of the perf engines (perf.c), shared with their
 * probes (perf_probe.c): what each of the two opens, and opening it.
 */
#ifndef CPUPROF_ENGINES_PERF_INT_H
#define CPUPROF_ENGINES_PERF_INT_H

#include <stdint.h>
#include <sys/types.h>

/* What one of the two engines opens, and what its probe found out. */
struct perf_kind {
	uint32_t type;
	uint64_t config;
	int try_kernel;        /* count kernel mode too where allowed */
	int count_kernel;      /* events count kernel mode too */
	double units_per_ns;   /* event counts per ns of thread CPU time */
};

/* The shortest period in cycles: a few microseconds on any CPU. */
#define MIN_PERIOD_CYCLES 10000

/* The task clock, and the CPU's cycle counter (perf_probe.c). */
extern struct perf_kind cp_perf_task_clock, cp_perf_cycles;

/* Opens k's event on thread tid (0: the calling thread) and CPU cpu (-1:
 * any), sampling every `period` counts (0: counting only), with the
 * sampling attributes of this engine if `ring`.  Returns the fd or a
 * negative errno. */
int cp_perf_open_event(const struct perf_kind *k, pid_t tid, int cpu, uint64_t period, int kernel, int ring,
		       int use_read);

/* The probes (engine.h): whether the kernel lets this process open the
 * engine's event, and how (count_kernel, units_per_ns). */
int cp_perf_probe(int signo, uint64_t period_ns, char *why, size_t len);
int cp_hw_probe(int signo, uint64_t period_ns, char *why, size_t len);

#endif
