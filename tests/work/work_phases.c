/*
 * work_phases.c -- a workload of two phases in time, for the timeline of
 * the flame graph's page (tests/e2e/t_report_timeline.sh): each of THREADS
 * threads, named "phases-1", "phases-2", ..., spends MS milliseconds of its
 * own CPU time in phase_one() and then MS in phase_two(), while main
 * waits for them.  So in each thread's lane every sample of phase_one
 * comes before every sample of phase_two, and phase_two starts no sooner
 * than MS after the start, however loaded the machine.
 *
 * Usage: work_phases [THREADS [MS]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int ms = 1000;
static volatile uint64_t sink;

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Burns the thread's CPU until `until` ms of it; no function of its own,
 * so that the phase's function is the leaf. */
#define BURN(until)                                                                \
	do {                                                                       \
		uint64_t x_ = sink;                                                \
		while (thread_cpu_ms() < (until))                                  \
			for (int i_ = 0; i_ < 100000; i_++)                        \
				x_ = x_ * 6364136223846793005ull + 1442695040888963407ull; \
		sink = x_;                                                         \
	} while (0)

__attribute__((noinline)) void phase_one(double until) { BURN(until); }
__attribute__((noinline)) void phase_two(double until) { BURN(until); }

static void *worker(void *arg)
{
	char name[16];
	snprintf(name, sizeof name, "phases-%d", (int)(intptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	double start = thread_cpu_ms();
	phase_one(start + ms);
	phase_two(start + 2 * ms);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	if (argc > 2)
		ms = atoi(argv[2]);
	if (threads < 1 || threads > 64 || ms < 1) {
		fprintf(stderr, "usage: work_phases [THREADS (1-64) [MS]]\n");
		return 2;
	}
	pthread_t th[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 1));
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("work_phases done\n");
	return 0;
}
