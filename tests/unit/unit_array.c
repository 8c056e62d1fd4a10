/*
 * unit_array.c -- cp_array_grow (base/array.h), the one way cpuprof grows
 * an array: from `first` elements, doubling, to at least what is asked,
 * keeping what the array held; and unchanged, failing instead of
 * wrapping around, when the size would not fit in a size_t.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../check.h"
#include "base/array.h"

int main(void)
{
	int *a = NULL;
	size_t cap = 0;
	CHECK_EQ(cp_array_grow((void **)&a, &cap, 0, sizeof *a, 16), 0);
	CHECK(a == NULL && cap == 0, "grew for nothing: cap %zu", cap);
	CHECK_EQ(cp_array_grow((void **)&a, &cap, 1, sizeof *a, 16), 0);
	CHECK_EQ(cap, 16);
	for (int i = 0; i < 16; i++)
		a[i] = i;
	int *before = a;
	CHECK_EQ(cp_array_grow((void **)&a, &cap, 16, sizeof *a, 16), 0);
	CHECK(a == before && cap == 16, "grew with room left: cap %zu", cap);
	CHECK_EQ(cp_array_grow((void **)&a, &cap, 17, sizeof *a, 16), 0);
	CHECK_EQ(cap, 32);
	CHECK_EQ(cp_array_grow((void **)&a, &cap, 100, sizeof *a, 16), 0);
	CHECK_EQ(cap, 128); /* 64 is not enough: doubled again */
	for (int i = 0; i < 16; i++)
		CHECK_EQ(a[i], i);
	a[127] = 7;

	/* Sizes that do not fit: refused, the array as it was. */
	before = a;
	CHECK_EQ(cp_array_grow((void **)&a, &cap, SIZE_MAX, sizeof *a, 16), -1);
	CHECK(a == before && cap == 128 && a[127] == 7, "a refused growth changed the array");
	CHECK_EQ(cp_array_grow((void **)&a, &cap, SIZE_MAX / 2 + 2, 1, 16), -1);
	CHECK_EQ(cp_array_grow((void **)&a, &cap, SIZE_MAX / sizeof *a + 1, sizeof *a, 16), -1);
	CHECK(a == before && cap == 128, "a refused growth changed the array");
	void *none = NULL;
	size_t huge = SIZE_MAX / 2 + 1; /* doubling it wraps to 0 */
	CHECK_EQ(cp_array_grow(&none, &huge, huge + 1, 1, 16), -1);
	CHECK(none == NULL && huge == SIZE_MAX / 2 + 1, "grew past SIZE_MAX");
	free(a);
	return 0;
}
