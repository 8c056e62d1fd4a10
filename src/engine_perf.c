/*
 * engine_perf.c -- the perf engines: one perf event per thread, whose
 * overflow signal goes to the owning thread (O_ASYNC, F_SETSIG,
 * F_SETOWN_EX/F_OWNER_TID); the event is enabled once and never
 * refreshed.  The handler weighs each sample by the thread's CPU clock
 * (the kernel's own accounting), so totals hold whatever the event counts.
 *
 * perf: PERF_COUNT_SW_TASK_CLOCK, an hrtimer that runs only while the
 * thread runs and fires after each period of its CPU time, above the
 * scheduler tick where the kernel has high-resolution timers (the task
 * clock also runs while the hypervisor steals the CPU, hence the clock
 * weights).
 *
 * hw: PERF_COUNT_HW_CPU_CYCLES, counted by the CPU's performance
 * monitoring unit, whose overflow interrupt owes nothing to the kernel's
 * timers: on a kernel whose timers fire only at its tick it is the one
 * trigger that lands inside work shorter than a tick.  The period in
 * cycles comes from the cycles a thread counts per nanosecond of its CPU
 * clock, measured when the engine is probed.  Needs a PMU (none in most
 * virtual machines: ENOENT).
 *
 * The task clock counts kernel mode too where perf_event_paranoid allows
 * it (root, CAP_PERFMON, or paranoid <= 1): a period that ends inside a
 * system call then still raises its signal, which is delivered on the way
 * back to user mode and charges the call's time to the code that made it.
 * Where only user mode may be counted, and for the cycles event always, a
 * period that ends in the kernel raises nothing and its time goes to the
 * next user-mode sample.
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

/* What one of the two engines opens, and what its probe found out. */
struct perf_kind {
	uint32_t type;
	uint64_t config;
	int try_kernel;        /* count kernel mode too where allowed */
	int count_kernel;      /* events count kernel mode too */
	double units_per_ns;   /* event counts per ns of thread CPU time */
};

static struct perf_kind task_clock = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1, 0, 1.0 };
/* User mode only: in the tick-bound VM with QEMU's emulated PMU (docs/vm.md)
 * counting kernel cycles too put 78-89% of the samples' CPU outside the
 * workload's functions where 26-70% truly was; user mode only, 53% and
 * 74% where 38% and 74% was.  It also behaves the same with and without
 * privileges. */
static struct perf_kind cycles = { PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0.0 };

/* Opens k's event on thread tid (0: the calling thread), sampling every
 * `period` counts (0: counting only), disabled.  Returns the fd or a
 * negative errno. */
static int open_event(const struct perf_kind *k, pid_t tid, uint64_t period, int kernel)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = k->type;
	a.config = k->config;
	a.sample_period = period;
	a.disabled = 1;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

/* Opens k's event on the calling thread, with kernel mode counted if the
 * system allows it, and notes which it was.  Returns the fd or a negative
 * errno with the reason in why[len]. */
static int probe_event(struct perf_kind *k, uint64_t period, char *why, size_t len)
{
	k->count_kernel = k->try_kernel;
	int fd = open_event(k, 0, period, k->count_kernel);
	if (k->count_kernel && (fd == -EACCES || fd == -EPERM)) {
		k->count_kernel = 0;
		fd = open_event(k, 0, period, 0);
	}
	if (fd == -EACCES || fd == -EPERM) {
		int paranoid = -1;
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
		if (f) {
			if (fscanf(f, "%d", &paranoid) != 1)
				paranoid = -1;
			fclose(f);
		}
		snprintf(why, len, "perf_event_open: %s (perf_event_paranoid=%d)", strerror(-fd), paranoid);
	} else if (fd < 0) {
		snprintf(why, len, "perf_event_open: %s%s", strerror(-fd),
			 fd == -ENOENT && k->type == PERF_TYPE_HARDWARE ? " (no PMU counts CPU cycles here)" : "");
	}
	return fd;
}

static int perf_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	int fd = probe_event(&task_clock, period_ns, why, len);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* Calibration: the calling thread spins this long on its CPU clock while
 * its cycles are counted, up to this many times. */
#define CALIBRATE_NS 2000000
#define CALIBRATE_TRIES 3
/* Cycles per ns believed: 10 MHz to 20 GHz. */
#define MIN_CYCLES_PER_NS 0.01
#define MAX_CYCLES_PER_NS 20.0
/* The shortest period in cycles: a few microseconds on any CPU. */
#define MIN_PERIOD_CYCLES 10000

/* Counts the calling thread's user-mode cycles over CALIBRATE_NS of its
 * CPU time: *count (0 if it could not be measured) and *ns.  Returns 0 or
 * a negative errno with the reason in why[len]. */
static int count_cycles(uint64_t *count, uint64_t *ns, char *why, size_t len)
{
	int fd = probe_event(&cycles, 0, why, len);
	if (fd < 0)
		return fd;
	*count = *ns = 0;
	uint64_t t0 = 0, t1 = 0;
	pid_t self = (pid_t)syscall(SYS_gettid);
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0 || cp_thread_cpu_ns(self, &t0) < 0) {
		snprintf(why, len, "cycles event: %s", strerror(errno));
		close(fd);
		return -ENODEV;
	}
	/* User-mode work between rare clock reads, so that the system
	 * calls' time, whose cycles are not counted, hardly weighs. */
	volatile uint64_t sink = 1;
	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ull + 1;
		if (cp_thread_cpu_ns(self, &t1) < 0) {
			close(fd);
			return 0;
		}
	} while (t1 - t0 < CALIBRATE_NS);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	/* With the times the event was enabled and on the PMU: a PMU shared
	 * with other users counts only part of the time. */
	uint64_t v[3];
	if (read(fd, v, sizeof v) == (ssize_t)sizeof v && v[2] > 0) {
		*count = v[2] < v[1] ? (uint64_t)((double)v[0] * (double)v[1] / (double)v[2]) : v[0];
		*ns = t1 - t0;
	}
	close(fd);
	return 0;
}

static int hw_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	uint64_t count = 0, ns = 0;
	double rate = 0;
	/* QEMU's emulated PMU has been seen to count nothing once in about
	 * ten boots, and a fresh event then counted. */
	for (int i = 0; i < CALIBRATE_TRIES && (rate < MIN_CYCLES_PER_NS || rate > MAX_CYCLES_PER_NS); i++) {
		int e = count_cycles(&count, &ns, why, len);
		if (e < 0)
			return e;
		rate = ns ? (double)count / (double)ns : 0;
	}
	if (rate < MIN_CYCLES_PER_NS || rate > MAX_CYCLES_PER_NS) {
		snprintf(why, len, "the cycles event counted %llu cycles in %llu ns of CPU, %d times out of %d",
			 (unsigned long long)count, (unsigned long long)ns, CALIBRATE_TRIES, CALIBRATE_TRIES);
		return -ENODEV;
	}
	cycles.units_per_ns = rate;
	return 0;
}

static int arm_event(struct perf_kind *k, struct cp_thread *t, int signo, uint64_t period_ns)
{
	uint64_t period = (uint64_t)((double)period_ns * k->units_per_ns);
	if (k->type == PERF_TYPE_HARDWARE && period < MIN_PERIOD_CYCLES)
		period = MIN_PERIOD_CYCLES;
	int fd = open_event(k, t->tid, period, k->count_kernel);
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

static int perf_arm(struct cp_thread *t, int signo, uint64_t period_ns)
{
	return arm_event(&task_clock, t, signo, period_ns);
}

static int hw_arm(struct cp_thread *t, int signo, uint64_t period_ns)
{
	return arm_event(&cycles, t, signo, period_ns);
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

const struct cp_engine cp_engine_hw = {
	.name = "hw",
	.kind = CP_ENGINE_PERF, /* the same signals, handled the same way */
	.probe = hw_probe,
	.arm = hw_arm,
	.disarm = perf_disarm,
};
