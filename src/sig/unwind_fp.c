/*
 * unwind_fp.c -- SIGNAL CONTEXT.  The frame-pointer walk.  It trusts no
 * word it reads: every frame record must lie inside the interrupted
 * thread's stack [lo, hi), be word-aligned, and sit strictly above the one
 * before it, so a program that uses its frame-pointer register for
 * anything else yields a short stack, never a fault or a loop.
 */
#include "arch.h"
#include "sigstate.h"

/* Return addresses below this are not code: a NULL page, small integers. */
#define MIN_CODE_ADDR 4096

/* Signal context. */
CP_READS_STACK unsigned cp_unwind_fp(uintptr_t pc, uintptr_t fp, uintptr_t lo, uintptr_t hi,
		      uintptr_t *pcs, unsigned max, int *truncated)
{
	const uintptr_t rec = (CP_FRAME_RA_SLOT + 1) * sizeof(uintptr_t);
	unsigned n = 0;

	*truncated = 0;
	if (max == 0)
		return 0;
	pcs[n++] = pc;
	while (fp >= lo && hi - lo >= rec && fp <= hi - rec && (fp & (sizeof(uintptr_t) - 1)) == 0) {
		const uintptr_t *frame = (const uintptr_t *)fp;
		uintptr_t ra = frame[CP_FRAME_RA_SLOT];
		uintptr_t next = frame[CP_FRAME_FP_SLOT];
		if (ra < MIN_CODE_ADDR)
			break;
		if (n == max) {
			*truncated = 1;
			break;
		}
		pcs[n++] = ra;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}
