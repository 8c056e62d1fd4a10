/*
 * unit_unwind_fp.c -- the frame-pointer walk (src/sig/unwind_fp.c) on stacks
 * built by hand in an array, with the frame record layout of the target
 * architecture (arch.h): it follows a chain of records, stops at a record
 * outside the stack bounds, misaligned, not above the one before, or
 * holding no code address, honours the depth limit, and takes the link
 * register as frame 0's caller only when the first record does not hold
 * the same return address.
 */
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "../check.h"
#include "sig/sigstate.h"

#define WORDS 64
#define REC (CP_FRAME_RA_SLOT + 1)

static uintptr_t stack[WORDS];

#define LO ((uintptr_t)&stack[0])
#define HI ((uintptr_t)&stack[WORDS])
#define AT(i) ((uintptr_t)&stack[i])

/* Writes a frame record at word i: saved frame pointer next (an address),
 * return address ra. */
static void record(int i, uintptr_t next, uintptr_t ra)
{
	stack[i + CP_FRAME_FP_SLOT] = next;
	stack[i + CP_FRAME_RA_SLOT] = ra;
}

/* A chain of three records at words 4, 12, 20 returning to 0x1111, 0x2222,
 * 0x3333; the last one's saved frame pointer is 0 (the end). */
static void chain(void)
{
	memset(stack, 0, sizeof stack);
	record(4, AT(12), 0x1111);
	record(12, AT(20), 0x2222);
	record(20, 0, 0x3333);
}

/* Walks and checks the result against want[0..n). */
static void expect(uintptr_t fp, uintptr_t lr, unsigned max, const uintptr_t *want, unsigned n,
		   uint32_t want_flags, int line)
{
	uintptr_t pcs[WORDS];
	uint32_t flags = 0xff;
	memset(pcs, 0, sizeof pcs);
	struct cp_regs r = { .pc = 0x9000, .fp = fp, .lr = lr };
	struct cp_stackmem m = { .lo = LO, .hi = HI };
	unsigned got = cp_unwind_fp(&r, &m, pcs, max, &flags);
	CHECK(got == n, "line %d: %u frames, want %u", line, got, n);
	for (unsigned i = 0; i < n; i++)
		CHECK(pcs[i] == want[i], "line %d: frame %u is %#lx, want %#lx", line, i,
		      (unsigned long)pcs[i], (unsigned long)want[i]);
	for (unsigned i = n; i < WORDS; i++)
		CHECK(pcs[i] == 0, "line %d: wrote past frame %u", line, n);
	CHECK(flags == want_flags, "line %d: flags %#x, want %#x", line, flags, want_flags);
}

#define EXPECT(fp, lr, max, flags, ...)                                            \
	do {                                                                       \
		const uintptr_t w_[] = { __VA_ARGS__ };                            \
		expect(fp, lr, max, w_, sizeof w_ / sizeof w_[0], flags, __LINE__); \
	} while (0)

int main(void)
{
	const uint32_t T = CP_SAMPLE_TRUNCATED, L = CP_SAMPLE_LINK_REG;

	/* The plain walk, no link register. */
	chain();
	EXPECT(AT(4), 0, 64, 0, 0x9000, 0x1111, 0x2222, 0x3333);
	EXPECT(AT(12), 0, 64, 0, 0x9000, 0x2222, 0x3333);
	/* The depth limit. */
	EXPECT(AT(4), 0, 3, T, 0x9000, 0x1111, 0x2222);
	EXPECT(AT(4), 0, 4, 0, 0x9000, 0x1111, 0x2222, 0x3333);
	EXPECT(AT(4), 0, 1, T, 0x9000);
	{
		uintptr_t pcs[1] = { 0 };
		uint32_t flags = 0xff;
		struct cp_regs r = { .pc = 0x9000, .fp = AT(4) };
		struct cp_stackmem m = { .lo = LO, .hi = HI };
		CHECK(cp_unwind_fp(&r, &m, pcs, 0, &flags) == 0 && flags == 0 && pcs[0] == 0, "max 0 wrote something");
	}

	/* Records the walk must not follow or read. */
	EXPECT(0, 0, 64, 0, 0x9000);
	EXPECT(LO - REC * sizeof(uintptr_t), 0, 64, 0, 0x9000);          /* below the stack */
	EXPECT(HI - sizeof(uintptr_t), 0, 64, 0, 0x9000);                /* runs past its top */
	EXPECT(HI, 0, 64, 0, 0x9000);
	EXPECT(AT(4) + 1, 0, 64, 0, 0x9000);                             /* misaligned */
	record(12, AT(4), 0x2222);                                       /* points back down */
	EXPECT(AT(4), 0, 64, 0, 0x9000, 0x1111, 0x2222);
	record(12, AT(12), 0x2222);                                      /* points at itself */
	EXPECT(AT(4), 0, 64, 0, 0x9000, 0x1111, 0x2222);
	chain();
	record(12, AT(20), 0x10);                                        /* no code there */
	EXPECT(AT(4), 0, 64, 0, 0x9000, 0x1111);
	chain();
	record(20, HI + 4096, 0x3333);                                   /* leaves the stack */
	EXPECT(AT(4), 0, 64, 0, 0x9000, 0x1111, 0x2222, 0x3333);

	/* The link register: a leaf (x29 still the caller's record, the
	 * caller's return address only in lr) gets lr as frame 1. */
	chain();
	EXPECT(AT(4), 0x7777, 64, L, 0x9000, 0x7777, 0x1111, 0x2222, 0x3333);
	/* A function that stored its record and called nothing since: lr is
	 * the record's return address, and is not taken twice. */
	EXPECT(AT(4), 0x1111, 64, 0, 0x9000, 0x1111, 0x2222, 0x3333);
	/* lr equal to a deeper record's return address is still news. */
	EXPECT(AT(4), 0x2222, 64, L, 0x9000, 0x2222, 0x1111, 0x2222, 0x3333);
	/* No usable record: lr is all the walk has. */
	EXPECT(0, 0x7777, 64, L, 0x9000, 0x7777);
	EXPECT(AT(4) + 1, 0x7777, 64, L, 0x9000, 0x7777);
	/* An lr that is no code address is ignored. */
	EXPECT(AT(4), 0x10, 64, 0, 0x9000, 0x1111, 0x2222, 0x3333);
	/* The depth limit counts lr as a frame. */
	EXPECT(AT(4), 0x7777, 1, T, 0x9000);
	EXPECT(AT(4), 0x7777, 2, L | T, 0x9000, 0x7777);
	EXPECT(AT(4), 0x7777, 5, L, 0x9000, 0x7777, 0x1111, 0x2222, 0x3333);
	EXPECT(AT(4), 0x7777, 4, L | T, 0x9000, 0x7777, 0x1111, 0x2222);
	printf("ok\n");
	return 0;
}
