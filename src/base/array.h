/*
 * array.h -- growing a malloc'd array by doubling, for the code that builds
 * tables outside signal context (the unwinder, the symbolizer, the
 * profile's writer and reader, report).
 */
#ifndef CPUPROF_ARRAY_H
#define CPUPROF_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Grows *arr, of *cap elements of `elem` bytes, to hold at least `need`,
 * doubling from `first` elements.  Returns 0, or -1 (unchanged) when out
 * of memory or when the size would overflow. */
static inline int cp_array_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap)
		return 0;
	if (*cap > SIZE_MAX / 2)
		return -1;
	size_t n = *cap ? *cap * 2 : first;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -1;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -1;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = n;
	return 0;
}

#endif
