/*
 * facts.h -- what a profile knows about itself: how it was taken, how much
 * CPU the kernel charged, how much of it the samples and the frames that
 * are not code stand for.  judge.c turns facts into the profile's
 * comments and its warning.  The profiled process fills them from its
 * session (cpuprof.c); under `cpuprof record` it publishes them in shared
 * memory (shm.h) and the record process adds them up for the whole tree.
 * Plain data: no pointers.
 */
#ifndef CPUPROF_FACTS_H
#define CPUPROF_FACTS_H

#include <stdint.h>

#include "perf/switches.h"

/* How a process image ended, by its own word. */
enum {
	CP_END_NONE = 0,        /* still running, or it never said */
	CP_END_EXIT,            /* exit(): its exit handlers ran */
	CP_END_UNDERSCORE_EXIT, /* _exit(status) */
	CP_END_EXEC,            /* it exec'd another program */
};

/* Timers coarser than this make a kernel "tick-bound": CPU-time timers
 * fire only at its tick. */
#define CP_TICK_BOUND_NS 1000000

struct cp_facts {
	/* How it was taken. */
	char engine[16];
	char engine_reason[512];
	char stopped_why[256]; /* sampling stopped before the profile did */
	int32_t hz, hz_asked, signo, depth, unwind;
	int32_t tick_driven, user_only; /* of the engine (engine.h) */
	int64_t timer_res_ns;
	uint64_t period_ns;
	int64_t wall0_ns;      /* CLOCK_REALTIME at the start */
	int64_t mono0_ns;      /* CLOCK_MONOTONIC then: where its samples' times count from */
	int64_t duration_ns;
	/* What the kernel charged. */
	int64_t cpu_ns;        /* the process's CPU since the start */
	int64_t user_ns;       /* ... in user mode */
	int64_t waits;         /* the program's voluntary context switches */
	/* What the profile holds. */
	uint64_t samples;      /* in the stack table */
	uint64_t sampled_ns;   /* the CPU they stand for */
	uint64_t lost, lost_ns;
	uint64_t unsampled_ns;
	char unsampled_what[96]; /* its frame */
	/* Perf engines.  kernel_ns: with user-mode samples only, the periods
	 * that ended in the kernel (cp_perf_counts_weigh), in no user stack.
	 * wakeup_ns: CPU the kernel charged the threads beyond what their
	 * task clocks counted, as many switches explain (cp_perf_unseen). */
	uint64_t kernel_ns, wakeup_ns;
	uint64_t profiler_ns;  /* cpuprof's own thread's CPU */
	/* Under `cpuprof record` and LD_PRELOAD, whose CPU count is the
	 * process's whole life: what it used before its profile started (the
	 * loader, the constructors, cpuprof's own start), from its own CPU
	 * clock. */
	uint64_t before_ns;
	int64_t cpu0_ns;       /* the process's CPU clock at the start */
	/* Its threads. */
	uint64_t armed, unarmed, blocked, throttled;
	/* Perf engines: CPU the samples held beyond their threads' CPU
	 * clocks (a virtual machine's steal time), taken off them. */
	uint64_t ahead_ns;
	int32_t first_error;
	/* The unwind tables (how many of them read from the table cache:
	 * unwind/table_cache.h), and the objects whose .eh_frame was
	 * rejected ("name: why"), the first few. */
	uint64_t unwind_tables, unwind_bytes, unwind_cached;
	char unwind_rejected[4][256];
	/* How it ended (shm.h). */
	int32_t ended, exit_status, exec_pending;
	/* Off-CPU time (`record --off-cpu`, CPUPROF_OFF_CPU=1): CP_OFF_CPU_*,
	 * and why it is absent when it was asked for. */
	int32_t off_cpu;
	char off_cpu_why[384];
	/* What the stack table holds of it: all of it, the part spent waiting
	 * for a CPU, and how many times threads left the CPU. */
	uint64_t off_ns, runnable_ns, off_switches;
	/* Switch-outs whose sample (the stack) was lost, and switch events
	 * that came out of step (a record lost). */
	uint64_t off_stackless, off_unpaired;
	/* The truth check (perf/switches.h): threads whose CPU plus off-CPU
	 * time was held to their lifetime. */
	struct cp_switch_check acct;
	/* The kernel's frames (`record --kernel`): CP_KFRAMES_*, why they are
	 * absent where they were asked for, and the CPU of the samples taken
	 * in the kernel, which have them: the kernel's part, by samples. */
	int32_t kframes;
	char kframes_why[256];
	uint64_t kframes_ns;
};

/* facts.off_cpu */
enum { CP_OFF_CPU_NO = 0, CP_OFF_CPU_ON = 1, CP_OFF_CPU_ABSENT = 2 };
/* facts.kframes */
enum { CP_KFRAMES_NO = 0, CP_KFRAMES_ON = 1, CP_KFRAMES_ABSENT = 2 };

#endif
