/*
 * unwind_dwarf.c -- SIGNAL CONTEXT.  The table-driven stack walk: for each
 * frame, the rule for its pc from the object's compact unwind table
 * (unwind_table.h) gives the caller's stack pointer (the CFA), return
 * address and frame pointer; where no rule covers a pc the walk can fall
 * back to the frame-pointer rule for that frame.  It reads no memory but
 * our own tables and words inside the sampled thread's stack (or the stack
 * a signal frame switches to, on a live stack), word-aligned, directly or
 * in a copy of the stack; every step must move strictly up the stack, and
 * the walk stops at the depth cap.
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

/* Reads op k's operand at *p into *operand or *full; signal context. */
static void get_operand(unsigned k, const uint8_t **p, const uint8_t *end, uint32_t *operand, struct cp_urule *full)
{
	if (k == CP_UT_SET_OFF || k == CP_UT_TO_SP)
		*operand = get_uleb(p, end);
	else if (k == CP_UT_FULL)
		get_full(p, end, full);
}

/* Signal context. */
const struct cp_urange *cp_uset_find(const struct cp_unwind_set *s, uintptr_t pc)
{
	size_t a = 0, b = s->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		const struct cp_urange *r = &s->r[mid];
		if (pc < r->lo)
			b = mid;
		else if (pc >= r->hi)
			a = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* Signal context. */
void cp_unwind_want_mark(_Atomic uint64_t *want, uint32_t obj)
{
	if (!want)
		return;
	if (obj > CP_UNWIND_WANT_ANY)
		obj = CP_UNWIND_WANT_ANY;
	_Atomic uint64_t *w = &want[obj / 64];
	uint64_t bit = 1ull << (obj % 64);
	if (!(atomic_load_explicit(w, memory_order_relaxed) & bit))
		atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
}

/* Signal context. */
int cp_utab_lookup(const struct cp_utab *t, uintptr_t pc, struct cp_urule *r)
{
	if (pc < t->start || pc >= t->end || t->nblocks == 0)
		return 0;
	uint32_t off = (uint32_t)(pc - t->start);

	/* The last block starting at or before off: between the blocks of
	 * this page's and the next page's first bytes. */
	uint32_t a = 0, n = t->nblocks, page = off >> CP_UT_PAGE_SHIFT;
	if (page < t->npages) {
		a = t->page_blk[page];
		n = (page + 1 < t->npages ? t->page_blk[page + 1] : t->nblocks - 1) + 1 - a;
	}
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
		uint32_t len = h >> CP_UT_SHIFT;
		if (len == CP_UT_LEN_ESC)
			len += get_uleb(&p, end);
		uint32_t span = get_uleb(&p, end) * ((h & CP_UT_UNIT16) ? 16u : 1u);
		uint32_t gap = (h & CP_UT_HOLE) ? get_uleb(&p, end) : 0;
		struct cp_ustate st;
		st.init = t->init;
		if (h & CP_UT_INIT)
			get_full(&p, end, &st.init);
		if ((size_t)(end - p) < len)
			return 0;
		const uint8_t *ops_end = p + len;
		if (off - cur < span) {
			/* This FDE: run its ops up to off. */
			st.cur = st.body = st.below = st.init;
			st.falling = 0;
			uint32_t at = cur;
			while (p < ops_end) {
				uint8_t op = *p++;
				unsigned k = op >> CP_UT_KIND_SHIFT;
				uint32_t adv = op & CP_UT_ADV_MAX, operand = 0;
				struct cp_urule full;
				if (adv == 0)
					adv = get_uleb(&p, ops_end);
				if (off - at < adv)
					break;
				at += adv;
				get_operand(k, &p, ops_end, &operand, &full);
				cp_ustate_apply(&st, k, operand, &full);
			}
			*r = st.cur;
			return 1;
		}
		/* Not this one. */
		p = ops_end;
		cur += span;
		if (off - cur < gap)
			return 0;
		cur += gap;
	}
	return 0;
}

/* The rule for pc: from the cache, else from the set's tables (and then
 * cached).  Returns 1 with *r, or 0 if no table has a rule for pc (which
 * is cached too, unless the table is only not built yet: then the walk
 * asks for it).  Signal context. */
static int lookup_rule(const struct cp_unwinder *u, uintptr_t pc, struct cp_urule *r, int *lacked)
{
	_Static_assert(sizeof(struct cp_urule) == 2 * sizeof(uint64_t), "a rule is two words");
	const struct cp_unwind_set *set = u->set;
	struct cp_ucache *c = u->cache;
	struct cp_ucache_entry *e = NULL;
	union {
		struct cp_urule r;
		uint64_t w[2];
	} v;

	if (c) {
		uint64_t h = (uint64_t)pc * 0x9e3779b97f4a7c15ull;
		e = &c->e[(h >> 40) & (CP_UCACHE_ENTRIES - 1)];
		uint64_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (!(s1 & 1) && atomic_load_explicit(&e->pc, memory_order_relaxed) == pc &&
		    atomic_load_explicit(&e->gen, memory_order_relaxed) == set->gen) {
			v.w[0] = atomic_load_explicit(&e->rule[0], memory_order_relaxed);
			v.w[1] = atomic_load_explicit(&e->rule[1], memory_order_relaxed);
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&e->seq, memory_order_relaxed) == s1) {
				*r = v.r;
				return r->cfa != CP_CFA_NONE;
			}
		}
	}

	const struct cp_urange *g = cp_uset_find(set, pc);
	if (g && g->state == CP_UR_LAZY) {
		cp_unwind_want_mark(u->want, g->obj);
		*lacked = 1;
		return 0;
	}
	if (!g || g->state != CP_UR_TABLE || !cp_utab_lookup(g->tab, pc - g->bias, &v.r)) {
		struct cp_urule none = { 0 };
		v.r = none;
	}
	*r = v.r;

	if (e) {
		uint64_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
		if (!(s & 1) && atomic_compare_exchange_strong_explicit(&e->seq, &s, s + 1, memory_order_acquire,
									 memory_order_relaxed)) {
			atomic_store_explicit(&e->pc, pc, memory_order_relaxed);
			atomic_store_explicit(&e->gen, set->gen, memory_order_relaxed);
			atomic_store_explicit(&e->rule[0], v.w[0], memory_order_relaxed);
			atomic_store_explicit(&e->rule[1], v.w[1], memory_order_relaxed);
			atomic_store_explicit(&e->seq, s + 2, memory_order_release);
		}
	}
	return r->cfa != CP_CFA_NONE;
}

/* The state of one frame during the walk. */
struct frame {
	uintptr_t pc, sp, fp, lr;
	uintptr_t floor; /* lowest address of this frame: the caller's lies above */
	uint8_t sp_ok, fp_ok, lr_ok;
	uint8_t exact;   /* pc is where the thread stopped, not a return address */
};

struct walk {
	const struct cp_unwinder *u;
	struct cp_stackmem m; /* the stack being read */
	int fp_fallback;
	int beyond;           /* this step wanted memory just past m.hi */
};

/* Notes that the walk wanted memory up to address a, past the stack it
 * has: just past it means the stack went on (cp_stackmem.beyond).  Signal
 * context. */
static void note_beyond(struct walk *w, uintptr_t a)
{
	if (a > w->m.hi && a - w->m.hi < CP_BEYOND_SPAN)
		w->beyond = 1;
}

enum { STEP_OK, STEP_END, STEP_FAIL };

/* Reads the aligned word at a if it lies inside the stack; signal context. */
CP_READS_STACK static int read_word(struct walk *w, uintptr_t a, uintptr_t *out)
{
	if ((a & (WORD - 1)) || a < w->m.lo || w->m.hi - w->m.lo < WORD || a > w->m.hi - WORD) {
		if (!(a & (WORD - 1)) && a >= w->m.lo)
			note_beyond(w, a + WORD);
		return 0;
	}
	*out = *(const uintptr_t *)(a + (uintptr_t)w->m.delta);
	return 1;
}

/* One step by the frame-pointer rule; f changes only if it succeeds.
 * Signal context. */
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
 * kernel's ucontext on the stack.  f and w change only if it succeeds.
 * Signal context. */
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
	if (sp >= w->m.lo && sp < w->m.hi) {
		/* Same stack: the signal frame lies below the interrupted sp. */
		if (sp <= uc)
			return STEP_FAIL;
	} else {
		/* The handler ran on another stack (sigaltstack), which a copy
		 * of this one does not hold. */
		uintptr_t lo, hi;
		if (w->m.copy || !cp_find_stack(w->m.thread, sp, &lo, &hi))
			return STEP_FAIL;
		w->m.lo = sp;
		w->m.hi = hi;
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

/* One step by the table rule r; f changes only if it succeeds.  Signal
 * context. */
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
	if (cfa < w->m.lo || cfa > w->m.hi) {
		if (cfa > w->m.hi)
			note_beyond(w, cfa);
		return STEP_FAIL;
	}
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
unsigned cp_unwind_dwarf(const struct cp_unwinder *u, const struct cp_regs *r, const struct cp_stackmem *m,
			 int fp_fallback, uintptr_t *pcs, unsigned max, int *truncated, int *complete)
{
	int lacked = 0;
	struct walk w = {
		.u = u,
		.m = *m,
		.fp_fallback = fp_fallback,
	};
	struct frame f = {
		.pc = r->pc,
		.sp = r->sp,
		.fp = r->fp,
		.lr = r->lr,
		.sp_ok = 1,
		.fp_ok = 1,
		.lr_ok = CP_HAS_LINK_REGISTER,
		.exact = 1,
	};
	f.floor = f.sp;
	unsigned n = 0;

	*truncated = 0;
	*complete = 0;
	if (max == 0)
		return 0;
	pcs[n++] = f.pc;
	for (;;) {
		struct cp_urule rule;
		uintptr_t look = f.exact ? f.pc : f.pc - 1;
		int have = u->set && lookup_rule(u, look, &rule, &lacked);
		int s = STEP_FAIL;
		w.beyond = 0;
		if (n == 1)
			*complete = have;
		if (have) {
			/* A failed step leaves f as it was. */
			s = step_rule(&w, &f, &rule);
			if (s == STEP_FAIL && w.fp_fallback)
				s = step_fp(&w, &f);
		} else if (w.fp_fallback) {
			s = step_fp(&w, &f);
		}
		if (s != STEP_OK) {
			if (s == STEP_FAIL && w.beyond && m->beyond)
				*m->beyond = 1;
			break;
		}
		if (n == max) {
			*truncated = 1;
			break;
		}
		pcs[n++] = f.pc;
	}
	if (lacked)
		*complete = 0;
	return n;
}
