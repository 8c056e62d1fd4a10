/*
 * tick.c -- measures the rate at which the kernel delivers a process CPU
 * timer (setitimer(ITIMER_PROF)) asked for every 100 us: POSIX CPU timers
 * are checked from the scheduler tick, so a busy thread gets about
 * CONFIG_HZ signals per CPU second.  Prints "tick_hz N".
 */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

#include "clocks.h"

static volatile sig_atomic_t hits;

static void on_prof(int sig)
{
	(void)sig;
	hits++;
}

int main(void)
{
	signal(SIGPROF, on_prof);
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_PROF, &it, NULL);
	int64_t c0 = thread_cpu_ns();
	volatile uint64_t x = 1;
	while (thread_cpu_ns() - c0 < 400000000)
		x = spin(x, 10000);
	int64_t used = thread_cpu_ns() - c0;
	setitimer(ITIMER_PROF, &(struct itimerval){ { 0, 0 }, { 0, 0 } }, NULL);
	printf("tick_hz %.0f\n", hits / (used / 1e9));
	return 0;
}
