/*
 * engine_perf.c -- the perf engine: one PERF_COUNT_SW_TASK_CLOCK event per
 * thread.  Its hrtimer runs only while the thread runs and fires after each
 * period of the thread's CPU time, above the scheduler tick where the
 * kernel has high-resolution timers.  The overflow signal goes to the
 * owning thread (O_ASYNC, F_SETSIG, F_SETOWN_EX/F_OWNER_TID); the event is
 * enabled once and never refreshed.  The handler weighs each sample by the
 * thread's CPU clock (the kernel's own accounting, which the event's task
 * clock exceeds while the hypervisor steals the CPU), so totals hold
 * whatever the timer resolution.
 *
 * The events count kernel mode too where perf_event_paranoid allows it
 * (root, CAP_PERFMON, or paranoid <= 1): a period that ends inside a
 * system call then still raises its signal, which is delivered on the way
 * back to user mode and charges the call's time to the code that made it.
 * Where only user mode may be counted, a period that ends in the kernel
 * raises nothing and its time goes to the next user-mode sample.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

/* Whether events count kernel mode: decided by perf_probe(). */
static int count_kernel;

static int open_event(pid_t tid, uint64_t period_ns, int kernel)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period_ns;
	a.disabled = 1;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static int perf_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	count_kernel = 1;
	int fd = open_event(0, period_ns, 1);
	if (fd == -EACCES || fd == -EPERM) {
		count_kernel = 0;
		fd = open_event(0, period_ns, 0);
	}
	if (fd < 0) {
		int paranoid = -1;
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
		if (f) {
			if (fscanf(f, "%d", &paranoid) != 1)
				paranoid = -1;
			fclose(f);
		}
		if (paranoid >= 0)
			snprintf(why, len, "perf_event_open: %s (perf_event_paranoid=%d)", strerror(-fd), paranoid);
		else
			snprintf(why, len, "perf_event_open: %s", strerror(-fd));
		return fd;
	}
	close(fd);
	return 0;
}

static int perf_arm(struct cp_thread *t, int signo, uint64_t period_ns)
{
	int fd = open_event(t->tid, period_ns, count_kernel);
	if (fd < 0)
		return fd;
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = t->tid };
	if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 || fcntl(fd, F_SETSIG, signo) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	int e = cp_start_weights(t);
	if (e < 0) {
		close(fd);
		return e;
	}
	t->perf_fd = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		e = -errno;
		t->perf_fd = -1;
		close(fd);
		return e;
	}
	return 0;
}

static void perf_disarm(struct cp_thread *t)
{
	if (t->perf_fd >= 0) {
		close(t->perf_fd);
		t->perf_fd = -1;
	}
}

const struct cp_engine cp_engine_perf = {
	.name = "perf",
	.kind = CP_ENGINE_PERF,
	.probe = perf_probe,
	.arm = perf_arm,
	.disarm = perf_disarm,
};
