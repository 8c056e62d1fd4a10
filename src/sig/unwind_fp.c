/*
 * unwind_fp.c -- SIGNAL CONTEXT.  The frame-pointer walk.  It trusts no
 * word it reads: every frame record must lie inside the interrupted
 * thread's stack [lo, hi), be word-aligned, and sit strictly above the one
 * before it, so a program that uses its frame-pointer register for
 * anything else yields a short stack, never a fault or a loop.
 *
 * On an architecture with a link register the caller of frame 0 may be in
 * that register and nowhere on the stack (a leaf, a prologue): the walk
 * then offers it as pcs[1] and flags the sample CP_SAMPLE_LINK_REG, to be
 * confirmed or dropped outside signal context (see arch.h, cp_uc_lr).
 */
#include "arch.h"
#include "sigstate.h"

/* Return addresses below this are not code: a NULL page, small integers. */
#define MIN_CODE_ADDR 4096

/* Is there a whole, aligned frame record at fp inside m?  Signal context. */
static int record_ok(const struct cp_stackmem *m, uintptr_t fp)
{
	const uintptr_t rec = (CP_FRAME_RA_SLOT + 1) * sizeof(uintptr_t);
	return fp >= m->lo && m->hi - m->lo >= rec && fp <= m->hi - rec && (fp & (sizeof(uintptr_t) - 1)) == 0;
}

/* Word k of the frame record at fp, which record_ok() accepted.  Signal
 * context. */
CP_READS_STACK static uintptr_t record_word(const struct cp_stackmem *m, uintptr_t fp, unsigned k)
{
	return ((const uintptr_t *)(fp + (uintptr_t)m->delta))[k];
}

/* Signal context. */
unsigned cp_unwind_fp(const struct cp_regs *r, const struct cp_stackmem *m, uintptr_t *pcs, unsigned max,
		      uint32_t *flags)
{
	unsigned n = 0;
	uintptr_t fp = r->fp;

	*flags = 0;
	if (max == 0)
		return 0;
	pcs[n++] = r->pc;
	/* The link register is news only if the record at fp does not hold
	 * the same return address (it does once the function has stored its
	 * record and called nothing yet). */
	if (r->lr >= MIN_CODE_ADDR && !(record_ok(m, fp) && record_word(m, fp, CP_FRAME_RA_SLOT) == r->lr)) {
		if (n == max) {
			*flags |= CP_SAMPLE_TRUNCATED;
			return n;
		}
		pcs[n++] = r->lr;
		*flags |= CP_SAMPLE_LINK_REG;
	}
	while (record_ok(m, fp)) {
		uintptr_t ra = record_word(m, fp, CP_FRAME_RA_SLOT);
		uintptr_t next = record_word(m, fp, CP_FRAME_FP_SLOT);
		if (ra < MIN_CODE_ADDR)
			return n;
		if (n == max) {
			*flags |= CP_SAMPLE_TRUNCATED;
			return n;
		}
		pcs[n++] = ra;
		if (next <= fp)
			return n;
		fp = next;
	}
	/* The next record lies just past the memory the walk has. */
	const uintptr_t rec = (CP_FRAME_RA_SLOT + 1) * sizeof(uintptr_t);
	if (m->beyond && m->hi >= rec && fp > m->hi - rec && fp - m->hi < CP_BEYOND_SPAN)
		*m->beyond = 1;
	return n;
}
