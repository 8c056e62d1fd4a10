/*
 * encode.c -- the encoder of compact unwind tables (encode.h;
 * the format is described in src/sig/unwind_table.h).  Each FDE becomes a
 * record of a header, maybe its initial rule, and one op per row, most of
 * them a single byte (a push or pop moves the CFA by a word); every
 * UNWIND_BLOCK_FDES records an index entry gives the binary search a place
 * to land.  The table is one allocation laid out as the struct, the two
 * index arrays and the code bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "encode.h"

#define WORD ((int32_t)sizeof(uintptr_t))
/* A gap between two FDEs shorter than this is alignment padding, where no
 * pc ever lands: the earlier FDE is taken to cover it, which costs nothing
 * to encode.  A longer gap is a hole: code without rules. */
#define PAD_MAX 16

/* A growing byte buffer; `oom` is set when it could not grow. */
struct buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

/* Appends a byte. */
static void put(struct buf *b, uint8_t v)
{
	if (cp_array_grow((void **)&b->p, &b->cap, b->n + 1, 1, 4096)) {
		b->oom = 1;
		return;
	}
	b->p[b->n++] = v;
}

/* Appends an unsigned LEB128 number. */
static void put_uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		put(b, byte | (v ? 0x80 : 0));
	} while (v);
}

/* Appends a signed LEB128 number. */
static void put_sleb(struct buf *b, int64_t v)
{
	for (;;) {
		uint8_t byte = v & 0x7f;
		v >>= 7; /* arithmetic shift on our compilers */
		if ((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40))) {
			put(b, byte);
			return;
		}
		put(b, byte | 0x80);
	}
}

/* Appends a full rule (the format is in unwind_table.h). */
static void put_full(struct buf *b, const struct cp_urule *r)
{
	put(b, (uint8_t)(r->cfa | r->fp << 3 | r->ra << 5));
	if (r->cfa == CP_CFA_SP || r->cfa == CP_CFA_FP || r->cfa == CP_CFA_PLT)
		put_sleb(b, r->cfa_off);
	if (r->fp == CP_REG_AT_CFA)
		put_sleb(b, r->fp_off);
	if (r->ra == CP_REG_AT_CFA)
		put_sleb(b, r->ra_off);
	if (r->cfa == CP_CFA_PLT)
		put(b, r->plt);
}

/* Whether two rules say the same (unused fields are zero). */
static int same(const struct cp_urule *a, const struct cp_urule *b)
{
	return !memcmp(a, b, sizeof *a);
}

/* Writes the op taking s->cur to next after adv bytes of code, the
 * cheapest that does, and applies it to s. */
static void put_op(struct buf *b, struct cp_ustate *s, const struct cp_urule *next, uint64_t adv)
{
	static const unsigned one_byte[] = { CP_UT_POP,  CP_UT_PUSH, CP_UT_PUSH_FP, CP_UT_TO_FP, CP_UT_RESET,
					     CP_UT_BODY, CP_UT_POP2, CP_UT_PUSH2,   CP_UT_UNALLOC };
	unsigned k = CP_UT_FULL;
	uint32_t operand = 0;
	struct cp_ustate x;

	for (size_t i = 0; i < sizeof one_byte / sizeof one_byte[0]; i++) {
		x = *s;
		cp_ustate_apply(&x, one_byte[i], 0, NULL);
		if (same(&x.cur, next)) {
			k = one_byte[i];
			break;
		}
	}
	if (k == CP_UT_FULL && next->cfa_off >= 0 && next->cfa_off % WORD == 0) {
		static const unsigned with_operand[] = { CP_UT_SET_OFF, CP_UT_TO_SP };
		for (size_t i = 0; i < 2 && k == CP_UT_FULL; i++) {
			x = *s;
			cp_ustate_apply(&x, with_operand[i], (uint32_t)(next->cfa_off / WORD), NULL);
			if (same(&x.cur, next)) {
				k = with_operand[i];
				operand = (uint32_t)(next->cfa_off / WORD);
			}
		}
	}
	put(b, (uint8_t)(k << CP_UT_KIND_SHIFT | (adv <= CP_UT_ADV_MAX ? adv : 0)));
	if (adv > CP_UT_ADV_MAX)
		put_uleb(b, adv);
	if (k == CP_UT_SET_OFF || k == CP_UT_TO_SP)
		put_uleb(b, operand);
	else if (k == CP_UT_FULL)
		put_full(b, next);
	cp_ustate_apply(s, k, operand, next);
}

/* The most common initial rule of r's FDEs. */
static struct cp_urule common_init(const struct ehf_result *r)
{
	struct cp_urule best = { 0 };
	size_t best_n = 0;
	/* Few distinct initial rules exist (one per CIE, roughly): count the
	 * first few distinct ones seen. */
	struct {
		struct cp_urule r;
		size_t n;
	} seen[8];
	size_t nseen = 0;
	for (size_t i = 0; i < r->nfdes; i++) {
		const struct cp_urule *x = &r->rows[r->fdes[i].first].rule;
		size_t j;
		for (j = 0; j < nseen && !same(&seen[j].r, x); j++)
			;
		if (j == nseen) {
			if (nseen == sizeof seen / sizeof seen[0])
				continue;
			seen[nseen].r = *x;
			seen[nseen++].n = 0;
		}
		if (++seen[j].n > best_n) {
			best_n = seen[j].n;
			best = seen[j].r;
		}
	}
	return best;
}

/* Appends FDE i's record to code: its header (op bytes, flags), its span
 * (in 16-byte units where it can), the hole after it, its initial rule
 * where it is not the table's common `init`, and an op per row. */
static void put_record(struct buf *code, const struct ehf_result *r, size_t i, const struct cp_urule *init)
{
	const struct ehf_fde *f = &r->fdes[i];
	uint64_t span = f->end - f->start, gap = 0;
	unsigned flags = 0;
	if (i + 1 < r->nfdes) {
		uint64_t next = r->fdes[i + 1].start;
		if (next - f->end < PAD_MAX)
			span = next - f->start;
		else
			gap = next - f->end;
	}
	if (gap)
		flags |= CP_UT_HOLE;
	if (span % 16 == 0) {
		flags |= CP_UT_UNIT16;
		span /= 16;
	}
	const struct ehf_row *rows = &r->rows[f->first];
	if (!same(&rows[0].rule, init))
		flags |= CP_UT_INIT;
	uint32_t nops = 0;
	while (nops + 1 < f->nrows && rows[nops + 1].pc < f->end)
		nops++;
	struct buf ops = { 0 };
	struct cp_ustate st = { .cur = rows[0].rule, .init = rows[0].rule, .body = rows[0].rule,
				.below = rows[0].rule };
	for (uint32_t j = 1; j <= nops; j++)
		put_op(&ops, &st, &rows[j].rule, rows[j].pc - rows[j - 1].pc);
	code->oom |= ops.oom;
	put(code, (uint8_t)((ops.n < CP_UT_LEN_ESC ? ops.n : CP_UT_LEN_ESC) << CP_UT_SHIFT | flags));
	if (ops.n >= CP_UT_LEN_ESC)
		put_uleb(code, ops.n - CP_UT_LEN_ESC);
	put_uleb(code, span);
	if (gap)
		put_uleb(code, gap);
	if (flags & CP_UT_INIT)
		put_full(code, &rows[0].rule);
	for (size_t j = 0; j < ops.n; j++)
		put(code, ops.p[j]);
	free(ops.p);
}

/* Lays the table out in one allocation: the struct, the block index
 * (blk: nblocks start offsets, then nblocks code offsets), the page index
 * and the code.  Returns it with its size in *bytes, or NULL. */
static struct cp_utab *lay_out(const uint32_t *blk, size_t nblocks, const struct buf *code, uint64_t start,
			       uint64_t end, const struct cp_urule *init, size_t *bytes)
{
	size_t idx = 2 * nblocks * sizeof(uint32_t);
	size_t npages = nblocks <= UINT16_MAX ? (size_t)((end - start - 1) >> CP_UT_PAGE_SHIFT) + 1 : 0;
	size_t pages = npages * sizeof(uint16_t);
	size_t total = sizeof(struct cp_utab) + idx + pages + code->n;
	struct cp_utab *t = malloc(total);
	if (!t)
		return NULL;
	uint32_t *ix = (uint32_t *)(t + 1);
	uint16_t *pg = (uint16_t *)((uint8_t *)ix + idx);
	uint8_t *c = (uint8_t *)pg + pages;
	memcpy(ix, blk, idx);
	for (size_t p = 0, b = 0; p < npages; p++) {
		uint64_t at = (uint64_t)p << CP_UT_PAGE_SHIFT;
		while (b + 1 < nblocks && blk[b + 1] <= at)
			b++;
		pg[p] = (uint16_t)b;
	}
	memcpy(c, code->p, code->n);
	t->start = (uintptr_t)start;
	t->end = (uintptr_t)end;
	t->nblocks = (uint32_t)nblocks;
	t->npages = (uint32_t)npages;
	t->page_blk = pg;
	t->code_size = (uint32_t)code->n;
	t->init = *init;
	t->blk_pc = ix;
	t->blk_off = ix + nblocks;
	t->code = c;
	*bytes = total;
	return t;
}

struct cp_utab *cp_unwind_build_blocks(const struct ehf_result *r, unsigned block_fdes, size_t *bytes, char *err,
				    size_t errlen)
{
	if (r->nfdes == 0) {
		snprintf(err, errlen, "no FDEs describe its code");
		return NULL;
	}
	if (block_fdes == 0)
		block_fdes = 1;
	uint64_t start = r->fdes[0].start, end = r->fdes[r->nfdes - 1].end;
	if (end - start >= UINT32_MAX) {
		snprintf(err, errlen, "its FDEs span 4 GiB or more");
		return NULL;
	}
	size_t nblocks = (r->nfdes + block_fdes - 1) / block_fdes;
	uint32_t *blk = malloc(2 * nblocks * sizeof *blk);
	struct buf code = { 0 };
	struct cp_urule init = common_init(r);
	if (!blk) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < r->nfdes; i++) {
		if (i % block_fdes == 0) {
			blk[i / block_fdes] = (uint32_t)(r->fdes[i].start - start);
			blk[nblocks + i / block_fdes] = (uint32_t)code.n;
		}
		put_record(&code, r, i, &init);
	}
	struct cp_utab *t = NULL;
	if (code.oom || code.n >= UINT32_MAX)
		snprintf(err, errlen, code.oom ? "out of memory" : "table too large");
	else if (!(t = lay_out(blk, nblocks, &code, start, end, &init, bytes)))
		snprintf(err, errlen, "out of memory");
	free(blk);
	free(code.p);
	return t;
}

struct cp_utab *cp_unwind_build(const struct ehf_result *r, size_t *bytes, char *err, size_t errlen)
{
	return cp_unwind_build_blocks(r, UNWIND_BLOCK_FDES, bytes, err, errlen);
}
