/*
 * sigstate.h -- SIGNAL CONTEXT.  The state the samplers share: the sample
 * ring and how its reader is woken, the signal handler's configuration and
 * the per-thread slots of the signal engines, and the stack walkers.
 * Everything here is set up by normal code while no sampler can see it
 * (before `active` is raised, or after it is lowered and `inflight` has
 * drained to zero); while a profile runs the samplers only read it, except
 * for the fields marked "handler" below, which only the owning thread's
 * handler writes.
 *
 * Two kinds of sampler fill the ring: the signal handler (the timer and
 * itimer engines) and, for the perf engines, cpuprof's own thread, which
 * walks the copies of the stack that the kernel wrote into its perf rings.
 * Both use the walkers below; neither ever blocks.
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

/* How stacks are walked: unwind tables where an object has them and frame
 * pointers elsewhere (auto), tables only (dwarf), frame pointers only. */
enum cp_unwind_mode { CP_UNWIND_AUTO = 0, CP_UNWIND_DWARF, CP_UNWIND_FP };

/* Which signals the handler takes for its own (cp_sigstate.engine). */
enum cp_signal_source {
	CP_SIG_NONE = 0, /* none: every delivery is the program's */
	CP_SIG_TIMER,    /* timer_create timers carrying our cookie (SI_TIMER) */
	CP_SIG_ITIMER,   /* setitimer(ITIMER_PROF) (SI_KERNEL) */
};

/* Thread slot states. */
enum { CP_T_FREE = 0, CP_T_LIVE = 1 };

/* One thread sampled by a signal engine.  Slots live in one table that is
 * allocated once and never unmapped, so a stale pointer to a slot is
 * always readable; `gen` changes every time a slot is released so that
 * stale users can tell. */
struct cp_thread {
	_Atomic int state;
	_Atomic uint32_t gen;
	pid_t tid;
	/* The engine's own state for the thread (src/engines/timer.c keeps its
	 * timer here); zeroed when the slot is taken. */
	uint64_t engine_state[2];
	int own;             /* registered by the thread itself (wrapper or API) */
	uintptr_t stack_lo;  /* stack bounds, 0/0 while unknown (handler may fill) */
	uintptr_t stack_hi;
	uint64_t last_ns;    /* handler: the thread's CPU time at its previous
	                        sample, or when it was armed */
	uint64_t seen_ns;    /* not the handler's: the thread's CPU time when
	                        the registry last read it (threads.c) */
	char name[16];       /* not the handler's: the thread's name when it
	                        was released */
};

/* Read-only snapshot of the process's readable+writable mappings, sorted,
 * adjacent ranges merged: where a thread's stack bounds are looked up when
 * the thread did not record them itself. */
struct cp_rwmap {
	size_t n;
	uintptr_t range[][2];
};

struct cp_sigstate {
	_Atomic int active;   /* a profile is running: samplers may sample */
	_Atomic int inflight; /* handlers currently past the entry check */

	/* Configuration, fixed while a profile runs. */
	int engine;           /* enum cp_signal_source */
	int signo;
	uint64_t period_ns;
	unsigned max_depth;
	struct cp_ring *ring;
	const struct cp_rwmap *rwmap;
	int unwind_mode;      /* enum cp_unwind_mode */

	/* The ring's reader sleeps on this futex word; a sampler that finds
	 * the ring half full bumps it and wakes the reader.  It lives beside
	 * the ring (in shared memory when another process reads the ring),
	 * so the futex is a shared one unless `wake_private`. */
	_Atomic uint32_t *wake;
	int wake_private;

	/* The unwind tables of the loaded objects (NULL: none yet).  Swapped
	 * by normal code while a profile runs; a set it replaces is freed only
	 * once `inflight` has been seen at zero after the swap. */
	_Atomic(const struct cp_unwind_set *) unwind;
	struct cp_ucache *ucache; /* NULL: none; fixed while a profile runs */
	/* A sampler: a sample's pc was in no table (maybe a new object). */
	_Atomic int unwind_miss;
	/* Samplers: the objects whose tables a walk needed, not built yet
	 * (the perf engines' tables are built when first needed, the
	 * signal engines' before any walk: src/unwind/tables.c). */
	_Atomic uint64_t unwind_want[CP_UNWIND_WANT_WORDS];
	/* The generation of the loaded objects as `cpuprof record` knows
	 * them (src/shm/writer.c): each sample carries it. */
	_Atomic uint32_t objgen;

	/* The thread table (never unmapped once allocated). */
	struct cp_thread *threads;
	size_t nthreads;      /* capacity */
	_Atomic size_t hwm;   /* slots [0, hwm) have ever been used */

	/* The disposition the program wants for the sampling signal: where
	 * deliveries that are not ours go. */
	struct sigaction prev;

	/* Counters, reset at start. */
	_Atomic uint64_t samples;  /* samples taken (pushed or lost) */
	_Atomic uint64_t lost;     /* ring full or contended */
	_Atomic uint64_t lost_ns;
	_Atomic uint64_t foreign;  /* signals passed on to the program */
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
/* Did an engine send this signal (a sample, or a straggler of one)?  For
 * the program's sigwait calls, which must never be handed one.  Signal
 * context. */
int cp_sig_from_engine(int sig, const siginfo_t *si);

/* Sample flags (struct cp_sample.flags); the stack table keeps them. */
#define CP_SAMPLE_TRUNCATED 1u /* cut at the depth limit: more frames existed */
#define CP_SAMPLE_LINK_REG 2u  /* pcs[1] is the link register, unconfirmed */
/* Off-CPU time, not CPU (the perf engine with off_cpu, never a signal
 * handler): weight_ns is the time the thread spent off the CPU after
 * leaving it with this stack; RUNNABLE: waiting for a CPU; BEFORE: since
 * before the profile saw it run, no stack. */
#define CP_SAMPLE_OFF_CPU 4u
#define CP_SAMPLE_RUNNABLE 8u
#define CP_SAMPLE_BEFORE 16u

/* The registers a stack walk starts from: where the thread was (pc), its
 * stack and frame pointers, and its link register (0 on an architecture
 * without one). */
struct cp_regs {
	uintptr_t pc, sp, fp, lr;
};

/* The stack memory a walk may read: the words in [lo, hi) of the sampled
 * thread's address space, which are at address + delta in ours (delta 0
 * for the live stack of a thread of this process; for a copy, where the
 * copy is).  A walk over a copy never leaves it (`copy`: a signal frame
 * that switched stacks ends the walk); over a live stack it may follow a
 * signal frame onto another stack of `thread` (cp_find_stack).  If
 * `beyond` is not NULL, a walk that ends because the next frame lies just
 * past hi (within CP_BEYOND_SPAN: the stack went on past the memory the
 * walk had, a copy cut short) sets *beyond to 1. */
#define CP_BEYOND_SPAN 65536
struct cp_stackmem {
	int *beyond;
	uintptr_t lo, hi;
	intptr_t delta;
	int copy;
	const struct cp_thread *thread;
};

/* Walks frame pointers from r, reading only words inside m.  r->lr is the
 * link register (0 if the architecture has none); unless the record at fp
 * already holds it, it becomes pcs[1] and CP_SAMPLE_LINK_REG is set.
 * Writes at most max pcs, pcs[0] = r->pc, and sets CP_SAMPLE_TRUNCATED
 * when more frames existed.  Returns the number of pcs written. */
unsigned cp_unwind_fp(const struct cp_regs *r, const struct cp_stackmem *m, uintptr_t *pcs, unsigned max,
		      uint32_t *flags);

/* Walks the stack from r with the unwind tables of u, falling back to the
 * frame-pointer rule for a frame without a table rule if fp_fallback is
 * set; a frame whose table is not built yet is noted in u->want.  Reads
 * only words inside m (see cp_stackmem).  Writes at most max pcs, pcs[0] =
 * r->pc, the rest return addresses; sets *truncated when more frames
 * existed, and *complete when a table covered pcs[0] and no frame's table
 * was missing for not being built yet (a walk that is not complete may
 * be worth doing again once they are).  Returns the number of pcs
 * written. */
unsigned cp_unwind_dwarf(const struct cp_unwinder *u, const struct cp_regs *r, const struct cp_stackmem *m,
			 int fp_fallback, uintptr_t *pcs, unsigned max, int *truncated, int *complete);

/* Walks the stack from r by cp_sig.unwind_mode into s (pcs, n, flags),
 * at most cp_sig.max_depth frames, with the tables of cp_sig.unwind.
 * Returns 1 if the first pc was covered by an unwind table (or tables are
 * not in use), 0 if it may be code loaded since the tables were built or
 * a frame's table is not built yet (cp_sig.unwind_want says which). */
int cp_unwind(const struct cp_regs *r, const struct cp_stackmem *m, struct cp_sample *s);

/* The bounds [*lo, *hi) of the stack holding sp: thread t's own stack if it
 * recorded one that holds sp, else the readable+writable mapping holding sp
 * in the start-time snapshot.  Returns 0 if none is known. */
int cp_find_stack(const struct cp_thread *t, uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

/* Commits the filled sample s to cp_sig.ring and wakes the ring's reader
 * if the ring is half full (or if `urgent`: a pc in no unwind table). */
void cp_sample_commit(struct cp_sample *s, int urgent);

/* Wakes the ring's reader (a futex wake: no descriptor is involved). */
void cp_wake_reader(void);

#endif
