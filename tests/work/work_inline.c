/*
 * work_inline.c -- a workload whose hot code is inlined: three levels of
 * static inline functions inside each of two hot functions, one of them
 * reached through a function the compiler may clone.  Built -O2 -g (and
 * with -flto, -gdwarf-4, -gz, split DWARF by t_lines.sh) so that the
 * profile's source lines and inline chains can be checked against
 * addr2line.  Usage: work_inline [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
	x ^= x >> 13;
	x *= 0x5bd1e995u;
	return x ^ (x >> 15);
}

static inline __attribute__((always_inline)) unsigned step(unsigned x, int i)
{
	for (int k = 0; k < 64; k++)
		x = mix(x + (unsigned)(i * k));
	return x;
}

static inline unsigned fold(const unsigned *v, int n)
{
	unsigned h = 0;
	for (int i = 0; i < n; i++)
		h = h * 31 + mix(v[i]);
	return h;
}

__attribute__((noinline)) unsigned hot_mix(int n)
{
	unsigned x = 1;
	for (int i = 0; i < n; i++)
		x = step(x, i);
	return x;
}

__attribute__((noinline)) unsigned hot_fold(int n)
{
	unsigned v[256], h = 0;
	for (int i = 0; i < 256; i++)
		v[i] = (unsigned)i * 2654435761u;
	for (int r = 0; r < n; r++) {
		v[r & 255] ^= h;
		h += fold(v, 256);
	}
	return h;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	for (int r = 0; r < rounds; r++) {
		sink += hot_mix(600000);
		sink += hot_fold(4000);
	}
	printf("work_inline done\n");
	return 0;
}
