/*
 * unwind_dwarf.c -- SIGNAL CONTEXT.  The table-driven stack walk: for each
 * frame, the rule for its pc from the object's compact unwind table
 * (unwind_table.h) gives the caller's stack pointer (the CFA), return
 * address and frame pointer; where no rule covers a pc the walk can fall
 * back to the frame-pointer rule for that frame.  It reads no memory but
 * our own tables and words inside the interrupted thread's stack (or the
 * stack a signal frame switches to), word-aligned; every step must move
 * strictly up the stack, and the walk stops at the depth cap.
 */
#include <stdatomic.h>

#include "arch.h"
#include "sigstate.h"
#include "unwind_table.h"

#define WORD ((uintptr_t)sizeof(uintptr_t))
/* Return addresses below this are not code: a NULL page, small integers. */
#define MIN_CODE_ADDR 4096

/* Reads an unsigned LEB128 number at *p (before end); signal context. */
static uint32_t get_uleb(const uint8_t **p, const uint8_t *end)
{
	uint32_t v = 0;
	unsigned shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (shift < 32)
			v |= (uint32_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* Reads a signed LEB128 number at *p (before end); signal context. */
static int32_t get_sleb(const uint8_t **p, const uint8_t *end)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;
	while (*p < end) {
		b = *(*p)++;
		if (shift < 32)
			v |= (uint32_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 32 && (b & 0x40))
		v |= ~(uint32_t)0 << shift;
	return (int32_t)v;
}

/* Decodes a full rule at *p into *r; signal context. */
static void get_full(const uint8_t **p, const uint8_t *end, struct cp_urule *r)
{
	uint8_t f = *p < end ? *(*p)++ : 0;
	struct cp_urule z = { 0 };
	*r = z;
	r->cfa = f & 7;
	r->fp = (f >> 3) & 3;
	r->ra = (f >> 5) & 3;
	if (r->cfa == CP_CFA_SP || r->cfa == CP_CFA_FP || r->cfa == CP_CFA_PLT)
		r->cfa_off = get_sleb(p, end);
	if (r->fp == CP_REG_AT_CFA)
		r->fp_off = get_sleb(p, end);
	if (r->ra == CP_REG_AT_CFA)
		r->ra_off = get_sleb(p, end);
	if (r->cfa == CP_CFA_PLT)
		r->plt = *p < end ? *(*p)++ : 0;
}

/* Signal context. */
void cp_ustate_apply(struct cp_ustate *s, unsigned k, uint32_t operand, const struct cp_urule *full)
{
	struct cp_urule prev = s->cur;
	const int32_t w = (int32_t)WORD;
	switch (k) {
	case CP_UT_POP: s->cur.cfa_off -= w; break;
	case CP_UT_PUSH: s->cur.cfa_off += w; break;
	case CP_UT_POP2: s->cur.cfa_off -= 2 * w; break;
	case CP_UT_PUSH2: s->cur.cfa_off += 2 * w; break;
	case CP_UT_PUSH_FP:
		s->cur.cfa_off += w;
		s->cur.fp = CP_REG_AT_CFA;
		s->cur.fp_off = -s->cur.cfa_off;
		break;
	case CP_UT_SET_OFF: s->cur.cfa_off = (int32_t)(operand * (uint32_t)w); break;
	case CP_UT_TO_FP: s->cur.cfa = CP_CFA_FP; break;
	case CP_UT_TO_SP:
		s->cur.cfa = CP_CFA_SP;
		s->cur.cfa_off = (int32_t)(operand * (uint32_t)w);
		break;
	case CP_UT_RESET: s->cur = s->init; break;
	case CP_UT_BODY: s->cur = s->body; break;
	case CP_UT_UNALLOC: s->cur = s->below; break;
	case CP_UT_FULL: s->cur = *full; break;
	}
	if (s->cur.cfa_off < prev.cfa_off) {
		if (!s->falling)
			s->body = prev;
		s->falling = 1;
	} else {
		s->falling = 0;
		if (s->cur.cfa_off > prev.cfa_off + 2 * w)
			s->below = prev;
	}
}

/* Reads op k's operand at *p into *operand or *full; signal context. */
static void get_operand(unsigned k, const uint8_t **p, const uint8_t *end, uint32_t *operand, struct cp_urule *full)
{
	if (k == CP_UT_SET_OFF || k == CP_UT_TO_SP)
		*operand = get_uleb(p, end);
	else if (k == CP_UT_FULL)
		get_full(p, end, full);
}

/* Signal context. */
const struct cp_utab *cp_uset_find(const struct cp_unwind_set *s, uintptr_t pc)
{
	size_t a = 0, b = s->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		const struct cp_utab *t = s->tab[mid];
		if (pc < t->start)
			b = mid;
		else if (pc >= t->end)
			a = mid + 1;
		else
			return t;
	}
	return NULL;
}

/* Signal context. */
int cp_utab_lookup(const struct cp_utab *t, uintptr_t pc, struct cp_urule *r)
{
	if (pc < t->start || pc >= t->end || t->nblocks == 0)
		return 0;
	uint32_t off = (uint32_t)(pc - t->start);

	/* The last block starting at or before off. */
	uint32_t a = 0, n = t->nblocks;
	while (n > 1) {
		uint32_t half = n / 2;
		if (t->blk_pc[a + half] <= off)
			a += half;
		n -= half;
	}
	if (t->blk_pc[a] > off)
		return 0;

	const uint8_t *p = t->code + t->blk_off[a], *end = t->code + t->code_size;
	uint32_t cur = t->blk_pc[a];
	while (p < end) {
		uint32_t h = *p++;
		uint32_t nops = h >> CP_UT_SHIFT;
		if (nops == CP_UT_NOPS_ESC)
			nops += get_uleb(&p, end);
		uint32_t span = get_uleb(&p, end) * ((h & CP_UT_UNIT16) ? 16u : 1u);
		uint32_t gap = (h & CP_UT_HOLE) ? get_uleb(&p, end) : 0;
		if (off - cur < span) {
			/* This FDE: run its ops up to off. */
			struct cp_ustate st;
			st.init = t->init;
			if (h & CP_UT_INIT)
				get_full(&p, end, &st.init);
			st.cur = st.body = st.below = st.init;
			st.falling = 0;
			uint32_t at = cur;
			for (uint32_t i = 0; i < nops && p < end; i++) {
				uint8_t op = *p++;
				unsigned k = op >> CP_UT_KIND_SHIFT;
				uint32_t adv = op & CP_UT_ADV_MAX, operand = 0;
				struct cp_urule full;
				if (adv == 0)
					adv = get_uleb(&p, end);
				if (off - at < adv)
					break;
				at += adv;
				get_operand(k, &p, end, &operand, &full);
				cp_ustate_apply(&st, k, operand, &full);
			}
			*r = st.cur;
			return 1;
		}
		/* Not this one: skip its initial rule and ops. */
		if (h & CP_UT_INIT) {
			struct cp_urule tmp;
			get_full(&p, end, &tmp);
		}
		for (uint32_t i = 0; i < nops && p < end; i++) {
			uint8_t op = *p++;
			uint32_t operand;
			struct cp_urule full;
			if ((op & CP_UT_ADV_MAX) == 0)
				(void)get_uleb(&p, end);
			get_operand(op >> CP_UT_KIND_SHIFT, &p, end, &operand, &full);
		}
		cur += span;
		if (off - cur < gap)
			return 0;
		cur += gap;
		if (cur > off)
			return 0;
	}
	return 0;
}

/* The state of one frame during the walk. */
struct frame {
	uintptr_t pc, sp, fp, lr;
	uintptr_t floor; /* lowest address of this frame: the caller's lies above */
	uint8_t sp_ok, fp_ok, lr_ok;
	uint8_t exact;   /* pc is where the thread stopped, not a return address */
};

struct walk {
	const struct cp_unwind_set *set;
	const struct cp_thread *thread;
	uintptr_t lo, hi; /* the stack being read */
	int fp_fallback;
};

enum { STEP_OK, STEP_END, STEP_FAIL };

/* Reads the aligned word at a if it lies inside [lo, hi); signal context. */
static int read_word(const struct walk *w, uintptr_t a, uintptr_t *out)
{
	if ((a & (WORD - 1)) || a < w->lo || w->hi - w->lo < WORD || a > w->hi - WORD)
		return 0;
	*out = *(const uintptr_t *)a;
	return 1;
}

/* One step by the frame-pointer rule; signal context. */
static int step_fp(struct walk *w, struct frame *f)
{
	uintptr_t ra, next, fp = f->fp;
	if (!f->fp_ok || fp < f->floor || fp > UINTPTR_MAX - 2 * WORD)
		return STEP_FAIL;
	if (!read_word(w, fp + CP_FRAME_RA_SLOT * WORD, &ra) || !read_word(w, fp + CP_FRAME_FP_SLOT * WORD, &next))
		return STEP_FAIL;
	if (ra < MIN_CODE_ADDR)
		return STEP_END;
	f->pc = ra;
	f->fp = next;
	f->fp_ok = 1;
	f->sp_ok = CP_FRAME_CFA_OFFSET >= 0;
	f->sp = CP_FRAME_CFA_OFFSET >= 0 ? fp + (uintptr_t)CP_FRAME_CFA_OFFSET : 0;
	f->floor = fp + 2 * WORD;
	f->lr_ok = 0;
	f->exact = 0;
	return STEP_OK;
}

/* Steps out of the signal trampoline: the interrupted registers are in the
 * kernel's ucontext on the stack.  Signal context. */
static int step_sigframe(struct walk *w, struct frame *f)
{
	if (!f->sp_ok || f->sp > UINTPTR_MAX - 4096)
		return STEP_FAIL;
	uintptr_t uc = f->sp + CP_SIGFRAME_UC_OFFSET, pc, sp, fp, lr;
	if (!read_word(w, uc + CP_UC_PC_OFFSET, &pc) || !read_word(w, uc + CP_UC_SP_OFFSET, &sp) ||
	    !read_word(w, uc + CP_UC_FP_OFFSET, &fp) || !read_word(w, uc + CP_UC_LR_OFFSET, &lr))
		return STEP_FAIL;
	if (pc < MIN_CODE_ADDR)
		return STEP_END;
	if (sp >= w->lo && sp < w->hi) {
		/* Same stack: the signal frame lies below the interrupted sp. */
		if (sp <= uc)
			return STEP_FAIL;
	} else {
		/* The handler ran on another stack (sigaltstack). */
		uintptr_t lo, hi;
		if (!cp_find_stack(w->thread, sp, &lo, &hi))
			return STEP_FAIL;
		w->lo = sp;
		w->hi = hi;
	}
	f->pc = pc;
	f->sp = sp;
	f->fp = fp;
	f->lr = lr;
	f->sp_ok = f->fp_ok = 1;
	f->lr_ok = CP_HAS_LINK_REGISTER;
	f->floor = sp;
	f->exact = 1;
	return STEP_OK;
}

/* One step by the table rule r; signal context. */
static int step_rule(struct walk *w, struct frame *f, const struct cp_urule *r)
{
	uintptr_t cfa, ra, fp = f->fp;
	int ra_from_lr = 0;

	switch (r->cfa) {
	case CP_CFA_END:
		return STEP_END;
	case CP_CFA_SIGFRAME:
		return step_sigframe(w, f);
	case CP_CFA_SP:
	case CP_CFA_PLT:
		if (!f->sp_ok)
			return STEP_FAIL;
		cfa = f->sp + (uintptr_t)(intptr_t)r->cfa_off;
		if (r->cfa == CP_CFA_PLT && (f->pc & 15) >= r->plt)
			cfa += WORD;
		break;
	case CP_CFA_FP:
		if (!f->fp_ok)
			return STEP_FAIL;
		cfa = f->fp + (uintptr_t)(intptr_t)r->cfa_off;
		break;
	default:
		return STEP_FAIL;
	}

	if (r->ra == CP_REG_AT_CFA) {
		if (!read_word(w, cfa + (uintptr_t)(intptr_t)r->ra_off, &ra))
			return STEP_FAIL;
	} else if (r->ra == CP_REG_SAME && CP_HAS_LINK_REGISTER && f->lr_ok) {
		ra = f->lr;
		ra_from_lr = 1;
	} else {
		return STEP_FAIL;
	}
	/* Strictly up the stack, except that a frameless function whose
	 * return address is still in the link register has CFA == sp. */
	if (!(cfa > f->floor || (ra_from_lr && cfa == f->floor)))
		return STEP_FAIL;
	if (cfa < w->lo || cfa > w->hi)
		return STEP_FAIL;
	if (ra < MIN_CODE_ADDR)
		return STEP_END;

	int fp_ok = f->fp_ok;
	if (r->fp == CP_REG_AT_CFA)
		fp_ok = read_word(w, cfa + (uintptr_t)(intptr_t)r->fp_off, &fp);
	else if (r->fp == CP_REG_UNKNOWN)
		fp_ok = 0;

	f->pc = ra;
	f->sp = cfa;
	f->sp_ok = 1;
	f->fp = fp;
	f->fp_ok = (uint8_t)fp_ok;
	f->lr_ok = 0;
	f->floor = cfa;
	f->exact = 0;
	return STEP_OK;
}

/* Signal context. */
unsigned cp_unwind_dwarf(const ucontext_t *uc, const struct cp_thread *t, int fp_fallback, uintptr_t lo,
			 uintptr_t hi, uintptr_t *pcs, unsigned max, int *truncated, int *first_known)
{
	struct walk w = {
		.set = atomic_load_explicit(&cp_sig.unwind, memory_order_acquire),
		.thread = t,
		.lo = lo,
		.hi = hi,
		.fp_fallback = fp_fallback,
	};
	struct frame f = {
		.pc = cp_uc_pc(uc),
		.sp = cp_uc_sp(uc),
		.fp = cp_uc_fp(uc),
		.lr = cp_uc_lr(uc),
		.sp_ok = 1,
		.fp_ok = 1,
		.lr_ok = CP_HAS_LINK_REGISTER,
		.exact = 1,
	};
	f.floor = f.sp;
	unsigned n = 0;

	*truncated = 0;
	*first_known = 0;
	if (max == 0)
		return 0;
	pcs[n++] = f.pc;
	for (;;) {
		struct cp_urule r;
		uintptr_t look = f.exact ? f.pc : f.pc - 1;
		const struct cp_utab *tab = w.set ? cp_uset_find(w.set, look) : NULL;
		int have = tab && cp_utab_lookup(tab, look, &r) && r.cfa != CP_CFA_NONE;
		int s = STEP_FAIL;
		if (n == 1)
			*first_known = have;
		if (have) {
			struct frame save = f;
			s = step_rule(&w, &f, &r);
			if (s == STEP_FAIL && w.fp_fallback) {
				f = save;
				s = step_fp(&w, &f);
			}
		} else if (w.fp_fallback) {
			s = step_fp(&w, &f);
		}
		if (s != STEP_OK)
			break;
		if (n == max) {
			*truncated = 1;
			break;
		}
		pcs[n++] = f.pc;
	}
	return n;
}
