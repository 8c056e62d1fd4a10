/*
 * stack.c -- SIGNAL CONTEXT.  Where a sampled thread's stack is: the
 * bounds the thread recorded itself, else the readable and writable
 * mapping that holds its stack pointer in the snapshot taken when the
 * profile started.  The walkers read no word outside these bounds.
 */
#include "sigstate.h"

/* Finds the readable+writable mapping that holds sp in the start-time
 * snapshot; 0 if none.  Signal context. */
static int rwmap_find(uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	const struct cp_rwmap *m = cp_sig.rwmap;
	if (!m)
		return 0;
	size_t a = 0, b = m->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (sp < m->range[mid][0])
			b = mid;
		else if (sp >= m->range[mid][1])
			a = mid + 1;
		else {
			*lo = m->range[mid][0];
			*hi = m->range[mid][1];
			return 1;
		}
	}
	return 0;
}

/* Signal context. */
int cp_find_stack(const struct cp_thread *t, uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	if (t && t->stack_hi && sp >= t->stack_lo && sp < t->stack_hi) {
		*lo = t->stack_lo;
		*hi = t->stack_hi;
		return 1;
	}
	return rwmap_find(sp, lo, hi);
}
