/*
 * unwind_table.h -- SIGNAL CONTEXT.  The compact unwind table of one loaded
 * object and the set of tables the handler sees.  Tables are built outside
 * signal context from the objects' .eh_frame (src/unwind/ehframe.c parses,
 * src/unwind/encode.c encodes, src/unwind/tables.c publishes) and never change once
 * published; the handler only reads them (unwind_dwarf.c).  The format is
 * arch-neutral: a rule speaks of the stack pointer, the frame pointer and
 * the return address, never of a register number.
 *
 * A rule says how to find a frame's caller at some pc:
 *   CFA (the caller's stack pointer) = SP or FP + cfa_off,
 *     or for a lazy PLT entry SP + cfa_off + (pc & 15 >= plt ? 1 word : 0);
 *   the return address is saved at CFA + ra_off, or is still in the link
 *     register (CP_REG_SAME, for frameless functions on machines with one);
 *   the caller's FP is unchanged, saved at CFA + fp_off, or unknown.
 * CP_CFA_SIGFRAME marks the signal trampoline: the caller's registers are
 * in the kernel's signal frame on the stack.  CP_CFA_END marks an outermost
 * frame (_start, a thread's start): there is no caller.  CP_CFA_NONE says
 * this pc has no usable rule (the unwinder falls back to frame pointers).
 *
 * Encoding.  The FDEs (one per function, sorted) are grouped in blocks of
 * a few; blk_pc[] and blk_off[] give each block's first pc (as an offset
 * from `start`) and where its first FDE record begins in code[].  The
 * binary search over blocks starts from page_blk[]: for each 4 KiB page
 * of code, the block holding the page's first byte (a small array that
 * stays in cache, where a search of the whole index misses it).  An FDE
 * record is
 *   byte H = n << 3 | HOLE << 2 | UNIT16 << 1 | INIT, where n is the
 *     length in bytes of the ops that end the record (31: 31 + a uleb),
 *     so that a lookup skips a record without decoding it, then
 *   uleb span    in bytes, or in 16-byte units with UNIT16: the distance
 *                to the next FDE's start, or with HOLE the FDE's length;
 *   [uleb gap]   with HOLE: bytes after the FDE that no FDE covers;
 *   [full rule]  with INIT: the rule at the FDE's start (else t->init);
 *   ops...       each one byte k << 4 | adv (adv 1..15 bytes of code,
 *                or 0 and a uleb advance follows), then operands:
 *      k0 CFA -= 1 word        k1 CFA += 1 word
 *      k2 CFA += 1 word and FP saved at CFA - (new offset) ("push fp")
 *      k3 uleb n: CFA offset = n words
 *      k4 CFA is FP-based now (offset kept)
 *      k5 uleb n: CFA = SP + n words
 *      k6 back to the FDE's initial rule
 *      k7 a full rule
 *      k8 back to the body: the rule in force before the latest run of
 *         ops that lowered the CFA offset (an epilogue), as after a
 *         DW_CFA_restore_state
 *      k9 CFA -= 2 words       k10 CFA += 2 words
 *      k11 back to the rule before the latest op that raised the CFA
 *         offset by more than two words (undoes a stack allocation)
 * A full rule is a byte cfa | fp << 3 | ra << 5, then sleb cfa_off (for SP,
 * FP and PLT), sleb fp_off (if AT_CFA), sleb ra_off (if AT_CFA) and a byte
 * plt (for PLT).
 */
#ifndef CPUPROF_UNWIND_TABLE_H
#define CPUPROF_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

enum cp_cfa_kind {
	CP_CFA_NONE = 0,
	CP_CFA_SP,
	CP_CFA_FP,
	CP_CFA_PLT,
	CP_CFA_SIGFRAME,
	CP_CFA_END,
};

enum cp_reg_rule {
	CP_REG_SAME = 0,  /* unchanged (for the RA: still in the link register) */
	CP_REG_AT_CFA,    /* saved at CFA + offset */
	CP_REG_UNKNOWN,
};

/* One rule; fields a kind does not use are zero, so rules compare as
 * plain structs. */
struct cp_urule {
	uint8_t cfa, fp, ra; /* cp_cfa_kind, cp_reg_rule, cp_reg_rule */
	uint8_t plt;         /* CP_CFA_PLT: the (pc & 15) threshold */
	int32_t cfa_off, fp_off, ra_off;
};

/* FDE record header flags. */
#define CP_UT_INIT 1u
#define CP_UT_UNIT16 2u
#define CP_UT_HOLE 4u
#define CP_UT_SHIFT 3
#define CP_UT_LEN_ESC 31u

/* Ops. */
enum {
	CP_UT_POP = 0,
	CP_UT_PUSH,
	CP_UT_PUSH_FP,
	CP_UT_SET_OFF,
	CP_UT_TO_FP,
	CP_UT_TO_SP,
	CP_UT_RESET,
	CP_UT_FULL,
	CP_UT_BODY,
	CP_UT_POP2,
	CP_UT_PUSH2,
	CP_UT_UNALLOC,
	CP_UT_NKINDS
};
#define CP_UT_ADV_MAX 15u
#define CP_UT_KIND_SHIFT 4

/* The state of a walk through one FDE's ops. */
struct cp_ustate {
	struct cp_urule cur;  /* the rule in force */
	struct cp_urule init; /* the FDE's initial rule */
	struct cp_urule body; /* for CP_UT_BODY */
	struct cp_urule below; /* for CP_UT_UNALLOC */
	int falling;          /* the latest op lowered the CFA offset */
};

/* Applies op k with its operand (a uleb, or for CP_UT_FULL the rule in
 * *full) to s.  The encoder runs it too, so both sides agree by
 * construction.  Signal context. */
static inline void cp_ustate_apply(struct cp_ustate *s, unsigned k, uint32_t operand, const struct cp_urule *full)
{
	struct cp_urule prev = s->cur;
	const int32_t w = (int32_t)sizeof(uintptr_t);
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

#define CP_UT_PAGE_SHIFT 12

/* The table of one object: pcs [start, end). */
struct cp_utab {
	uintptr_t start, end;
	uint32_t nblocks;
	uint32_t code_size;
	uint32_t npages;          /* 0: no page index (more than 65535 blocks) */
	struct cp_urule init;
	const uint32_t *blk_pc;
	const uint32_t *blk_off;
	const uint16_t *page_blk;
	const uint8_t *code;
};

/* Where a walked address space has an object's code: pcs [lo, hi), whose
 * rules are the table's at pc - bias (a table is in its object's own
 * addresses: link-time ones when built from a file, run-time ones when
 * built from this process's memory, with bias 0).  A range whose table is
 * not built yet says which object it is, so that a walk that needs it can
 * ask for it (cp_unwinder.want); one whose object has no usable table has
 * none. */
enum cp_urange_state {
	CP_UR_TABLE = 0, /* tab is the object's table */
	CP_UR_LAZY,      /* not built yet: obj is the builder's index of the object */
	CP_UR_NONE,      /* the object has no table: frame pointers only */
};
struct cp_urange {
	uintptr_t lo, hi;
	uintptr_t bias;
	const struct cp_utab *tab;
	uint32_t obj;
	uint32_t state;
};

/* What a walk sees: the ranges of the walked address space, sorted by lo,
 * disjoint. */
struct cp_unwind_set {
	uint64_t gen;  /* never the same for two sets of one address space */
	size_t n;
	struct cp_urange r[];
};

/* The objects whose table a walk needed and found not built: bit i of
 * word i / 64 for object i, the last bit for any object past it. */
#define CP_UNWIND_WANT_WORDS 16
#define CP_UNWIND_WANT_ANY (CP_UNWIND_WANT_WORDS * 64 - 1)

/* A cache of rules recently looked up, shared by all threads' handlers:
 * repeated stacks (the common case for hot code) then cost a hash probe
 * per frame instead of a table search.  Each entry is a small seqlock:
 * a writer takes it with a compare-and-swap from even to odd (and skips
 * caching if that fails: it never waits), a reader retries nothing and
 * treats an odd or changed sequence as a miss.  Entries are tagged with
 * the generation of the set they came from, so a swap of sets invalidates
 * them all at once. */
#define CP_UCACHE_ENTRIES 2048u /* a power of two */
struct cp_ucache_entry {
	_Alignas(64) _Atomic uint64_t seq;
	_Atomic uint64_t pc, gen;
	_Atomic uint64_t rule[2]; /* a struct cp_urule */
};
struct cp_ucache {
	struct cp_ucache_entry e[CP_UCACHE_ENTRIES];
};

/* The rule for pc in t, which must satisfy t->start <= pc < t->end.
 * Returns 1 and fills *r, or 0 if no FDE covers pc.  Signal context. */
int cp_utab_lookup(const struct cp_utab *t, uintptr_t pc, struct cp_urule *r);

/* A walk's view: the set, a cache of rules (NULL: none) and where it
 * notes the objects whose tables it lacked (NULL: nowhere). */
struct cp_unwinder {
	const struct cp_unwind_set *set;
	struct cp_ucache *cache;
	_Atomic uint64_t *want; /* CP_UNWIND_WANT_WORDS words */
};

/* The range of s holding pc, or NULL.  Signal context. */
const struct cp_urange *cp_uset_find(const struct cp_unwind_set *s, uintptr_t pc);

/* Notes in want that object obj's table is needed.  Signal context. */
void cp_unwind_want_mark(_Atomic uint64_t *want, uint32_t obj);

#endif
