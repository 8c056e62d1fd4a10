/*
 * unit_times.c -- the sample times of profile/times.h: a list read back
 * as written (times in the unit, a regular weight as -1, an irregular
 * one in microseconds, an off-CPU interval's always written); a time
 * before the last taken as the last; the unit the period, between 1 us
 * and 1 ms; a list moved to a later start (times before it at 0);
 * truncated lists malformed; and a stack table keeping each stack's
 * times, through a copy and a clear; and the lists held to
 * CP_TIMES_MAX_BYTES; a short list kept in its struct, moved whole to the
 * heap when it grows.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "profile/stacktab.h"
#include "profile/times.h"

/* Reads list (buf, n) into at[]/w[]: how many, or -1 if malformed. */
static int read_all(const uint8_t *buf, size_t n, uint64_t *at, int64_t *w, int max)
{
	struct cp_times_reader r = { buf, buf + n, 0 };
	int k = 0, got;
	while (k < max && (got = cp_times_next(&r, &at[k], &w[k])) == 1)
		k++;
	return got < 0 ? -1 : k;
}

int main(void)
{
	const uint64_t t0 = 5000000000ull, ms = 1000000;
	cp_times_begin(t0, ms);
	const struct cp_time_base *b = cp_times_base();
	CHECK(b && b->unit_ns == ms && b->t0_ns == t0, "base");

	struct cp_times t = { 0 };
	CHECK_EQ(cp_times_add(&t, b, t0 + 3 * ms, ms, 0), 0);               /* regular */
	CHECK_EQ(cp_times_add(&t, b, t0 + 4 * ms + 400000, 1100000, 0), 0); /* within an eighth */
	CHECK_EQ(cp_times_add(&t, b, t0 + 9 * ms, 5 * ms, 0), 0);           /* irregular: 5 ms */
	CHECK_EQ(cp_times_add(&t, b, t0 + 2 * ms, ms, 0), 0);               /* before the last */
	CHECK_EQ(cp_times_add(&t, b, t0 + 20 * ms, 1234567, 1), 0);         /* forced (off-CPU) */
	uint64_t at[8];
	int64_t w[8];
	CHECK_EQ(read_all(cp_times_bytes(&t), t.len, at, w, 8), 5);
	CHECK(at[0] == 3 && w[0] == -1, "%llu %lld", (unsigned long long)at[0], (long long)w[0]);
	CHECK(at[1] == 4 && w[1] == -1, "%llu %lld", (unsigned long long)at[1], (long long)w[1]);
	CHECK(at[2] == 9 && w[2] == 5000, "%llu %lld", (unsigned long long)at[2], (long long)w[2]);
	CHECK(at[3] == 9 && w[3] == -1, "a time before the last: %llu", (unsigned long long)at[3]);
	CHECK(at[4] == 20 && w[4] == 1235, "%llu %lld", (unsigned long long)at[4], (long long)w[4]);
	/* Regular samples cost a byte each. */
	CHECK(t.len <= 3 + 1 + 1 + 3 + 3, "%u bytes", t.len);

	/* Moved 5 units later: 3 and 4 fall to 0, the rest keep their gaps. */
	uint8_t *out = NULL;
	size_t len = 0, cap = 0;
	CHECK_EQ(cp_times_rebase(cp_times_bytes(&t), t.len, 5, &out, &len, &cap), 0);
	CHECK_EQ(read_all(out, len, at, w, 8), 5);
	CHECK(at[0] == 0 && at[1] == 0 && at[2] == 4 && at[3] == 4 && at[4] == 15, "rebased %llu %llu %llu %llu %llu",
	      (unsigned long long)at[0], (unsigned long long)at[1], (unsigned long long)at[2],
	      (unsigned long long)at[3], (unsigned long long)at[4]);
	CHECK(w[2] == 5000 && w[4] == 1235 && w[0] == -1, "rebased weights");
	/* Truncated: the list ends inside a varint. */
	uint8_t bad[] = { 0x02, 0x80 };
	CHECK_EQ(read_all(bad, sizeof bad, at, w, 8), -1);
	uint8_t badw[] = { 0x03 }; /* irregular, its weight missing */
	CHECK_EQ(read_all(badw, sizeof badw, at, w, 8), -1);
	free(out);
	cp_times_free(&t);

	/* A list of up to CP_TIMES_SMALL bytes stays in the struct, without
	 * a malloc (issue 32: most stacks of a big profile have a time or
	 * two); the next sample moves it, whole, to the heap. */
	struct cp_times sm = { 0 }, smc;
	uint64_t at16[16];
	int64_t w16[16];
	for (uint64_t i = 0; i < CP_TIMES_SMALL; i++)
		CHECK_EQ(cp_times_add(&sm, b, t0 + (2 * i + 1) * ms, ms, 0), 0);
	CHECK(sm.len == CP_TIMES_SMALL && sm.cap == 0 && cp_times_bytes(&sm) == sm.small,
	      "%u bytes of times, %u of them in the heap", sm.len, sm.cap);
	CHECK_EQ(cp_times_copy(&smc, &sm), 0);
	CHECK(smc.cap == 0 && smc.len == sm.len && !memcmp(smc.small, sm.small, sm.len), "a small list's copy");
	CHECK_EQ(cp_times_add(&sm, b, t0 + 40 * ms, 3 * ms, 0), 0);
	CHECK(sm.cap >= sm.len && sm.len == CP_TIMES_SMALL + 3, "moved: %u bytes, %u in the heap", sm.len, sm.cap);
	CHECK_EQ(read_all(cp_times_bytes(&sm), sm.len, at16, w16, 16), CP_TIMES_SMALL + 1);
	for (int i = 0; i < CP_TIMES_SMALL; i++)
		CHECK(at16[i] == 2 * (uint64_t)i + 1 && w16[i] == -1, "time %d moved: %llu %lld", i,
		      (unsigned long long)at16[i], (long long)w16[i]);
	CHECK(at16[CP_TIMES_SMALL] == 40 && w16[CP_TIMES_SMALL] == 3000, "the time that moved it");
	cp_times_free(&sm);
	cp_times_free(&smc);

	/* The unit: the period, at most 1 ms, at least 1 us. */
	cp_times_begin(0, 100000);
	CHECK_EQ(cp_times_base()->unit_ns, 100000);
	cp_times_begin(0, 10 * ms);
	CHECK_EQ(cp_times_base()->unit_ns, ms);
	cp_times_begin(0, 10);
	CHECK_EQ(cp_times_base()->unit_ns, 1000);

	/* A table keeps each stack's times, through a copy. */
	cp_times_begin(t0, ms);
	struct cp_stacktab tab, copy;
	cp_stacktab_init(&tab);
	uintptr_t pcs[2] = { 0x1000, 0x2000 };
	for (int i = 0; i < 100; i++)
		CHECK_EQ(cp_stacktab_add_at(&tab, 7, pcs, 2, 0, ms, t0 + (uint64_t)i * ms), 0);
	CHECK_EQ(cp_stacktab_add_at(&tab, 8, pcs, 2, 0, ms, t0 + 50 * ms), 0);
	CHECK_EQ(tab.len, 2);
	CHECK(tab.items[0]->count == 100 && tab.items[0]->ns == 100 * ms, "counts");
	CHECK_EQ(cp_stacktab_copy(&copy, &tab), 0);
	CHECK_EQ(read_all(cp_times_bytes(&copy.items[0]->times), copy.items[0]->times.len, (uint64_t[128]){ 0 },
			  (int64_t[128]){ 0 }, 128),
		 100);
	CHECK(copy.items[0]->times.len == tab.items[0]->times.len &&
		      !memcmp(cp_times_bytes(&copy.items[0]->times), cp_times_bytes(&tab.items[0]->times),
			  tab.items[0]->times.len),
	      "the copy's times differ");
	/* Without a base, no times, the counts as before. */
	cp_times_end();
	CHECK_EQ(cp_stacktab_add_at(&tab, 9, pcs, 2, 0, ms, t0), 0);
	CHECK(tab.items[2]->count == 1 && tab.items[2]->times.len == 0, "times kept without a base");
	cp_stacktab_clear(&tab);
	CHECK_EQ(tab.len, 0);
	cp_stacktab_free(&tab);
	cp_stacktab_free(&copy);

	/* The lists hold CP_TIMES_MAX_BYTES at the most: past it a time is
	 * refused (the sample kept without), until they hold none again. */
	cp_times_begin(t0, ms);
	struct cp_times big = { 0 };
	int rc = 0;
	uint64_t n = 0;
	while (n < CP_TIMES_MAX_BYTES && (rc = cp_times_add(&big, cp_times_base(), t0 + n * ms, 7 * ms, 1)) == 0)
		n++;
	CHECK(rc == -E2BIG && cp_times_dropped(), "past the budget: %d", rc);
	CHECK(big.cap <= CP_TIMES_MAX_BYTES && n > CP_TIMES_MAX_BYTES / 8, "%u bytes, %llu times", big.cap,
	      (unsigned long long)n);
	cp_stacktab_init(&tab);
	for (uint64_t i = 0; i < 20; i++)
		CHECK_EQ(cp_stacktab_add_at(&tab, 7, pcs, 2, 0, ms, t0 + i * ms), 0);
	/* Only what fits in the struct, which holds no more memory. */
	CHECK(tab.items[0]->count == 20 && tab.items[0]->times.cap == 0 && tab.items[0]->times.len == CP_TIMES_SMALL,
	      "times past the budget kept: %u bytes, %u in the heap", tab.items[0]->times.len, tab.items[0]->times.cap);
	cp_stacktab_free(&tab);
	cp_times_free(&big);
	CHECK(!cp_times_dropped(), "the lists hold none, and times are still refused");
	return 0;
}
