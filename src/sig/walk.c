/*
 * walk.c -- SIGNAL CONTEXT.  A sample's stack walk as the profile's
 * unwind mode says: the tables (unwind_dwarf.c), with or without the
 * frame-pointer rule for frames they do not cover, or frame pointers alone
 * (unwind_fp.c), at most cp_sig.max_depth frames.
 */
#include "sigstate.h"

/* Signal context. */
int cp_unwind(const struct cp_regs *r, const struct cp_stackmem *m, struct cp_sample *s)
{
	uint32_t flags = 0;
	int truncated = 0, known = 1;
	if (cp_sig.unwind_mode == CP_UNWIND_FP) {
		s->n = (uint16_t)cp_unwind_fp(r, m, s->pcs, cp_sig.max_depth, &flags);
	} else {
		/* seq_cst: after the handler's in-flight increment in the one
		 * total order, which is what lets cp_unwind_reclaim() free a
		 * replaced set. */
		struct cp_unwinder u = {
			.set = atomic_load_explicit(&cp_sig.unwind, memory_order_seq_cst),
			.cache = cp_sig.ucache,
			.want = cp_sig.unwind_want,
		};
		s->n = (uint16_t)cp_unwind_dwarf(&u, r, m, cp_sig.unwind_mode == CP_UNWIND_AUTO, s->pcs, cp_sig.max_depth,
						 &truncated, &known);
		flags = truncated ? CP_SAMPLE_TRUNCATED : 0;
	}
	s->flags = (uint16_t)flags;
	return known;
}
