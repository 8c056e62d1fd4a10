/*
 * unit_unwind.c -- the table-driven stack walk (cp_unwind_dwarf) on stacks
 * built by hand: a frameless function, a frame-pointer function and an
 * outermost frame; the depth cap; a return address outside the stack; a
 * frame whose CFA would go down the stack; a pc without a table (frame
 * pointers in auto mode, a stop in dwarf mode); the signal trampoline,
 * on the same stack and onto another (sigaltstack) one; a PLT entry; a
 * stack full of self-pointing return addresses; and random garbage, which
 * must never make the walk read outside the stack or run past the cap.
 * Every case runs with the rule cache on and off, with the same results.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "arch.h"
#include "../check.h"
#include "unwind/ehframe.h"
#include "sig/sigstate.h"
#include "unwind/encode.h"

#define W ((uintptr_t)sizeof(uintptr_t))

/* Code addresses of the made-up object (never executed). */
enum {
	LEAF = 0x10000,   /* CFA = SP + 1 word; after +4, SP + 2 words */
	FPFN = 0x10100,   /* after +4: CFA = FP + 2 words, FP saved at CFA - 2 words */
	OUTER = 0x10200,  /* outermost: no caller */
	TRAMP = 0x10300,  /* the signal trampoline */
	PLT = 0x10400,    /* a lazy PLT entry */
	NOTAB = 0x10600,  /* code no table describes */
	END = 0x10700,
};

static struct cp_urule sp_rule(int words)
{
	struct cp_urule r = { .cfa = CP_CFA_SP, .cfa_off = (int32_t)(words * W), .ra = CP_REG_AT_CFA, .ra_off = -(int32_t)W };
	return r;
}

static struct cp_unwind_set *make_set(void)
{
	static struct ehf_fde fdes[5];
	static struct ehf_row rows[8];
	struct ehf_result r = { .fdes = fdes, .rows = rows };
	size_t n = 0;
	fdes[0] = (struct ehf_fde){ LEAF, LEAF + 0x100, 0, 2 };
	rows[n++] = (struct ehf_row){ LEAF, sp_rule(1) };
	rows[n++] = (struct ehf_row){ LEAF + 4, sp_rule(2) };
	fdes[1] = (struct ehf_fde){ FPFN, FPFN + 0x100, 2, 2 };
	rows[n++] = (struct ehf_row){ FPFN, sp_rule(1) };
	struct cp_urule fp = { .cfa = CP_CFA_FP, .cfa_off = (int32_t)(2 * W), .ra = CP_REG_AT_CFA, .ra_off = -(int32_t)W,
			       .fp = CP_REG_AT_CFA, .fp_off = -(int32_t)(2 * W) };
	rows[n++] = (struct ehf_row){ FPFN + 4, fp };
	fdes[2] = (struct ehf_fde){ OUTER, OUTER + 0x100, 4, 1 };
	rows[n++] = (struct ehf_row){ OUTER, { .cfa = CP_CFA_END } };
	fdes[3] = (struct ehf_fde){ TRAMP, TRAMP + 0x10, 5, 1 };
	rows[n++] = (struct ehf_row){ TRAMP, { .cfa = CP_CFA_SIGFRAME } };
	fdes[4] = (struct ehf_fde){ PLT, PLT + 0x40, 6, 1 };
	struct cp_urule plt = sp_rule(1);
	plt.cfa = CP_CFA_PLT;
	plt.plt = 11;
	rows[n++] = (struct ehf_row){ PLT, plt };
	r.nfdes = 5;
	r.nrows = n;
	size_t bytes;
	char err[128];
	struct cp_utab *t = cp_unwind_build(&r, &bytes, err, sizeof err);
	CHECK(t, "%s", err);
	struct cp_unwind_set *s = malloc(sizeof *s + sizeof s->r[0]);
	s->gen = 1;
	s->n = 1;
	s->r[0] = (struct cp_urange){ .lo = t->start, .hi = t->end, .tab = t, .state = CP_UR_TABLE };
	return s;
}

/* The stack: words, and an alternate one for the sigaltstack case. */
static uintptr_t stack[1024] __attribute__((aligned(64)));
static uintptr_t alt[1024] __attribute__((aligned(64)));
#define AT(i) ((uintptr_t)&stack[i])
#define LO AT(0)
#define HI AT(1024)

struct result {
	unsigned n;
	uintptr_t pcs[128];
	int truncated, known;
};

/* Walks from (pc, sp, fp) over [sp, hi), in mode auto (fallback) or dwarf,
 * once with the cache and once without; both must agree. */
static struct result walk(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t hi, int fallback, unsigned max)
{
	static struct cp_ucache cache;
	struct result r[2];
	struct cp_regs regs = { .pc = pc, .sp = sp, .fp = fp };
	struct cp_stackmem m = { .lo = sp, .hi = hi };
	for (int c = 0; c < 2; c++) {
		memset(&cache, 0, sizeof cache);
		struct cp_unwinder u = { .set = atomic_load(&cp_sig.unwind), .cache = c ? &cache : NULL };
		/* Twice with the cache: cold, then warm. */
		for (int rep = 0; rep < 1 + c; rep++) {
			memset(&r[c], 0, sizeof r[c]);
			r[c].n = cp_unwind_dwarf(&u, &regs, &m, fallback, r[c].pcs, max, &r[c].truncated, &r[c].known);
		}
	}
	CHECK(r[0].n == r[1].n && r[0].truncated == r[1].truncated && r[0].known == r[1].known &&
		      !memcmp(r[0].pcs, r[1].pcs, r[0].n * sizeof(uintptr_t)),
	      "the cache changed the walk from %#lx: %u vs %u frames", (long)pc, r[0].n, r[1].n);
	return r[0];
}

static void expect(const struct result *r, const char *what, unsigned n, const uintptr_t *pcs, int truncated)
{
	CHECK(r->n == n, "%s: %u frames, expected %u", what, r->n, n);
	for (unsigned i = 0; i < n; i++)
		CHECK(r->pcs[i] == pcs[i], "%s: frame %u is %#lx, expected %#lx", what, i, (long)r->pcs[i], (long)pcs[i]);
	CHECK(r->truncated == truncated, "%s: truncated=%d", what, r->truncated);
	printf("# %s: ok\n", what);
}

int main(void)
{
	cp_sig.unwind = make_set();
	struct result r;

	/* LEAF+8 (CFA = sp + 2 words) -> FPFN+0x50 (CFA = fp + 2 words) ->
	 * OUTER+0x50 (outermost). */
	memset(stack, 0, sizeof stack);
	stack[11] = FPFN + 0x50;          /* the leaf's return address, at CFA - 1 word */
	stack[20] = AT(40);               /* FPFN's frame: saved fp */
	stack[21] = OUTER + 0x50;         /* and return address */
	uintptr_t chain[] = { LEAF + 8, FPFN + 0x50, OUTER + 0x50 };
	r = walk(LEAF + 8, AT(10), AT(20), HI, 1, 128);
	expect(&r, "leaf -> fp function -> outermost", 3, chain, 0);
	CHECK(r.known, "the first pc has a table");
	r = walk(LEAF + 8, AT(10), AT(20), HI, 0, 128);
	expect(&r, "same, dwarf mode", 3, chain, 0);
	r = walk(LEAF + 8, AT(10), AT(20), HI, 1, 2);
	expect(&r, "depth cap 2", 2, chain, 1);
	r = walk(LEAF + 8, AT(10), AT(20), HI, 1, 3);
	expect(&r, "depth cap 3 (no more frames)", 3, chain, 0);

	/* The leaf's return address lies past the stack's end. */
	r = walk(LEAF + 8, AT(10), AT(20), AT(11), 1, 128);
	expect(&r, "return address outside the stack", 1, chain, 0);

	/* FPFN's fp points below its CFA's floor: the rule fails, and the
	 * frame-pointer fallback refuses to go down the stack too. */
	r = walk(LEAF + 8, AT(10), AT(5), HI, 1, 128);
	expect(&r, "fp below the stack pointer", 2, chain, 0);

	/* A pc without a table: frame pointers (auto) or a stop (dwarf). */
	stack[CP_FRAME_RA_SLOT + 30] = OUTER + 0x60;
	stack[CP_FRAME_FP_SLOT + 30] = 0;
	uintptr_t notab[] = { NOTAB + 8, OUTER + 0x60 };
	r = walk(NOTAB + 8, AT(10), AT(30), HI, 1, 128);
	expect(&r, "no table, auto: frame pointers", 2, notab, 0);
	CHECK(!r.known, "the first pc has no table");
	r = walk(NOTAB + 8, AT(10), AT(30), HI, 0, 128);
	expect(&r, "no table, dwarf: stop", 1, notab, 0);

	/* The signal trampoline: LEAF (at entry) returns into TRAMP; the
	 * interrupted context (FPFN+0x50 with its frame) is in the ucontext
	 * at the trampoline's stack pointer. */
	memset(stack, 0, sizeof stack);
	stack[10] = TRAMP + 4;
	uintptr_t uc = AT(11) + CP_SIGFRAME_UC_OFFSET;
	*(uintptr_t *)(uc + CP_UC_PC_OFFSET) = FPFN + 0x50;
	*(uintptr_t *)(uc + CP_UC_SP_OFFSET) = AT(400);
	*(uintptr_t *)(uc + CP_UC_FP_OFFSET) = AT(410);
	stack[410] = AT(500);
	stack[411] = OUTER + 0x70;
	uintptr_t sig[] = { LEAF, TRAMP + 4, FPFN + 0x50, OUTER + 0x70 };
	r = walk(LEAF, AT(10), 0, HI, 0, 128);
	expect(&r, "through the signal trampoline", 4, sig, 0);
	/* The same with the ucontext cut off by the stack's end. */
	r = walk(LEAF, AT(10), 0, uc + CP_UC_PC_OFFSET, 0, 128);
	expect(&r, "signal frame outside the stack", 2, sig, 0);

	/* Onto another stack (sigaltstack): found in the rw-mapping snapshot. */
	struct cp_rwmap *m = malloc(sizeof *m + 2 * sizeof m->range[0]);
	m->n = 2;
	uintptr_t a0 = (uintptr_t)stack, a1 = (uintptr_t)alt, s0 = a0 < a1 ? a0 : a1, s1 = a0 < a1 ? a1 : a0;
	m->range[0][0] = s0, m->range[0][1] = s0 + sizeof stack;
	m->range[1][0] = s1, m->range[1][1] = s1 + sizeof alt;
	cp_sig.rwmap = m;
	*(uintptr_t *)(uc + CP_UC_SP_OFFSET) = (uintptr_t)&alt[100];
	*(uintptr_t *)(uc + CP_UC_FP_OFFSET) = (uintptr_t)&alt[110];
	alt[110] = 0;
	alt[111] = OUTER + 0x70;
	r = walk(LEAF, AT(10), 0, HI, 0, 128);
	expect(&r, "through the signal trampoline onto another stack", 4, sig, 0);
	cp_sig.rwmap = NULL;
	r = walk(LEAF, AT(10), 0, HI, 0, 128);
	expect(&r, "onto an unknown stack: stop", 2, sig, 0);
	free(m);

	/* A lazy PLT entry: one word more once pc & 15 >= 11. */
	memset(stack, 0, sizeof stack);
	stack[10] = OUTER + 0x10;
	stack[11] = OUTER + 0x20;
	uintptr_t plt_before[] = { PLT + 6, OUTER + 0x10 }, plt_after[] = { PLT + 11, OUTER + 0x20 };
	r = walk(PLT + 6, AT(10), 0, HI, 0, 128);
	expect(&r, "PLT entry before its push", 2, plt_before, 0);
	r = walk(PLT + 11, AT(10), 0, HI, 0, 128);
	expect(&r, "PLT entry after its push", 2, plt_after, 0);

	/* Every word a return address into LEAF+8: each step moves two words
	 * up the stack until the cap or the stack's end. */
	for (int i = 0; i < 1024; i++)
		stack[i] = LEAF + 9;
	r = walk(LEAF + 8, AT(0), AT(0), HI, 1, 128);
	CHECK(r.n == 128 && r.truncated, "self-pointing stack: %u frames, truncated=%d", r.n, r.truncated);
	r = walk(LEAF + 8, AT(900), AT(0), HI, 1, 128);
	CHECK(r.n <= 63 && !r.truncated, "self-pointing stack near its end: %u frames", r.n);
	printf("# self-pointing return addresses: ok\n");

	/* Garbage: random words (many of them plausible code or stack
	 * addresses) and random registers; the walk stays in bounds (the
	 * stack array is the bounds; ASan builds check the reads) and
	 * under the cap. */
	unsigned seed = 7;
	for (int trial = 0; trial < 20000; trial++) {
		for (int i = 0; i < 1024; i++) {
			seed = seed * 1103515245u + 12345u;
			unsigned k = seed >> 28;
			uintptr_t v = seed;
			stack[i] = k < 6 ? LEAF + v % (END - LEAF) : k < 12 ? AT(v % 1024) + (v & 7) : v * 2654435761u;
		}
		seed = seed * 1103515245u + 12345u;
		uintptr_t pc = LEAF + seed % (END - LEAF), sp = AT(seed % 1024 & ~3u), fp = stack[seed % 97];
		r = walk(pc, sp, fp, HI, trial & 1, 64);
		CHECK(r.n >= 1 && r.n <= 64, "garbage: %u frames", r.n);
	}
	printf("# 20000 garbage stacks: in bounds, under the cap\n");
	return 0;
}
