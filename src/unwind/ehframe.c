/*
 * ehframe.c -- the .eh_frame_hdr / .eh_frame parser (ehframe.h).  The
 * format is the DWARF call frame information as the Linux Standard Base
 * specifies it for .eh_frame: a sequence of length-prefixed entries, CIEs
 * (common information: alignment factors, the return-address column,
 * augmentations, initial instructions) and FDEs (a pc range, a CIE and a
 * CFA program).  Each FDE's program is run here, tracking only the CFA,
 * the frame-pointer register and the return-address column, and every
 * change of those becomes a row.  Anything structurally wrong (an entry
 * running past the end, a bad CIE pointer, an unknown opcode, a restore
 * without a remember, fewer FDEs than the header's table lists) rejects
 * the whole section; constructs that are well-formed but not expressible
 * as a row (a CFA computed by an arbitrary expression, the CFA in another
 * register) become CP_CFA_NONE rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "base/array.h"
#include "base/error.h"
#include "ehframe.h"

/* DW_EH_PE_* pointer encodings. */
#define PE_ABSPTR 0x00
#define PE_ULEB 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_TEXTREL 0x20
#define PE_DATAREL 0x30
#define PE_FUNCREL 0x40
#define PE_ALIGNED 0x50
#define PE_INDIRECT 0x80
#define PE_OMIT 0xff

/* DW_CFA_* opcodes (the low-6-bit-operand ones by their high bits). */
#define CFA_ADVANCE_LOC 0x40
#define CFA_OFFSET 0x80
#define CFA_RESTORE 0xc0
#define CFA_NOP 0x00
#define CFA_SET_LOC 0x01
#define CFA_ADVANCE_LOC1 0x02
#define CFA_ADVANCE_LOC2 0x03
#define CFA_ADVANCE_LOC4 0x04
#define CFA_OFFSET_EXTENDED 0x05
#define CFA_RESTORE_EXTENDED 0x06
#define CFA_UNDEFINED 0x07
#define CFA_SAME_VALUE 0x08
#define CFA_REGISTER 0x09
#define CFA_REMEMBER_STATE 0x0a
#define CFA_RESTORE_STATE 0x0b
#define CFA_DEF_CFA 0x0c
#define CFA_DEF_CFA_REGISTER 0x0d
#define CFA_DEF_CFA_OFFSET 0x0e
#define CFA_DEF_CFA_EXPRESSION 0x0f
#define CFA_EXPRESSION 0x10
#define CFA_OFFSET_EXTENDED_SF 0x11
#define CFA_DEF_CFA_SF 0x12
#define CFA_DEF_CFA_OFFSET_SF 0x13
#define CFA_VAL_OFFSET 0x14
#define CFA_VAL_OFFSET_SF 0x15
#define CFA_VAL_EXPRESSION 0x16
#define CFA_GNU_WINDOW_SAVE 0x2d /* AArch64: negate_ra_state */
#define CFA_GNU_ARGS_SIZE 0x2e
#define CFA_GNU_NEGATIVE_OFFSET_EXTENDED 0x2f

/* Deepest remember_state nesting accepted (compilers use one or two). */
#define MAX_REMEMBER 32
/* Largest number of rows one FDE may produce (a sanity bound). */
#define MAX_FDE_ROWS (1u << 20)

/* A bounds-checked reader over [p, end); `bad` is set by any read past
 * the end, after which every read returns 0. */
struct cur {
	const uint8_t *p, *end, *base; /* base: offset 0 of the section */
	uint64_t addr;                 /* address of base */
	int bad;
};

/* The address of the next byte c reads. */
static uint64_t cur_addr(const struct cur *c)
{
	return c->addr + (uint64_t)(c->p - c->base);
}

/* Whether n more bytes are there; if not, marks c bad and exhausted. */
static int need(struct cur *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		c->p = c->end;
		return 0;
	}
	return 1;
}

/* Reads an n-byte unsigned little-endian number (0 past the end). */
static uint64_t get_u(struct cur *c, size_t n)
{
	if (!need(c, n))
		return 0;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) /* little-endian, as both our targets */
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* Reads an unsigned LEB128 number; one that does not fit 64 bits marks
 * c bad. */
static uint64_t get_uleb(struct cur *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (!need(c, 1))
			return 0;
		uint8_t b = *c->p++;
		if (shift >= 64 || (shift == 63 && (b & 0x7e))) {
			c->bad = 1; /* does not fit 64 bits */
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
}

/* Reads a signed LEB128 number; one that does not fit marks c bad. */
static int64_t get_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		if (!need(c, 1))
			return 0;
		b = *c->p++;
		if (shift >= 64) {
			c->bad = 1;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* Reads a pointer encoded with enc.  `app` says whether to apply the
 * encoding's base (a pc_range is read without it).  datarel is the base of
 * DW_EH_PE_datarel (0: not allowed here).  Returns 0, or -1 for an
 * encoding we cannot read (c->bad is set if the data ran out). */
static int get_encoded(struct cur *c, uint8_t enc, int app, uint64_t datarel, uint64_t *out)
{
	if (enc == PE_OMIT)
		return -1;
	uint64_t field = cur_addr(c), v;
	if ((enc & 0x70) == PE_ALIGNED) {
		size_t mis = (size_t)(field % sizeof(uintptr_t));
		if (mis && !need(c, sizeof(uintptr_t) - mis))
			return -1;
		if (mis)
			c->p += sizeof(uintptr_t) - mis;
		field = cur_addr(c);
	}
	switch (enc & 0x0f) {
	case PE_ABSPTR: v = get_u(c, sizeof(uintptr_t)); break;
	case PE_ULEB: v = get_uleb(c); break;
	case PE_UDATA2: v = get_u(c, 2); break;
	case PE_UDATA4: v = get_u(c, 4); break;
	case PE_UDATA8: v = get_u(c, 8); break;
	case PE_SLEB: v = (uint64_t)get_sleb(c); break;
	case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)get_u(c, 2); break;
	case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)get_u(c, 4); break;
	case PE_SDATA8: v = get_u(c, 8); break;
	default: return -1;
	}
	if (c->bad)
		return -1;
	if (app) {
		switch (enc & 0x70) {
		case 0:
		case PE_ALIGNED:
			break;
		case PE_PCREL:
			v += field;
			break;
		case PE_DATAREL:
			if (!datarel)
				return -1;
			v += datarel;
			break;
		default: /* textrel, funcrel: not used in .eh_frame on Linux */
			return -1;
		}
		if (enc & PE_INDIRECT)
			return -1; /* would need to read the object's memory */
	}
	*out = v;
	return 0;
}

int cp_ehframe_hdr_parse(const uint8_t *hdr, size_t size, uint64_t hdr_addr, uint64_t *eh_frame,
		      size_t *fde_count, char *err, size_t errlen)
{
	struct cur c = { hdr, hdr + size, hdr, hdr_addr, 0 };
	uint8_t version = (uint8_t)get_u(&c, 1), ptr_enc = (uint8_t)get_u(&c, 1),
		count_enc = (uint8_t)get_u(&c, 1), table_enc = (uint8_t)get_u(&c, 1);
	if (c.bad)
		return cp_why(err, errlen, ".eh_frame_hdr: truncated header");
	if (version != 1)
		return cp_why(err, errlen, ".eh_frame_hdr: version %u", version);
	if (get_encoded(&c, ptr_enc, 1, hdr_addr, eh_frame) < 0)
		return cp_why(err, errlen, ".eh_frame_hdr: unreadable eh_frame_ptr (encoding %#x)", ptr_enc);
	*fde_count = 0;
	uint64_t n;
	if (count_enc != PE_OMIT && table_enc != PE_OMIT) {
		if (get_encoded(&c, count_enc, 0, 0, &n) < 0)
			return cp_why(err, errlen, ".eh_frame_hdr: unreadable fde_count (encoding %#x)", count_enc);
		/* Each table entry is two encoded values of at least a byte. */
		if (n > size)
			return cp_why(err, errlen, ".eh_frame_hdr: fde_count %llu exceeds its size", (unsigned long long)n);
		*fde_count = (size_t)n;
	}
	return 0;
}

/* A register's rule while a CFA program runs. */
enum { R_SAME = 0, R_OFFSET, R_UNDEF, R_OTHER };
struct reg_rule {
	uint8_t kind;
	int64_t off;
};

/* The CFA rule while a CFA program runs. */
enum { C_REG = 0, C_PLT, C_OTHER };
struct cfa_state {
	uint8_t kind;
	uint8_t plt;
	uint64_t reg;
	int64_t off;
	struct reg_rule fp, ra;
};

struct cie {
	size_t offset; /* of the entry in the section */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t signal_frame;
	uint8_t has_z;
	uint8_t usable;  /* 0: well-formed but not for us (old augmentation, address size) */
	const uint8_t *insns, *insns_end;
	uint8_t init_done;
	struct cfa_state init; /* after the initial instructions */
};

/* Growing arrays of the result. */
struct builder {
	struct ehf_result *r;
	size_t capfdes, caprows;
	size_t fde_first; /* the current FDE's first row */
};

/* Appends a row, unless it says what the FDE's previous row says. */
static int push_row(struct builder *b, uint64_t pc, const struct cp_urule *rule)
{
	struct ehf_result *r = b->r;
	if (r->nrows > b->fde_first && !memcmp(&r->rows[r->nrows - 1].rule, rule, sizeof *rule))
		return 0;
	if (cp_array_grow((void **)&r->rows, &b->caprows, r->nrows + 1, sizeof *r->rows, 1024))
		return -1;
	r->rows[r->nrows].pc = pc;
	r->rows[r->nrows].rule = *rule;
	r->nrows++;
	return 0;
}

/* Whether v fits a rule's 32-bit offset. */
static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* The row rule for a program state: what a stack walk can use of it. */
static struct cp_urule to_rule(const struct cfa_state *s, const struct cie *cie)
{
	struct cp_urule r = { 0 };
	if (cie->signal_frame) {
		r.cfa = CP_CFA_SIGFRAME;
		return r;
	}
	if (s->ra.kind == R_UNDEF) {
		r.cfa = CP_CFA_END;
		return r;
	}
	if (s->kind == C_REG && s->reg == CP_DWARF_SP && fits32(s->off))
		r.cfa = CP_CFA_SP;
	else if (s->kind == C_REG && s->reg == CP_DWARF_FP && fits32(s->off))
		r.cfa = CP_CFA_FP;
	else if (s->kind == C_PLT && fits32(s->off))
		r.cfa = CP_CFA_PLT;
	else
		return r; /* CP_CFA_NONE */
	r.cfa_off = (int32_t)s->off;
	r.plt = r.cfa == CP_CFA_PLT ? s->plt : 0;

	if (s->ra.kind == R_OFFSET && fits32(s->ra.off)) {
		r.ra = CP_REG_AT_CFA;
		r.ra_off = (int32_t)s->ra.off;
	} else if (s->ra.kind == R_SAME && CP_HAS_LINK_REGISTER) {
		r.ra = CP_REG_SAME;
	} else {
		struct cp_urule none = { 0 };
		return none;
	}
	if (s->fp.kind == R_SAME) {
		r.fp = CP_REG_SAME;
	} else if (s->fp.kind == R_OFFSET && fits32(s->fp.off)) {
		r.fp = CP_REG_AT_CFA;
		r.fp_off = (int32_t)s->fp.off;
	} else {
		r.fp = CP_REG_UNKNOWN;
	}
	return r;
}

/* Is the expression at e[0..n) the lazy PLT entry's CFA, sp + N + (pc & 15
 * >= T ? one word : 0)?  Stores N and T if so. */
static int plt_expression(const uint8_t *e, size_t n, int64_t *off, uint8_t *thr)
{
#if CP_HAS_PLT_EXPRESSION
	/* DW_OP_breg<sp> N; DW_OP_breg<ra> 0; DW_OP_lit15; DW_OP_and;
	 * DW_OP_lit<T>; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus */
	struct cur c = { e, e + n, e, 0, 0 };
	if (CP_DWARF_SP > 31 || CP_DWARF_RA > 31 || get_u(&c, 1) != 0x70u + CP_DWARF_SP)
		return 0;
	int64_t v = get_sleb(&c);
	if (get_u(&c, 1) != 0x70u + CP_DWARF_RA || get_sleb(&c) != 0 || get_u(&c, 1) != 0x3f || get_u(&c, 1) != 0x1a)
		return 0;
	uint64_t lit = get_u(&c, 1);
	if (lit < 0x30 || lit > 0x3f || get_u(&c, 1) != 0x2a || get_u(&c, 1) != 0x30u + (sizeof(uintptr_t) == 8 ? 3 : 2) ||
	    get_u(&c, 1) != 0x24 || get_u(&c, 1) != 0x22 || c.bad || c.p != c.end)
		return 0;
	*off = v;
	*thr = (uint8_t)(lit - 0x30);
	return 1;
#else
	(void)e;
	(void)n;
	(void)off;
	(void)thr;
	return 0;
#endif
}

/* One CFA instruction, decoded: what it does, with its operands. */
enum insn_kind {
	I_NOP,           /* nothing a walk uses (operands skipped) */
	I_ADVANCE,       /* the location moves on by adv code-alignment units */
	I_SET_LOC,       /* the location becomes adv (DW_CFA_set_loc) */
	I_RULE,          /* register reg's rule becomes `rule` (R_OFFSET: at CFA + off) */
	I_RESTORE,       /* register reg's rule becomes the CIE's */
	I_REMEMBER,      /* the rules are pushed ... */
	I_RESTORE_STATE, /* ... and popped */
	I_CFA,           /* CFA = register reg + off */
	I_CFA_REG,       /* the CFA's register becomes reg */
	I_CFA_OFF,       /* the CFA's offset becomes off */
	I_CFA_EXPR,      /* the CFA is the expression expr[0..len) */
};
struct insn {
	enum insn_kind kind;
	uint8_t rule;
	uint64_t reg, adv;
	int64_t off;
	const uint8_t *expr;
	size_t len;
};

/* Decodes the operands of a DW_CFA opcode that sets a register's rule
 * into *in; 0, or -1 if op is not one. */
static int decode_reg_op(struct cur *c, const struct cie *cie, uint8_t op, struct insn *in)
{
	in->kind = I_RULE;
	switch (op) {
	case CFA_OFFSET_EXTENDED:
		in->reg = get_uleb(c);
		in->rule = R_OFFSET;
		in->off = (int64_t)get_uleb(c) * cie->data_align;
		return 0;
	case CFA_OFFSET_EXTENDED_SF:
		in->reg = get_uleb(c);
		in->rule = R_OFFSET;
		in->off = get_sleb(c) * cie->data_align;
		return 0;
	case CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
		in->reg = get_uleb(c);
		in->rule = R_OFFSET;
		in->off = -(int64_t)get_uleb(c) * cie->data_align;
		return 0;
	case CFA_RESTORE_EXTENDED:
		in->kind = I_RESTORE;
		in->reg = get_uleb(c);
		return 0;
	case CFA_UNDEFINED:
	case CFA_SAME_VALUE:
		in->reg = get_uleb(c);
		in->rule = op == CFA_UNDEFINED ? R_UNDEF : R_SAME;
		return 0;
	case CFA_REGISTER:
	case CFA_VAL_OFFSET:
		in->reg = get_uleb(c);
		(void)get_uleb(c);
		in->rule = R_OTHER;
		return 0;
	case CFA_VAL_OFFSET_SF:
		in->reg = get_uleb(c);
		(void)get_sleb(c);
		in->rule = R_OTHER;
		return 0;
	case CFA_EXPRESSION:
	case CFA_VAL_EXPRESSION: {
		in->reg = get_uleb(c);
		uint64_t len = get_uleb(c);
		if (need(c, len))
			c->p += len;
		in->rule = R_OTHER;
		return 0;
	}
	}
	in->kind = I_NOP;
	return -1;
}

/* Decodes the operands of a DW_CFA opcode that defines the CFA into *in;
 * 0, or -1 if op is not one. */
static int decode_cfa_op(struct cur *c, const struct cie *cie, uint8_t op, struct insn *in)
{
	switch (op) {
	case CFA_DEF_CFA:
		in->kind = I_CFA;
		in->reg = get_uleb(c);
		in->off = (int64_t)get_uleb(c);
		return 0;
	case CFA_DEF_CFA_SF:
		in->kind = I_CFA;
		in->reg = get_uleb(c);
		in->off = get_sleb(c) * cie->data_align;
		return 0;
	case CFA_DEF_CFA_REGISTER:
		in->kind = I_CFA_REG;
		in->reg = get_uleb(c);
		return 0;
	case CFA_DEF_CFA_OFFSET:
		in->kind = I_CFA_OFF;
		in->off = (int64_t)get_uleb(c);
		return 0;
	case CFA_DEF_CFA_OFFSET_SF:
		in->kind = I_CFA_OFF;
		in->off = get_sleb(c) * cie->data_align;
		return 0;
	case CFA_DEF_CFA_EXPRESSION:
		in->len = (size_t)get_uleb(c);
		if (need(c, in->len)) {
			in->kind = I_CFA_EXPR;
			in->expr = c->p;
			c->p += in->len;
		}
		return 0;
	}
	return -1;
}

/* Decodes the instruction at c->p, at address `at`, into *in.  Returns
 * 0 (operands past the entry's end leave c->bad set), or -1 with err set
 * for an opcode it does not know or a DW_CFA_set_loc it cannot read. */
static int decode_insn(struct cur *c, const struct cie *cie, uint64_t datarel, uint64_t at, struct insn *in,
		       char *err, size_t errlen)
{
	uint8_t op = *c->p++;
	*in = (struct insn){ I_NOP };
	switch (op & 0xc0) {
	case CFA_ADVANCE_LOC:
		*in = (struct insn){ I_ADVANCE, .adv = op & 0x3f };
		return 0;
	case CFA_OFFSET:
		*in = (struct insn){ I_RULE, R_OFFSET, .reg = op & 0x3f, .off = (int64_t)get_uleb(c) * cie->data_align };
		return 0;
	case CFA_RESTORE:
		*in = (struct insn){ I_RESTORE, .reg = op & 0x3f };
		return 0;
	}
	switch (op) {
	case CFA_NOP:
	case CFA_GNU_WINDOW_SAVE:
		return 0;
	case CFA_GNU_ARGS_SIZE:
		(void)get_uleb(c);
		return 0;
	case CFA_SET_LOC:
		in->kind = I_SET_LOC;
		if (get_encoded(c, cie->fde_enc, 1, datarel, &in->adv) < 0)
			return cp_why(err, errlen, "bad DW_CFA_set_loc at %#llx", (unsigned long long)at);
		return 0;
	case CFA_ADVANCE_LOC1: in->kind = I_ADVANCE; in->adv = get_u(c, 1); return 0;
	case CFA_ADVANCE_LOC2: in->kind = I_ADVANCE; in->adv = get_u(c, 2); return 0;
	case CFA_ADVANCE_LOC4: in->kind = I_ADVANCE; in->adv = get_u(c, 4); return 0;
	case CFA_REMEMBER_STATE:
		in->kind = I_REMEMBER;
		return 0;
	case CFA_RESTORE_STATE:
		in->kind = I_RESTORE_STATE;
		return 0;
	}
	if (decode_reg_op(c, cie, op, in) == 0 || decode_cfa_op(c, cie, op, in) == 0)
		return 0;
	return cp_why(err, errlen, "unknown CFA opcode %#x at %#llx", op, (unsigned long long)at);
}

/* A CFA program as it runs: the state, the CIE's initial state (for
 * DW_CFA_restore; NULL in the CIE's own instructions), the remembered
 * states, the location, and where rows go (NULL: a CIE's instructions,
 * which make none). */
struct run {
	const struct cie *cie;
	struct cfa_state *st;
	const struct cfa_state *init;
	struct cfa_state stack[MAX_REMEMBER];
	unsigned depth;
	struct builder *b;
	uint64_t loc, end;
	uint32_t nrows;
	char *err;
	size_t errlen;
};

/* The rule of reg, if it is one a walk uses (the return address or the
 * frame pointer). */
static struct reg_rule *tracked(struct run *r, uint64_t reg)
{
	return reg == r->cie->ra_reg ? &r->st->ra : reg == CP_DWARF_FP ? &r->st->fp : NULL;
}

/* Applies a decoded instruction that changes the state (not the
 * location).  Returns 0, or -1 with the reason. */
static int apply_insn(struct run *r, const struct insn *in, uint64_t at)
{
	struct cfa_state *st = r->st;
	struct reg_rule *rr = tracked(r, in->reg);
	switch (in->kind) {
	case I_RULE:
		if (rr) {
			rr->kind = in->rule;
			rr->off = in->rule == R_OFFSET ? in->off : 0;
		}
		break;
	case I_RESTORE:
		if (!r->init)
			return cp_why(r->err, r->errlen, "DW_CFA_restore in a CIE at %#llx", (unsigned long long)at);
		if (rr)
			*rr = rr == &st->ra ? r->init->ra : r->init->fp;
		break;
	case I_REMEMBER:
		if (r->depth == MAX_REMEMBER)
			return cp_why(r->err, r->errlen, "DW_CFA_remember_state nested too deep at %#llx",
				    (unsigned long long)at);
		r->stack[r->depth++] = *st;
		break;
	case I_RESTORE_STATE:
		if (r->depth == 0)
			return cp_why(r->err, r->errlen, "DW_CFA_restore_state without remember at %#llx",
				    (unsigned long long)at);
		/* The CFA and registers come back; the location does not. */
		*st = r->stack[--r->depth];
		break;
	case I_CFA:
		st->kind = C_REG;
		st->reg = in->reg;
		st->off = in->off;
		break;
	case I_CFA_REG:
		st->reg = in->reg;
		if (st->kind != C_REG)
			st->kind = C_OTHER; /* an offset never set */
		break;
	case I_CFA_OFF:
		st->off = in->off;
		if (st->kind == C_PLT)
			st->kind = C_OTHER;
		break;
	case I_CFA_EXPR:
		st->kind = plt_expression(in->expr, in->len, &st->off, &st->plt) ? C_PLT : C_OTHER;
		break;
	default:
		break;
	}
	return 0;
}

/* Moves the location on by adv bytes: the state so far holds over
 * [loc, loc + adv), a row if that starts inside the FDE.  Returns 0, or
 * -1 with the reason. */
static int advance(struct run *r, uint64_t adv, uint64_t at)
{
	if (adv == 0)
		return 0;
	if (r->loc < r->end) {
		struct cp_urule rule = to_rule(r->st, r->cie);
		if (++r->nrows > MAX_FDE_ROWS)
			return cp_why(r->err, r->errlen, "too many rows in one FDE at %#llx", (unsigned long long)at);
		if (push_row(r->b, r->loc, &rule) < 0)
			return cp_why(r->err, r->errlen, "out of memory");
	}
	r->loc = adv > UINT64_MAX - r->loc ? UINT64_MAX : r->loc + adv;
	return 0;
}

/* Runs one decoded instruction. */
static int run_insn(struct run *r, struct insn *in, uint64_t at)
{
	if (in->kind != I_ADVANCE && in->kind != I_SET_LOC)
		return apply_insn(r, in, at);
	if (!r->b)
		return cp_why(r->err, r->errlen, "location change in a CIE at %#llx", (unsigned long long)at);
	if (in->kind == I_ADVANCE) {
		if (in->adv && r->cie->code_align > UINT64_MAX / in->adv)
			return cp_why(r->err, r->errlen, "advance overflows at %#llx", (unsigned long long)at);
		in->adv *= r->cie->code_align;
	}
	return advance(r, in->adv, at);
}

/* Runs the CFA program in [c->p, c->end).  With b == NULL it is a CIE's
 * initial instructions (no rows, no location); otherwise rows for
 * [start, end) are appended to b.  `init` is the CIE's initial state
 * (for DW_CFA_restore).  Returns 0, or -1 with err set. */
static int run_program(struct cur *c, const struct cie *cie, struct cfa_state *st, const struct cfa_state *init,
		       struct builder *b, uint64_t start, uint64_t end, uint64_t datarel, char *err, size_t errlen)
{
	struct run r = { .cie = cie, .st = st, .init = init, .b = b, .loc = start, .end = end, .err = err,
			 .errlen = errlen };
	while (c->p < c->end) {
		uint64_t at = cur_addr(c);
		struct insn in;
		if (decode_insn(c, cie, datarel, at, &in, err, errlen) < 0)
			return -1;
		if (in.kind == I_SET_LOC) {
			if (!b)
				return cp_why(err, errlen, "DW_CFA_set_loc in a CIE at %#llx", (unsigned long long)at);
			if (in.adv < r.loc)
				return cp_why(err, errlen, "DW_CFA_set_loc goes backwards at %#llx", (unsigned long long)at);
			in.adv -= r.loc;
		}
		if (c->bad)
			return cp_why(err, errlen, "CFA instruction runs past its entry at %#llx", (unsigned long long)at);
		if (run_insn(&r, &in, at) < 0)
			return -1;
	}
	if (b && r.loc < end) {
		struct cp_urule rule = to_rule(st, cie);
		if (push_row(b, r.loc, &rule) < 0)
			return cp_why(err, errlen, "out of memory");
	}
	return 0;
}

/* Parses the CIE whose entry body (after the length) is c, at section
 * offset `offset`.  Returns 0, or -1 with err set. */
static int parse_cie(struct cur *c, size_t offset, struct cie *cie, char *err, size_t errlen)
{
	memset(cie, 0, sizeof *cie);
	cie->offset = offset;
	cie->usable = 1;
	cie->fde_enc = PE_ABSPTR;
	uint8_t version = (uint8_t)get_u(c, 1);
	if (version != 1 && version != 3 && version != 4)
		return cp_why(err, errlen, "CIE at %#zx: version %u", offset, version);
	const uint8_t *aug = c->p;
	while (c->p < c->end && *c->p)
		c->p++;
	if (!need(c, 1))
		return cp_why(err, errlen, "CIE at %#zx: unterminated augmentation", offset);
	const uint8_t *aug_end = c->p++;
	if (aug_end - aug >= 2 && aug[0] == 'e' && aug[1] == 'h') {
		cie->usable = 0; /* pre-1998 GCC: an extra pointer we do not model */
		return 0;
	}
	if (version == 4) {
		uint8_t asz = (uint8_t)get_u(c, 1), ssz = (uint8_t)get_u(c, 1);
		if (asz != sizeof(uintptr_t) || ssz != 0)
			cie->usable = 0;
	}
	cie->code_align = get_uleb(c);
	cie->data_align = get_sleb(c);
	cie->ra_reg = version == 1 ? get_u(c, 1) : get_uleb(c);
	if (c->bad)
		return cp_why(err, errlen, "CIE at %#zx: truncated", offset);
	if (aug < aug_end && aug[0] == 'z') {
		cie->has_z = 1;
		uint64_t len = get_uleb(c);
		if (!need(c, len))
			return cp_why(err, errlen, "CIE at %#zx: augmentation data runs past its entry", offset);
		struct cur a = { c->p, c->p + len, c->base, c->addr, 0 };
		c->p += len;
		for (const uint8_t *ch = aug + 1; ch < aug_end; ch++) {
			uint64_t dummy;
			switch (*ch) {
			case 'L':
				(void)get_u(&a, 1);
				break;
			case 'R':
				cie->fde_enc = (uint8_t)get_u(&a, 1);
				break;
			case 'P': {
				uint8_t enc = (uint8_t)get_u(&a, 1);
				/* Only skipped: indirect is fine, the base is not applied. */
				if (get_encoded(&a, enc & 0x7f, 0, 0, &dummy) < 0)
					return cp_why(err, errlen, "CIE at %#zx: bad personality encoding %#x", offset, enc);
				break;
			}
			case 'S':
				cie->signal_frame = 1;
				break;
			case 'B': /* AArch64 pointer authentication with the B key */
			case 'G': /* AArch64 memory tagging */
				break;
			default:
				ch = aug_end - 1; /* unknown: the rest is skipped by length */
				break;
			}
			if (a.bad)
				return cp_why(err, errlen, "CIE at %#zx: augmentation data truncated", offset);
		}
	} else if (aug < aug_end) {
		cie->usable = 0; /* an augmentation without 'z' we cannot skip */
	}
	cie->insns = c->p;
	cie->insns_end = c->end;
	return 0;
}

/* qsort order of FDEs: by start, then by position in the section. */
static int fde_cmp(const void *a, const void *b)
{
	const struct ehf_fde *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Whether [lo, hi) lies inside one of the ranges. */
static int in_text(const struct ehf_range *text, size_t ntext, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < ntext; i++)
		if (lo >= text[i].lo && hi <= text[i].hi)
			return 1;
	return 0;
}

/* The CIE parsed at section offset off (cies sorted by offset), or NULL. */
static struct cie *find_cie(struct cie *cies, size_t n, size_t off)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (cies[m].offset < off)
			a = m + 1;
		else if (cies[m].offset > off)
			b = m;
		else
			return &cies[m];
	}
	return NULL;
}

/* Reads the header of the entry at pos: *c is left at its body (the id
 * field at *id_pos), bounded by the entry's end *next.  Returns 1, 0 at
 * the terminator (*next past it), or -1 after cp_why(). */
static int read_entry(const uint8_t *data, size_t size, uint64_t addr, size_t pos, struct cur *c,
		      size_t *id_pos, size_t *next, uint32_t *id, char *err, size_t errlen)
{
	*c = (struct cur){ data + pos, data + size, data, addr, 0 };
	uint64_t len = get_u(c, 4);
	if (c->bad)
		return cp_why(err, errlen, "entry at %#zx: truncated length", pos);
	if (len == 0) {
		*next = pos + 4;
		return 0;
	}
	if (len == 0xffffffffu) {
		len = get_u(c, 8);
		if (c->bad)
			return cp_why(err, errlen, "entry at %#zx: truncated 64-bit length", pos);
	}
	size_t body = (size_t)(c->p - data);
	if (len > size - body)
		return cp_why(err, errlen, "entry at %#zx: length %#llx runs past the end (%#zx)", pos,
			    (unsigned long long)len, size);
	*next = body + (size_t)len;
	c->end = data + *next;
	*id_pos = body;
	*id = (uint32_t)get_u(c, 4);
	if (c->bad)
		return cp_why(err, errlen, "entry at %#zx: too short", pos);
	return 1;
}

/* Runs the CIE's initial instructions once, for the rule every FDE of it
 * starts from.  0, or -1 after cp_why(). */
static int cie_init(struct cie *cie, const uint8_t *data, uint64_t addr, char *err, size_t errlen)
{
	if (cie->init_done)
		return 0;
	struct cur ci = { cie->insns, cie->insns_end, data, addr, 0 };
	struct cfa_state s0 = { .kind = C_OTHER };
	if (run_program(&ci, cie, &s0, NULL, NULL, 0, 0, 0, err, errlen) < 0) {
		size_t l = strlen(err);
		snprintf(err + l, errlen > l ? errlen - l : 0, " (CIE at %#zx)", cie->offset);
		return -1;
	}
	cie->init = s0;
	cie->init_done = 1;
	return 0;
}

/* The FDE at pos, of CIE cie, its pc range next at *c: its rows appended
 * to b's result, unless its code is outside the text ranges.  0, or -1
 * after cp_why(). */
static int parse_fde(struct cur *c, size_t pos, struct cie *cie, const struct ehf_range *text, size_t ntext,
		     struct builder *b, char *err, size_t errlen)
{
	struct ehf_result *out = b->r;
	uint64_t start, range;
	if (get_encoded(c, cie->fde_enc, 1, 0, &start) < 0 || get_encoded(c, cie->fde_enc & 0x0f, 0, 0, &range) < 0)
		return cp_why(err, errlen, "FDE at %#zx: unreadable pc range (encoding %#x)", pos, cie->fde_enc);
	if (cie->has_z) {
		uint64_t alen = get_uleb(c);
		if (!need(c, alen))
			return cp_why(err, errlen, "FDE at %#zx: augmentation data runs past its entry", pos);
		c->p += alen;
	}
	if (c->bad)
		return cp_why(err, errlen, "FDE at %#zx: truncated", pos);
	if (range == 0 || start > UINT64_MAX - range || !in_text(text, ntext, start, start + range))
		return 0;
	if (cie_init(cie, c->base, c->addr, err, errlen) < 0)
		return -1;
	if (cp_array_grow((void **)&out->fdes, &b->capfdes, out->nfdes + 1, sizeof *out->fdes, 256))
		return cp_why(err, errlen, "out of memory");
	struct ehf_fde *f = &out->fdes[out->nfdes];
	f->start = start;
	f->end = start + range;
	f->first = (uint32_t)out->nrows;
	b->fde_first = out->nrows;
	struct cfa_state st = cie->init;
	if (out->nrows >= UINT32_MAX / 2)
		return cp_why(err, errlen, "too many rows");
	if (run_program(c, cie, &st, &cie->init, b, start, start + range, 0, err, errlen) < 0) {
		size_t l = strlen(err);
		snprintf(err + l, errlen > l ? errlen - l : 0, " (FDE at %#zx)", pos);
		return -1;
	}
	f->nrows = (uint32_t)(out->nrows - f->first);
	out->nfdes++;
	return 0;
}

/* Sorts the FDEs by start; where FDEs overlap the earlier one is cut
 * short, and of two at one address the first in the section wins. */
static void sort_fdes(struct ehf_result *out)
{
	if (out->nfdes > 1)
		qsort(out->fdes, out->nfdes, sizeof *out->fdes, fde_cmp);
	size_t k = 0;
	for (size_t i = 0; i < out->nfdes; i++) {
		struct ehf_fde *f = &out->fdes[i];
		if (k && out->fdes[k - 1].start == f->start)
			continue;
		if (k && out->fdes[k - 1].end > f->start) {
			struct ehf_fde *p = &out->fdes[k - 1];
			p->end = f->start;
			while (p->nrows > 1 && out->rows[p->first + p->nrows - 1].pc >= p->end)
				p->nrows--;
		}
		out->fdes[k++] = *f;
	}
	out->nfdes = k;
}

int cp_ehframe_parse(const uint8_t *data, size_t size, uint64_t addr, size_t fde_count,
		  const struct ehf_range *text, size_t ntext, struct ehf_result *out, char *err,
		  size_t errlen)
{
	struct cie *cies = NULL;
	size_t ncies = 0, capcies = 0;
	struct builder b = { .r = out };
	size_t pos = 0;
	int rc = -1;

	memset(out, 0, sizeof *out);
	while (pos < size) {
		if (fde_count && out->entries == fde_count)
			break;
		struct cur c;
		size_t id_pos = 0, next = size;
		uint32_t id;
		int e = read_entry(data, size, addr, pos, &c, &id_pos, &next, &id, err, errlen);
		if (e < 0)
			goto out;
		if (e == 0) {
			pos = next;
			break; /* the terminator */
		}
		if (id == 0) {
			if (cp_array_grow((void **)&cies, &capcies, ncies + 1, sizeof *cies, 16)) {
				cp_why(err, errlen, "out of memory");
				goto out;
			}
			if (parse_cie(&c, pos, &cies[ncies], err, errlen) < 0)
				goto out;
			ncies++;
			pos = next;
			continue;
		}

		/* An FDE: the CIE pointer counts back from its own field. */
		out->entries++;
		if (id > id_pos) {
			cp_why(err, errlen, "FDE at %#zx: CIE pointer %#x points before the section", pos, id);
			goto out;
		}
		struct cie *cie = find_cie(cies, ncies, id_pos - id);
		if (!cie) {
			cp_why(err, errlen, "FDE at %#zx: CIE pointer %#x names no CIE", pos, id);
			goto out;
		}
		if (cie->usable && parse_fde(&c, pos, cie, text, ntext, &b, err, errlen) < 0)
			goto out;
		pos = next;
	}
	out->used = pos < size ? pos : size;
	if (fde_count && out->entries < fde_count) {
		cp_why(err, errlen, "truncated: %zu FDEs where .eh_frame_hdr lists %zu", out->entries, fde_count);
		goto out;
	}
	sort_fdes(out);
	rc = 0;
out:
	free(cies);
	if (rc < 0)
		cp_ehframe_free(out);
	return rc;
}

void cp_ehframe_free(struct ehf_result *r)
{
	free(r->fdes);
	free(r->rows);
	size_t entries = r->entries, used = r->used;
	memset(r, 0, sizeof *r);
	r->entries = entries;
	r->used = used;
}
