/*
 * lib_unwind_dl.c -- the library work_unwind dlopens once profiling runs
 * (built with and without frame pointers, and once more with a corrupted
 * .eh_frame by tests/e2e/t_unwind.sh): dl_entry -> dl_mid -> dl_hot, a
 * frameless leaf.
 */
#include <stdint.h>

#define NOINLINE __attribute__((noinline, noipa))

static volatile uint64_t lib_sink;

NOINLINE uint64_t dl_hot(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 7;
	return x;
}

NOINLINE uint64_t dl_mid(uint64_t n)
{
	uint64_t r = dl_hot(n);
	lib_sink = r;
	return r + 1;
}

NOINLINE uint64_t dl_entry(uint64_t n)
{
	uint64_t r = dl_mid(n);
	lib_sink = r;
	return r + 1;
}
