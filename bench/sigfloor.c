/*
 * sigfloor.c -- the floor under any signal-based profiler: the CPU that
 * the kernel's own timer and signal delivery cost per sample, measured
 * with an empty handler.  The same fixed work as overhead.c (without the
 * deep stack) runs with no timer, with a perf task-clock event signalling
 * this thread (what cpuprof's perf engine arms), or with a timer_create
 * timer on the thread CPU clock (its timer engine), at HZ.
 *
 * Usage: sigfloor none|perf|timer HZ MSTEPS
 * Prints "signals N", then the lines of report_run().
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clocks.h"

static volatile sig_atomic_t signals;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	signals++;
}

/* Arms a perf task-clock event on this thread that sends SIGPROF every
 * period_ns of its CPU time; 0 or -1. */
static int arm_perf(uint64_t period_ns)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period_ns;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	struct f_owner_ex owner = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	if (fd < 0 || fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return -1;
	return 0;
}

/* Arms a timer on this thread's CPU clock that sends SIGPROF every
 * period_ns; 0 or -1. */
static int arm_timer(uint64_t period_ns)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t t;
	struct timespec p = { (time_t)(period_ns / 1000000000), (long)(period_ns % 1000000000) };
	struct itimerspec its = { p, p };
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) < 0 || timer_settime(t, 0, &its, NULL) < 0)
		return -1;
	return 0;
}

static volatile uint64_t sink;

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "none") && strcmp(argv[1], "perf") && strcmp(argv[1], "timer"))) {
		fprintf(stderr, "usage: sigfloor none|perf|timer HZ MSTEPS\n");
		return 2;
	}
	long hz = atol(argv[2]), msteps = atol(argv[3]);
	if (hz < 1 || msteps < 1) {
		fprintf(stderr, "sigfloor: HZ and MSTEPS must be positive\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);

	int64_t cpu0 = process_cpu_ns(), mono0 = mono_ns();
	uint64_t period = 1000000000 / (uint64_t)hz;
	if ((!strcmp(argv[1], "perf") && arm_perf(period) < 0) || (!strcmp(argv[1], "timer") && arm_timer(period) < 0)) {
		perror("sigfloor: arming");
		return 1;
	}
	sink += spin(1, (uint64_t)msteps * 1000000);
	printf("signals %d\n", (int)signals);
	report_run(cpu0, mono0);
	return 0;
}
