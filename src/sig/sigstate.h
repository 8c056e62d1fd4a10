/*
 * sigstate.h -- SIGNAL CONTEXT.  The state the sampling signal handler
 * reads, and the per-thread slots it samples into.  Everything here is set
 * up by normal code while the handler cannot see it (before `active` is
 * raised, or after it is lowered and `inflight` has drained to zero); while
 * a profile runs the handler only reads it, except for the fields marked
 * "handler" below, which only the owning thread's handler writes.
 *
 * Files under src/sig/ include nothing from the rest of cpuprof.
 */
#ifndef CPUPROF_SIGSTATE_H
#define CPUPROF_SIGSTATE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

#include "ring.h"
#include "unwind_table.h"

enum cp_engine_kind { CP_ENGINE_PERF = 1, CP_ENGINE_TIMER, CP_ENGINE_ITIMER };

/* How stacks are walked: unwind tables where an object has them and frame
 * pointers elsewhere (auto), tables only (dwarf), frame pointers only. */
enum cp_unwind_mode { CP_UNWIND_AUTO = 0, CP_UNWIND_DWARF, CP_UNWIND_FP };

/* Thread slot states. */
enum { CP_T_FREE = 0, CP_T_LIVE = 1 };

/* One sampled thread.  Slots live in one table that is allocated once and
 * never unmapped, so a stale pointer to a slot is always readable; `gen`
 * changes every time a slot is released so that stale users can tell. */
struct cp_thread {
	_Atomic int state;
	_Atomic uint32_t gen;
	pid_t tid;
	int perf_fd;         /* perf engine: the thread's task-clock event, or -1 */
	timer_t timer;       /* timer engine */
	int has_timer;
	int own;             /* registered by the thread itself (wrapper or API) */
	uintptr_t stack_lo;  /* stack bounds, 0/0 while unknown (handler may fill) */
	uintptr_t stack_hi;
	uint64_t last_ns;    /* handler: the thread's CPU time at its previous
	                        sample, or when it was armed */
	uint64_t seen_ns;    /* not the handler's: the thread's CPU time when
	                        the registry last read it (threads.c) */
};

/* Read-only snapshot of the process's readable+writable mappings, sorted,
 * adjacent ranges merged: where a thread's stack bounds are looked up when
 * the thread did not record them itself. */
struct cp_rwmap {
	size_t n;
	uintptr_t range[][2];
};

struct cp_sigstate {
	_Atomic int active;   /* a profile is running: the handler may sample */
	_Atomic int inflight; /* handlers currently past the entry check */

	/* Configuration, fixed while a profile runs. */
	int engine;
	int signo;
	uint64_t period_ns;
	unsigned max_depth;
	struct cp_ring *ring;
	const struct cp_rwmap *rwmap;
	int wake_fd;          /* eventfd of the drain thread */
	int unwind_mode;      /* enum cp_unwind_mode */

	/* The unwind tables of the loaded objects (NULL: none yet).  Swapped
	 * by normal code while a profile runs; a set it replaces is freed only
	 * once `inflight` has been seen at zero after the swap. */
	_Atomic(const struct cp_unwind_set *) unwind;
	struct cp_ucache *ucache; /* NULL: none; fixed while a profile runs */
	/* Handler: a sample's pc was in no table (maybe a new object). */
	_Atomic int unwind_miss;

	/* The thread table (never unmapped once allocated). */
	struct cp_thread *threads;
	size_t nthreads;      /* capacity */
	_Atomic size_t hwm;   /* slots [0, hwm) have ever been used */

	/* Where signals that are not ours go. */
	struct sigaction prev;

	/* Counters, reset at start. */
	_Atomic uint64_t samples;  /* samples taken (pushed or lost) */
	_Atomic uint64_t lost;     /* ring full or contended */
	_Atomic uint64_t lost_ns;
	_Atomic uint64_t foreign;  /* signals passed on to the previous handler */
	_Atomic int wake_pending;
#ifdef CPUPROF_BENCH
	/* Benchmark build only: the handler's own time and calls, summed,
	 * and the calls left out because they were preempted. */
	_Atomic uint64_t bench_handler_ns, bench_handler_calls, bench_handler_slow;
#endif
};

extern struct cp_sigstate cp_sig;

/* On functions that read the interrupted thread's stack: those words lie
 * inside its bounds but may be in a sanitizer's poisoned redzones, which
 * is fine for us; only a sanitizer build notices the difference. */
#define CP_READS_STACK __attribute__((no_sanitize_address))

/* The calling thread's slot and its generation when it was taken, cached
 * by the thread itself or by its handler.  initial-exec TLS needs no
 * allocation on access, so the handler may read it. */
extern __thread struct cp_thread *cp_tls_slot __attribute__((tls_model("initial-exec")));
extern __thread uint32_t cp_tls_gen __attribute__((tls_model("initial-exec")));

/* The sampling signal handler (SA_SIGINFO). */
void cp_sig_handler(int sig, siginfo_t *info, void *ucontext);

/* Sample flags (struct cp_sample.flags); the stack table keeps them. */
#define CP_SAMPLE_TRUNCATED 1u /* cut at the depth limit: more frames existed */
#define CP_SAMPLE_LINK_REG 2u  /* pcs[1] is the link register, unconfirmed */

/* Walks frame pointers from (pc, fp) reading only words inside [lo, hi).
 * lr is the link register at the interrupt (0 if the architecture has
 * none); unless the record at fp already holds it, it becomes pcs[1] and
 * CP_SAMPLE_LINK_REG is set.  Writes at most max pcs, pcs[0] = pc, and
 * sets CP_SAMPLE_TRUNCATED when more frames existed.  Returns the number
 * of pcs written. */
unsigned cp_unwind_fp(uintptr_t pc, uintptr_t fp, uintptr_t lr, uintptr_t lo, uintptr_t hi,
		      uintptr_t *pcs, unsigned max, uint32_t *flags);

/* Walks the stack of the context uc with the unwind tables in cp_sig.unwind,
 * falling back to the frame-pointer rule for a frame without a table rule
 * if fp_fallback is set.  Reads only words inside [lo, hi) (lo being the
 * interrupted sp), or inside the stack a signal frame leads to (found with
 * cp_find_stack for thread t).  Writes at most max pcs, pcs[0] = the
 * interrupted pc, the rest return addresses; sets *truncated when more
 * frames existed and *first_known when a table covered pcs[0].  Returns
 * the number of pcs written. */
unsigned cp_unwind_dwarf(const ucontext_t *uc, const struct cp_thread *t, int fp_fallback, uintptr_t lo,
			 uintptr_t hi, uintptr_t *pcs, unsigned max, int *truncated, int *first_known);

/* The bounds [*lo, *hi) of the stack holding sp: thread t's own stack if it
 * recorded one that holds sp, else the readable+writable mapping holding sp
 * in the start-time snapshot.  Returns 0 if none is known.  Signal context. */
int cp_find_stack(const struct cp_thread *t, uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

#endif
