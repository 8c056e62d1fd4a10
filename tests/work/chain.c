/* chain.c -- t_toolchains.sh's workload in C: main calls outer, which
 * calls inner, the hot loop, until the process has used SECONDS of CPU
 * (argv[1], default 0.3).  Built by every C toolchain the test finds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile double sink;

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double inner(long n)
{
	double s = 0;
	for (long i = 0; i < n; i++) {
		s += i * 0.5 / (i + 1);
		sink = s;
	}
	return s;
}

__attribute__((noinline)) double outer(long n)
{
	return inner(n) + 1;
}

int main(int argc, char **argv)
{
	double until = argc > 1 ? atof(argv[1]) : 0.3, s = 0;
	while (cpu_seconds() < until)
		s += outer(200000);
	printf("%d\n", s > 0);
	return 0;
}
