/*
 * hash.h -- the one integer hash of the open-addressing tables (threads,
 * processes, ids, counts): a 64-bit finaliser, good in its low bits.
 */
#ifndef CPUPROF_HASH_H
#define CPUPROF_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline size_t cp_hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k;
}

#endif
