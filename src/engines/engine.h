/*
 * engine.h -- the sampling engines.  One file per mechanism, one ops table
 * per engine; choose.c lists them and picks one.
 *
 * Two kinds.  The perf engines (perf.c: perf, hw) need no signal:
 * the kernel writes each sample, with the thread's user registers and a
 * copy of the top of its stack, into rings that cpuprof's own thread
 * drains and walks.  The signal engines (timer.c: timer,
 * itimer.c: itimer) make the kernel signal a thread after each
 * period of its CPU time, and the handler (src/sig/handler.c) walks the
 * live stack; their threads are armed one by one through threads.c.
 *
 * Every op but probe, arm and disarm runs on cpuprof's own thread (the
 * keeper, cpuprof.c), which has a descriptor table of its own: whatever
 * descriptors an engine opens there, the program can neither see nor
 * close.
 */
#ifndef CPUPROF_ENGINE_H
#define CPUPROF_ENGINE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "profile/facts.h"
#include "profile/options.h"
#include "sig/sigstate.h"

/* What an engine is started with. */
struct cp_engine_conf {
	uint64_t period_ns;
	int signo;        /* signal engines: the sampling signal */
	pid_t keeper_tid; /* cpuprof's own thread: never sampled */
	/* The thread that started the profile, and whether it blocks signo:
	 * its mask is all blocked while it makes the keeper, which may look
	 * at it then. */
	pid_t starter_tid;
	int starter_blocks;
	/* Off-CPU time too (perf engines only): a context-switch event beside
	 * each thread's sampling event, its intervals committed to the ring
	 * as CP_SAMPLE_OFF_CPU samples. */
	int off_cpu;
};

/* What an engine tells the profile about its threads. */
struct cp_engine_stats {
	uint64_t armed;        /* threads sampled during the profile */
	uint64_t unarmed;      /* threads the engine could not arm */
	int first_error;       /* negative errno of the first failure */
	/* CPU of the sampled threads that no sample stands for: after each
	 * thread's last sample, and (perf engines without privileges)
	 * periods that ended in the kernel, which raise no sample. */
	uint64_t unsampled_ns;
	const char *unsampled_what; /* the frame that holds it (NULL: the usual one) */
	uint64_t lost, lost_ns; /* samples the kernel had no room for */
	uint64_t throttled;     /* times the kernel throttled sampling */
	/* Its samples are taken in user mode only (perf without the
	 * privileges kernel-mode samples need), and the time in the kernel
	 * that no sample could stand for. */
	int user_only;
	uint64_t kernel_ns;     /* ... the periods that ended in the kernel (cp_perf_counts_weigh) */
	uint64_t wakeup_ns;     /* perf engines: the switches' CPU no task clock counted (cp_perf_unseen) */
	/* Perf engines: what the samples held beyond their threads' CPU
	 * clocks, and took off (cp_engine.clock_factor). */
	uint64_t ahead_ns;
	/* Signal engines: threads that had the sampling signal blocked when
	 * the profile started, out of the interposed calls' reach: no sample
	 * comes from them until they unblock it. */
	uint64_t blocked;
	/* Off-CPU time, when conf.off_cpu asked for it: CP_OFF_CPU_ON, or
	 * CP_OFF_CPU_ABSENT and why (a static string); the switch-outs whose
	 * stack was lost and the events out of step; the truth check of the
	 * threads, once stopped. */
	int off_cpu;
	const char *off_cpu_why;
	uint64_t off_stackless, off_unpaired, off_lost;
	struct cp_switch_check acct;
};

struct cp_engine {
	const char *name;
	/* Which of its signals the handler takes as samples (CP_SIG_NONE:
	 * the engine sends none, and no handler is installed for it). */
	int signal_source;
	/* Its signal is fixed (setitimer sends only SIGPROF), or 0. */
	int fixed_signal;
	/* The kernel raises its samples at the scheduler tick, whatever the
	 * rate asked for. */
	int tick_driven;
	/* It counts user-mode time only: kernel time lands in no sample. */
	int user_only;
	/* Checks that the engine works here, before anything is armed.
	 * Returns 0, or a negative errno with the reason in why[len]. */
	int (*probe)(int signo, uint64_t period_ns, char *why, size_t len);
	/* Starts sampling every thread of the process but the keeper.
	 * Returns 0 or a negative errno. */
	int (*start)(const struct cp_engine_conf *c);
	/* Perf engines: moves what the kernel wrote into cp_sig.ring and
	 * returns how long (ms) the keeper may sleep before the kernel's
	 * rings could fill; NULL for the signal engines. */
	int (*drain)(void);
	/* Stops sampling; no sample of this profile follows it. */
	void (*stop)(void);
	/* Perf engines, once stopped (NULL for the signal engines, whose
	 * samples weigh the thread CPU clock itself): what thread tid's
	 * samples are to be multiplied by so that they hold no more than its
	 * CPU clock says it used, 1 where they do not or it is not known.
	 * The task clock and the cycle counter run on while a virtual
	 * machine's CPU is taken away by its host (the steal time of
	 * /proc/stat), and the thread CPU clocks do not. */
	double (*clock_factor)(uint32_t tid);
	/* Perf engines, while running (a flush): with on, has clock_factor
	 * answer from the threads' CPU clocks as they are now; with 0,
	 * forgets that again. */
	void (*clocks_now)(int on);
	/* The profile's counts so far. */
	void (*stats)(struct cp_engine_stats *s);
	/* In a child after fork(): forgets the parent's state without
	 * touching what belongs to the parent. */
	void (*forget)(void);
	/* The program set ITIMER_PROF itself (NULL: no matter to the
	 * engine).  Returns why sampling stopped, if it did, or NULL. */
	const char *(*program_set_itimer)(void);
	/* Signal engines (threads.c): makes the kernel signal thread t->tid
	 * every period of its CPU time, and undoes it. */
	int (*arm)(struct cp_thread *t, int signo, uint64_t period_ns);
	void (*disarm)(struct cp_thread *t);
};

extern const struct cp_engine cp_engine_perf, cp_engine_hw, cp_engine_timer, cp_engine_itimer;

/* The CPU-time clock of any thread of this process, by thread id: the
 * kernel's encoding, ~tid << 3 | CPUCLOCK_PERTHREAD (4) | CPUCLOCK_SCHED
 * (2), which pthread_getcpuclockid() builds for a pthread. */
static inline clockid_t cp_thread_cpu_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6u);
}

/* The CPU time thread tid of this process has used, into *ns.  Returns 0,
 * or a negative errno (EINVAL once the thread is gone). */
static inline int cp_thread_cpu_ns(pid_t tid, uint64_t *ns)
{
	struct timespec now;
	if (clock_gettime(cp_thread_cpu_clock(tid), &now) < 0)
		return -errno;
	*ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	return 0;
}

#endif
