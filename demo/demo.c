/*
 * demo.c -- the program the README's quick start profiles: four threads
 * doing recognisably different work for about a second of CPU each.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int is_prime(uint32_t n)
{
	if (n < 2)
		return 0;
	for (uint32_t d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

__attribute__((noinline)) static uint64_t count_primes(uint32_t from, uint32_t to)
{
	uint64_t c = 0;
	for (uint32_t n = from; n < to; n++)
		c += is_prime(n);
	return c;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static uint64_t sort_numbers(size_t n, uint64_t seed)
{
	uint64_t *v = malloc(n * sizeof *v);
	if (!v)
		return 0;
	for (size_t i = 0; i < n; i++)
		v[i] = seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	qsort(v, n, sizeof *v, cmp_u64);
	uint64_t r = v[n / 2];
	free(v);
	return r;
}

__attribute__((noinline)) static uint64_t hash_text(const char *s, size_t len, int rounds)
{
	uint64_t h = 1469598103934665603ull;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < len; i++)
			h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static volatile uint64_t sink;

static void *primes_worker(void *arg)
{
	uint32_t base = 1000000;
	while (thread_cpu_s() < 1.0) {
		sink += count_primes(base, base + 20000);
		base += 20000;
	}
	return NULL;
}

static void *sort_worker(void *arg)
{
	uint64_t seed = 1;
	while (thread_cpu_s() < 1.0)
		sink += sort_numbers(100000, seed++);
	return NULL;
}

static void *hash_worker(void *arg)
{
	char text[4096];
	memset(text, 'x', sizeof text);
	while (thread_cpu_s() < 1.0)
		sink += hash_text(text, sizeof text, 100);
	return NULL;
}

int main(void)
{
	void *(*work[])(void *) = { primes_worker, primes_worker, sort_worker, hash_worker };
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, work[i], NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("demo: done (%llu)\n", (unsigned long long)(sink & 0xff));
	return 0;
}
