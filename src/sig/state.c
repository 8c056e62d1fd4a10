/*
 * state.c -- SIGNAL CONTEXT.  The state every sampler shares (sigstate.h)
 * and what every sampler does last: commit a sample into the ring and, when
 * the ring fills or a pc is in no unwind table, wake the ring's reader.
 * The signal handler (handler.c) and cpuprof's own thread, which walks the
 * perf engines' stack copies (src/engines/perf.c), both end here.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sigstate.h"

struct cp_sigstate cp_sig;
__thread struct cp_thread *cp_tls_slot __attribute__((tls_model("initial-exec")));
__thread uint32_t cp_tls_gen __attribute__((tls_model("initial-exec")));

/* Signal context. */
void cp_wake_reader(void)
{
	_Atomic uint32_t *w = cp_sig.wake;
	if (!w)
		return;
	atomic_fetch_add_explicit(w, 1, memory_order_release);
	/* Every sleeper: the keeper, and in stream mode the stream's reader. */
	syscall(SYS_futex, w, cp_sig.wake_private ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* Signal context. */
void cp_sample_commit(struct cp_sample *s, int urgent)
{
	struct cp_ring *r = cp_sig.ring;
	cp_ring_commit(r, s);
	/* Wake the reader once the ring is half full, or when a pc is in no
	 * unwind table: an object may have been loaded since the tables were
	 * built (the reader rate-limits what that costs). */
	if ((cp_ring_used(r) >= r->cells / 2 &&
	     !atomic_exchange_explicit(&cp_sig.wake_pending, 1, memory_order_relaxed)) ||
	    (urgent && !atomic_load_explicit(&cp_sig.unwind_miss, memory_order_relaxed) &&
	     !atomic_exchange_explicit(&cp_sig.unwind_miss, 1, memory_order_relaxed)))
		cp_wake_reader();
}
