/*
 * perf_probe.c -- the perf engines' events (perf_int.h) and their probes:
 * whether this process may open them, counting kernel mode or not, and
 * for the cycle counter, how many cycles a nanosecond of CPU is and
 * whether its overflow raises samples at all.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf/events.h"
#include "perf/records.h"
#include "perf_int.h"
#include "sig/clock.h"
#include "threads.h"

struct perf_kind cp_perf_task_clock = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1, 0, 1.0 };
/* User mode only: in the tick-bound VM with QEMU's emulated PMU (docs/vm.md)
 * counting kernel cycles too put 78-89% of the samples' CPU outside the
 * workload's functions where 26-70% truly was; user mode only, 53% and
 * 74% where 38% and 74% was.  It also behaves the same with and without
 * privileges. */
struct perf_kind cp_perf_cycles = { PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0.0 };


int cp_perf_open_event(const struct perf_kind *k, pid_t tid, int cpu, uint64_t period, int kernel, int ring,
		       int use_read)
{
	struct perf_event_attr a;
	if (ring) {
		cp_perf_sampler_attr(&a, k->type, k->config, period, kernel, use_read);
		a.inherit_thread = 1;
		/* Nobody polls the rings: a watermark past their end keeps the
		 * kernel from waking anyone. */
		a.watermark = 1;
		a.wakeup_watermark = (uint32_t)CP_PERF_RING_PAGES_MAX * 4096u;
	} else {
		/* Counting only. */
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = k->type;
		a.config = k->config;
		a.sample_period = period;
		a.exclude_kernel = (unsigned)!kernel;
		a.exclude_hv = 1;
		a.disabled = 1;
		a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	}
	return cp_perf_open(&a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opens k's sampling event on the calling thread, with kernel mode counted
 * if the system allows it, and notes which it was.  Returns the fd or a
 * negative errno with the reason in why[len]. */
static int probe_event(struct perf_kind *k, uint64_t period, int ring, char *why, size_t len)
{
	k->count_kernel = k->try_kernel;
	int fd = cp_perf_open_event(k, 0, -1, period, k->count_kernel, 0, 0);
	if (k->count_kernel && (fd == -EACCES || fd == -EPERM)) {
		k->count_kernel = 0;
		fd = cp_perf_open_event(k, 0, -1, period, 0, 0, 0);
	}
	if (fd == -EACCES || fd == -EPERM) {
		snprintf(why, len, "perf_event_open: %s (perf_event_paranoid=%d)", strerror(-fd), cp_perf_paranoid());
		return fd;
	}
	if (fd < 0) {
		snprintf(why, len, "perf_event_open: %s%s", strerror(-fd),
			 fd == -ENOENT && k->type == PERF_TYPE_HARDWARE ? " (no PMU counts CPU cycles here)" : "");
		return fd;
	}
	if (!ring)
		return fd;
	close(fd);
	/* The sampling attributes: inherit_thread needs Linux 5.13. */
	fd = cp_perf_open_event(k, 0, 0, period ? period : 1000000, k->count_kernel, 1, 0);
	if (fd < 0)
		snprintf(why, len, "perf_event_open with inherit_thread and a stack copy: %s%s", strerror(-fd),
			 fd == -EINVAL ? " (needs Linux 5.13)" : "");
	return fd;
}

int cp_perf_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	int fd = probe_event(&cp_perf_task_clock, period_ns, 1, why, len);
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

/* User-mode work on the calling thread (tid self) between rare clock
 * reads, so that the system calls' time, whose cycles are not counted,
 * hardly weighs, until its CPU clock is CALIBRATE_NS past t0; *t1 is the
 * last reading.  0, or -1 if the clock could not be read. */
static int spin(pid_t self, uint64_t t0, uint64_t *t1)
{
	volatile uint64_t sink = 1;
	do {
		for (int i = 0; i < 20000; i++)
			sink = sink * 6364136223846793005ull + 1;
		if (cp_thread_cpu_ns(self, t1) < 0)
			return -1;
	} while (*t1 - t0 < CALIBRATE_NS);
	return 0;
}

/* Counts the calling thread's user-mode cycles over CALIBRATE_NS of its
 * CPU time: *count (0 if it could not be measured) and *ns.  Returns 0 or
 * a negative errno with the reason in why[len]. */
static int count_cycles(uint64_t *count, uint64_t *ns, char *why, size_t len)
{
	int fd = probe_event(&cp_perf_cycles, 0, 0, why, len);
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
	if (spin(self, t0, &t1) < 0) {
		close(fd);
		return 0;
	}
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

/* Whether a cycles event sampling every `period` user-mode cycles of the
 * calling thread raises a sample in CALIBRATE_NS of its CPU time (about
 * OVERFLOWS_EXPECTED are due): counting is not enough, the PMU's overflow
 * interrupt must come.  1, 0, or -1 if that could not be tried. */
#define OVERFLOWS_EXPECTED 16
static int raises_samples(uint64_t period)
{
	int fd = cp_perf_open_event(&cp_perf_cycles, 0, -1, period, 0, 0, 0);
	if (fd < 0)
		return -1;
	long page = sysconf(_SC_PAGESIZE);
	/* The control page and one data page: a sample with nothing asked
	 * of it is its 8-byte header, and the head counts on past the
	 * page's end. */
	struct perf_event_mmap_page *m = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -1;
	}
	pid_t self = (pid_t)syscall(SYS_gettid);
	uint64_t t0 = 0, t1 = 0;
	int rc = -1;
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0 && cp_thread_cpu_ns(self, &t0) == 0 && spin(self, t0, &t1) == 0) {
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		rc = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE) > 0;
	}
	munmap(m, 2 * (size_t)page);
	close(fd);
	return rc;
}

int cp_hw_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	uint64_t count = 0, ns = 0;
	double rate = 0;
	int raises = 0;
	/* QEMU's emulated PMU has been seen to count nothing once in about
	 * ten boots, and a fresh event then counted.  A PMU whose overflow
	 * interrupt never comes would count and give no sample.  (A
	 * sampling event that could not be tried, -1, is no reason to
	 * refuse.) */
	for (int i = 0; i < CALIBRATE_TRIES && raises == 0; i++) {
		int e = count_cycles(&count, &ns, why, len);
		if (e < 0)
			return e;
		rate = ns ? (double)count / (double)ns : 0;
		if (rate < MIN_CYCLES_PER_NS || rate > MAX_CYCLES_PER_NS)
			continue;
		raises = raises_samples((uint64_t)(rate * CALIBRATE_NS / OVERFLOWS_EXPECTED));
	}
	if (rate < MIN_CYCLES_PER_NS || rate > MAX_CYCLES_PER_NS) {
		snprintf(why, len, "the cycles event counted %llu cycles in %llu ns of CPU, %d times out of %d",
			 (unsigned long long)count, (unsigned long long)ns, CALIBRATE_TRIES, CALIBRATE_TRIES);
		return -ENODEV;
	}
	if (raises == 0) {
		snprintf(why, len, "the cycles event counted (%.2f cycles/ns) but raised no sample in %d ms of CPU, "
			 "where %d were due: the PMU's overflow interrupt does not come", rate, CALIBRATE_NS / 1000000,
			 OVERFLOWS_EXPECTED);
		return -ENODEV;
	}
	cp_perf_cycles.units_per_ns = rate;
	int fd = probe_event(&cp_perf_cycles, (uint64_t)((double)period_ns * rate), 1, why, len);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
