/*
 * handler.c -- SIGNAL CONTEXT.  The sampling signal handler of the timer
 * and itimer engines.  The handler decides whether the signal came from the
 * armed engine, weighs the sample by the CPU time it stands for, walks the
 * stack into a ring cell and commits it.  Any other delivery of the signal
 * gets what the program asked for (its handler, with its mask; or the
 * default action, which for every signal we sample with terminates the
 * process; or nothing), as if cpuprof were not there.  It runs with every
 * signal blocked, so no handler of the program can interrupt it and
 * longjmp out of it.  No allocation, no stdio, no locks; errno is
 * preserved; every memory read is bounded by the thread's stack or by our
 * own tables.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "sigstate.h"
#include "sigprog.h"
#include "clock.h"

/* The value the timer engine attaches to its signals. */
#define TIMER_COOKIE ((void *)&cp_sig)

/* The calling thread's live slot, or NULL.  Tries the thread's cached slot,
 * then scans the table by thread id and caches what it finds. */
static struct cp_thread *own_slot(pid_t tid)
{
	struct cp_thread *t = cp_tls_slot;
	if (t && atomic_load_explicit(&t->state, memory_order_acquire) == CP_T_LIVE &&
	    atomic_load_explicit(&t->gen, memory_order_relaxed) == cp_tls_gen)
		return t;
	size_t hwm = atomic_load_explicit(&cp_sig.hwm, memory_order_acquire);
	for (size_t i = 0; i < hwm; i++) {
		t = &cp_sig.threads[i];
		if (t->tid == tid && atomic_load_explicit(&t->state, memory_order_acquire) == CP_T_LIVE) {
			cp_tls_gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
			cp_tls_slot = t;
			return t;
		}
	}
	return NULL;
}

/* Signal context.  Sets *weight to the calling thread's CPU time since
 * t->last_ns and moves t->last_ns to now; 0 if the clock cannot be read. */
static int take_cpu(struct cp_thread *t, uint64_t *weight)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	*weight = now - t->last_ns;
	/* Atomic: cpuprof_flush() reads it from another thread. */
	__atomic_store_n(&t->last_ns, now, __ATOMIC_RELAXED);
	return 1;
}

/* Is this signal one the engine sent?  Returns 1 and the sample's weight
 * if so, 0 if it is the program's, -1 if it is ours but must be dropped
 * (sent before the profile stopped, or to a thread without a slot). */
static int classify(int sig, const siginfo_t *si, struct cp_thread *t, uint64_t *weight)
{
	int active = atomic_load_explicit(&cp_sig.active, memory_order_acquire);
	/* ITIMER_PROF's signals carry no cookie: while its timer runs, and
	 * for a while after it stopped (whatever engine samples now), a
	 * SIGPROF from the kernel is ours; later ones are the program's own
	 * timer's. */
	int itimer = sig == SIGPROF && si->si_code == SI_KERNEL &&
		     cp_mono_ns() < atomic_load_explicit(&cp_prog.itimer_grace_ns, memory_order_relaxed);
	if (itimer && !(active && cp_sig.engine == CP_SIG_ITIMER))
		return -1;
	/* A timer_create timer's signals carry our cookie: one of them is
	 * ours whatever engine samples now, and dropped unless the timer
	 * engine runs.  A thread preempted between the kernel's delivery and
	 * this handler runs it late, maybe after the stop, under a later
	 * profile's engine or none (unit_late_signal). */
	int timer = si->si_code == SI_TIMER && si->si_value.sival_ptr == TIMER_COOKIE;
	if (timer && !(active && cp_sig.engine == CP_SIG_TIMER))
		return -1;
	switch (cp_sig.engine) {
	case CP_SIG_TIMER:
		if (!timer)
			return 0;
		/* The thread's CPU clock says exactly what this sample stands
		 * for, however late the tick-driven timer fired; the overrun
		 * count is the fallback for a thread we have no slot for. */
		if (!t || !take_cpu(t, weight))
			*weight = (1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0)) * cp_sig.period_ns;
		return 1;
	case CP_SIG_ITIMER:
		if (!itimer)
			return 0;
		/* The process-wide timer's signal goes to whichever thread
		 * was running at the tick: its CPU clock says what the sample
		 * stands for; one period is the fallback without a slot. */
		if (!t || !take_cpu(t, weight))
			*weight = cp_sig.period_ns;
		return 1;
	}
	return 0;
}

int cp_sig_from_engine(int sig, const siginfo_t *si)
{
	uint64_t weight;
	return classify(sig, si, NULL, &weight) != 0;
}

static void sample(const ucontext_t *uc, struct cp_thread *t, pid_t tid, uint64_t weight)
{
	struct cp_ring *r = cp_sig.ring;
	atomic_fetch_add_explicit(&cp_sig.samples, 1, memory_order_relaxed);
	struct cp_sample *s = cp_ring_claim(r);
	if (!s) {
		atomic_fetch_add_explicit(&cp_sig.lost, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&cp_sig.lost_ns, weight, memory_order_relaxed);
		return;
	}
	struct cp_regs regs;
	CP_UC_REGS((const ucontext_t *)uc, &regs);
	struct cp_stackmem m = { .thread = t };
	if (cp_find_stack(t, regs.sp, &m.lo, &m.hi)) {
		/* Remember the bounds of a thread that did not record its own. */
		if (t && !t->stack_hi) {
			t->stack_lo = m.lo;
			t->stack_hi = m.hi;
		}
		m.lo = regs.sp;
	}
	int known = cp_unwind(&regs, &m, s);
	s->weight_ns = weight;
	s->time = cp_mono_ns();
	s->tid = (uint32_t)tid;
	s->gen = atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	cp_sample_commit(s, !known);
}

#ifdef CPUPROF_BENCH
/* Signal context.  The benchmark build times the handler. */
static uint64_t bench_now(void)
{
	return cp_mono_ns();
}
#endif

void cp_sig_handler(int sig, siginfo_t *si, void *ucontext)
{
	int saved_errno = errno;
#ifdef CPUPROF_BENCH
	uint64_t bench_t0 = bench_now();
#endif
	atomic_fetch_add_explicit(&cp_sig.inflight, 1, memory_order_seq_cst);

	struct cp_thread *t = NULL;
	pid_t tid = 0;
	if (atomic_load_explicit(&cp_sig.active, memory_order_seq_cst)) {
		tid = (pid_t)syscall(SYS_gettid);
		t = own_slot(tid);
	}

	uint64_t weight = 0;
	int c = classify(sig, si, t, &weight);
	if (c > 0)
		sample(ucontext, t, tid, weight);

#ifdef CPUPROF_BENCH
	/* A call that took over 200 us was preempted: that is the wait for
	 * the CPU, not the handler, and is only counted. */
	uint64_t bench_dt = bench_now() - bench_t0;
	if (bench_dt < 200000) {
		atomic_fetch_add_explicit(&cp_sig.bench_handler_ns, bench_dt, memory_order_relaxed);
		atomic_fetch_add_explicit(&cp_sig.bench_handler_calls, 1, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&cp_sig.bench_handler_slow, 1, memory_order_relaxed);
	}
#endif
	atomic_fetch_sub_explicit(&cp_sig.inflight, 1, memory_order_seq_cst);
	if (c == 0) {
		atomic_fetch_add_explicit(&cp_sig.foreign, 1, memory_order_relaxed);
		cp_prog_deliver(sig, si, ucontext);
	}
	errno = saved_errno;
}
