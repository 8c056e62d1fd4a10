/*
 * perf.c -- the perf engines: perf_event_open samples that the
 * kernel writes into rings, with no signal.  Each sample carries the
 * thread's user registers and a copy of the top of its user stack
 * (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER); the keeper thread walks
 * the copy with the unwind tables and puts the stack into cp_sig.ring.
 * Nothing is delivered to the program's threads, so their masks, their
 * handlers, their sleeps and their exec()s are none of our business.
 *
 * perf: PERF_COUNT_SW_TASK_CLOCK, an hrtimer that runs only while the
 * thread runs and fires after each period of its CPU time, above the
 * scheduler tick where the kernel has high-resolution timers.
 *
 * hw: PERF_COUNT_HW_CPU_CYCLES, user mode only, counted by the CPU's
 * performance monitoring unit, whose overflow interrupt owes nothing to
 * the kernel's timers: on a kernel whose timers fire only at its tick it
 * is the one trigger that lands inside work shorter than a tick.  The
 * period in cycles comes from the cycles a thread counts per nanosecond of
 * its CPU clock, measured when the engine is probed.  Needs a PMU (none in
 * most virtual machines: ENOENT).
 *
 * Events.  One event per online CPU for each thread that exists at start,
 * with inherit and inherit_thread (Linux 5.13): every thread those threads
 * create later gets its own copies of the events from the kernel, however
 * it was created, and forked processes get none.  Each CPU has one ring
 * (the first event opened on it is mapped, the others write into it with
 * PERF_EVENT_IOC_SET_OUTPUT), so memory follows the CPUs, not the threads,
 * and one CPU's ring receives at most HZ samples a second.  The rings are
 * never signalled either: the keeper wakes in time to drain them half
 * full at that rate.
 *
 * Weights.  Where the kernel allows PERF_SAMPLE_READ with inherit (Linux
 * 6.12), each sample carries its event's count, and weighs the time since
 * the previous sample of its thread on its CPU: periods the kernel could
 * not sample (they ended in the kernel without the right to count kernel
 * mode, or the ring was full) are charged to the next sample, as the
 * signal engines charge them by the thread CPU clock.  Elsewhere a sample
 * weighs one period and such periods stay unsampled.  What each thread
 * used after its last sample comes from the thread's own CPU clock: read
 * by cpuprof for the threads found at start and those alive at the stop,
 * logged by the thread itself as it ends for those the program made
 * through pthread_create (threads.c), since the task clock counts a few
 * percent less than the scheduler for a thread that sleeps often; else
 * from the event's count when an inherited thread exits (inherit_stat:
 * PERF_RECORD_READ).  All of it is "unsampled".
 *
 * The task clock counts kernel mode too where perf_event_paranoid allows
 * it (root, CAP_PERFMON, or paranoid <= 1): a sample taken in a system
 * call then carries the user registers of the call site, and charges the
 * call to the code that made it.
 *
 * Off-CPU time (conf.off_cpu).  Beside each thread's sampling event, on
 * the same CPU and into the same ring, a context-switch event
 * (perf/switches.h): a sample at every switch-out with the user stack
 * where the thread entered the kernel, and the switch records.  It needs
 * the right to sample kernel mode (root, CAP_PERFMON or paranoid <= 1);
 * without it the profile says why and holds CPU only.  Every sample then
 * leads with its event's id and carries its time (CLOCK_MONOTONIC, as the
 * records do).  The keeper walks each switch-out's stack at once, queues
 * it with the switch, fork and exit records, and hands them to
 * switches.c in time order once no older record can still be in another
 * CPU's ring; each interval it hands back goes into cp_sig.ring as a
 * CP_SAMPLE_OFF_CPU sample weighing the time off the CPU.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "perf/events.h"
#include "perf/switches.h"
#include "engine.h"
#include "profile/names.h"
#include "threads.h"
#include "unwind/tables.h"
#include "base/hash.h"
#include "base/testhooks.h"
#include "sig/clock.h"

/* Bytes of each sample's stack copied (a multiple of 8 below 64 KiB):
 * deeper stacks end in [truncated]. */
#define STACK_COPY 16384
/* Data pages of each CPU's ring: room for RING_MS of samples at the rate
 * asked for (src/perf/ring.h: at least 512 KiB, about 31 samples of 16
 * KiB, at most 4 MiB): 128 pages up to 1 kHz, 1024 at 10 kHz.  A map the
 * locked-memory limits refuse is tried again at half the size, down to
 * the least.  The keeper drains a ring half full: what is left, half of
 * RING_MS, is how late it may wake without a sample lost. */
#define RING_MS 25
/* The test build's knobs (cp_test_perf_*) are in base/testhooks.h. */

/* The keeper's sleep, and its bounds (ms). */
#define SLEEP_MIN_MS 1
#define SLEEP_MAX_MS 100
#define MAX_CPUS 4096
/* Off-CPU time: records younger than this wait for the keeper's next
 * pass (an older one of another CPU may not be in its ring yet), and the
 * keeper wakes at least this often (ms): a switch-out is a sample too,
 * as often as the program switches. */
#define ORDER_SLACK_NS 2000000
#define OFF_CPU_SLEEP_MS 10
/* The frame of CPU no sample stands for, where periods that end in the
 * kernel raise no sample and are not charged to the next one. */
#define UNSAMPLED_KERNEL "[unsampled: in the kernel, or after each thread's last sample]"

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

/* Per thread. */
struct tinfo {
	pid_t tid;          /* 0 = empty */
	int original;       /* found at start: its CPU clock gives its tail */
	int exited;
	uint64_t cpu0_ns;   /* original: its CPU clock when armed */
	uint64_t seen_ns;   /* original: its CPU clock when last read */
	uint64_t sampled_ns;
	uint64_t tail_ns;   /* inherited and exited: what its count said */
	uint64_t end_ns;    /* inherited: its CPU clock as it ended, if known */
};

static struct {
	struct perf_kind *k;
	uint64_t period;      /* in event units */
	double ns_per_unit;
	int use_read;         /* samples carry their event's count */
	pid_t keeper;
	struct cp_perf_ring *rings;
	size_t nrings;
	int *fds;             /* every event opened */
	size_t nfds, capfds, fd_budget;
	uint8_t *bounce;      /* a record that wraps around its ring */
	size_t bounce_size;
	struct cp_perf_counts counts; /* what each thread's samples accounted for, per CPU */
	struct tinfo *ti;
	size_t nti, capti;
	struct cp_engine_stats st;
	int sleep_ms;
	/* The task clock fires only at the kernel's tick here: a sample
	 * holds about a tick whatever the period, so the periods it holds
	 * beyond one do not say the thread was in the kernel. */
	int tick_bound;
	unsigned ring_pages;  /* asked for each ring */
	/* Off-CPU time: on (ident: samples lead with their event's id and
	 * carry their time), the context-switch events, the pairing, the
	 * queue of what it is handed in time order, a walk's scratch. */
	int off_cpu, ident;
	int *swfds;
	size_t nswfds, capswfds;
	struct cp_switches sw;
	struct swq *sq;
	size_t nsq, capsq;
	uint64_t sqseq;
	struct cp_sample *scratch;
	char off_why[384];
} E;

/* A queued event of off-CPU time. */
struct swq {
	uint64_t time, seq;
	pid_t tid;
	int kind;             /* SWQ_* */
	int preempted;        /* SWQ_OUT */
	uint32_t n, flags, gen; /* SWQ_STACK: the walk */
	uintptr_t *pcs;
};
enum { SWQ_BEGIN, SWQ_END, SWQ_STACK, SWQ_OUT, SWQ_IN };

/* Opens k's event on thread tid (0: the calling thread) and CPU cpu (-1:
 * any), sampling every `period` counts (0: counting only), with the
 * sampling attributes of this engine if `ring`.  Returns the fd or a
 * negative errno. */
static int open_event(const struct perf_kind *k, pid_t tid, int cpu, uint64_t period, int kernel, int ring,
		      int use_read, int ident)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = k->type;
	a.config = k->config;
	a.sample_period = period;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	if (ring) {
		a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
				(use_read ? PERF_SAMPLE_READ : 0);
		/* Beside a context-switch event: the same ring, so the same
		 * clock, and each sample says whose it is. */
		if (ident) {
			a.sample_type |= PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME;
			a.use_clockid = 1;
			a.clockid = CLOCK_MONOTONIC;
		}
		a.sample_regs_user = CP_PERF_REGS_MASK;
		a.sample_stack_user = STACK_COPY;
		a.inherit = 1;
		a.inherit_thread = 1;
		a.inherit_stat = 1;
		a.task = 1;
		a.comm = 1;
		a.sample_id_all = 1;
		/* Nobody polls the rings: a watermark past their end keeps the
		 * kernel from waking anyone. */
		a.watermark = 1;
		a.wakeup_watermark = (uint32_t)CP_PERF_RING_PAGES_MAX * 4096u;
	} else {
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
	int fd = open_event(k, 0, -1, period, k->count_kernel, 0, 0, 0);
	if (k->count_kernel && (fd == -EACCES || fd == -EPERM)) {
		k->count_kernel = 0;
		fd = open_event(k, 0, -1, period, 0, 0, 0, 0);
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
	fd = open_event(k, 0, 0, period ? period : 1000000, k->count_kernel, 1, 0, 0);
	if (fd < 0)
		snprintf(why, len, "perf_event_open with inherit_thread and a stack copy: %s%s", strerror(-fd),
			 fd == -EINVAL ? " (needs Linux 5.13)" : "");
	return fd;
}

static int perf_probe(int signo, uint64_t period_ns, char *why, size_t len)
{
	int fd = probe_event(&task_clock, period_ns, 1, why, len);
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
	int fd = probe_event(&cycles, 0, 0, why, len);
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
	int fd = open_event(&cycles, 0, -1, period, 0, 0, 0, 0);
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

static int hw_probe(int signo, uint64_t period_ns, char *why, size_t len)
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
	cycles.units_per_ns = rate;
	int fd = probe_event(&cycles, (uint64_t)((double)period_ns * rate), 1, why, len);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* ---- per-thread and per-CPU accounting ---- */

/* Grows an open-addressing table of `size`-byte entries whose first
 * field is a non-zero key (0 = empty), rehashing by key_of.  0 or -1. */
static int grow(void **tab, size_t *cap, size_t n, size_t size, uint64_t (*key_of)(const void *))
{
	if ((n + 1) * 2 <= *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	uint8_t *t = calloc(ncap, size);
	if (!t)
		return -1;
	for (size_t i = 0; i < *cap; i++) {
		const uint8_t *e = (const uint8_t *)*tab + i * size;
		uint64_t key = key_of(e);
		if (!key)
			continue;
		size_t j = cp_hash64(key) & (ncap - 1);
		while (key_of(t + j * size))
			j = (j + 1) & (ncap - 1);
		memcpy(t + j * size, e, size);
	}
	free(*tab);
	*tab = t;
	*cap = ncap;
	return 0;
}

static uint64_t tinfo_key(const void *e)
{
	return (uint64_t)(unsigned)((const struct tinfo *)e)->tid;
}

/* The entry of thread tid, made if new (counting it as armed); NULL if
 * out of memory. */
static struct tinfo *tinfo_get(pid_t tid)
{
	if (tid <= 0 || grow((void **)&E.ti, &E.capti, E.nti, sizeof *E.ti, tinfo_key) < 0)
		return NULL;
	size_t i = cp_hash64((unsigned)tid) & (E.capti - 1);
	while (E.ti[i].tid && E.ti[i].tid != tid)
		i = (i + 1) & (E.capti - 1);
	if (!E.ti[i].tid) {
		memset(&E.ti[i], 0, sizeof E.ti[i]);
		E.ti[i].tid = tid;
		E.nti++;
		E.st.armed++;
	}
	return &E.ti[i];
}

/* ---- opening ---- */

static int keep_fd(int fd)
{
	if (E.nfds == E.capfds) {
		size_t cap = E.capfds ? 2 * E.capfds : 16;
		int *n = realloc(E.fds, cap * sizeof *n);
		if (!n)
			return -ENOMEM;
		E.fds = n;
		E.capfds = cap;
	}
	E.fds[E.nfds++] = fd;
	return 0;
}

/* Opens the context-switch event of thread tid (0: the calling thread) on
 * cpu, writing into ring_fd's ring (-1: a probe, its own), and notes its
 * id.  The fd or a negative errno. */
static int open_switch(pid_t tid, int cpu, int ring_fd)
{
	struct perf_event_attr a;
	cp_switches_attr(&a, 0, CP_PERF_REGS_MASK, CP_SWITCH_STACK_COPY);
	a.inherit_thread = 1;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)CP_PERF_RING_PAGES_MAX * 4096u;
	int fd = cp_perf_open(&a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 || ring_fd < 0)
		return fd;
	uint64_t id = 0;
	int e = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0 ? -errno : 0;
	if (e == 0)
		e = cp_switches_add_id(&E.sw, id);
	if (e == 0 && E.nswfds == E.capswfds) {
		size_t cap = E.capswfds ? 2 * E.capswfds : 16;
		int *n = realloc(E.swfds, cap * sizeof *n);
		if (n) {
			E.swfds = n;
			E.capswfds = cap;
		} else {
			e = -ENOMEM;
		}
	}
	if (e < 0) {
		close(fd);
		return e;
	}
	E.swfds[E.nswfds++] = fd;
	return fd;
}

/* Opens thread tid's context-switch event on ring r's CPU; if it cannot
 * be (but for a thread that has ended), off-CPU time is given up: its
 * events are disabled, and the profile says why. */
static void arm_switches(pid_t tid, const struct cp_perf_ring *r)
{
	int fd = open_switch(tid, r->cpu, r->fd);
	if (fd >= 0 || fd == -ESRCH)
		return;
	for (size_t i = 0; i < E.nswfds; i++)
		ioctl(E.swfds[i], PERF_EVENT_IOC_DISABLE, 0);
	E.off_cpu = 0;
	E.st.off_cpu = CP_OFF_CPU_ABSENT;
	snprintf(E.off_why, sizeof E.off_why, "the context-switch event could not be opened on thread %d: %s",
		 (int)tid, strerror(-fd));
	E.st.off_cpu_why = E.off_why;
}

/* Opens the events of thread tid on every CPU.  0 or a negative errno
 * (the thread is then not sampled; its events so far stay open). */
static int arm_thread(pid_t tid)
{
	if (E.nfds + E.nswfds + 2 * E.nrings > E.fd_budget)
		return -EMFILE;
	int armed = 0, err = 0;
	for (size_t i = 0; i < E.nrings; i++) {
		struct cp_perf_ring *r = &E.rings[i];
		int fd = open_event(E.k, tid, r->cpu, E.period, E.k->count_kernel, 1, E.use_read, E.ident);
		if (fd < 0) {
			/* An offline CPU, or the thread is gone. */
			err = fd;
			continue;
		}
		int e = keep_fd(fd);
		if (e == 0)
			e = r->fd < 0 ? cp_perf_ring_map(r, fd, &E.ring_pages)
				      : (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0 ? -errno : 0);
		if (e < 0) {
			if (E.nfds && E.fds[E.nfds - 1] == fd)
				E.nfds--;
			close(fd);
			err = e;
			continue;
		}
		armed++;
		if (E.off_cpu)
			arm_switches(tid, r);
	}
	return armed ? 0 : (err ? err : -ENODEV);
}

/* Arms every thread in /proc/self/task but the keeper, listing again
 * until a pass finds no new one: a thread made by a thread not yet armed
 * inherits nothing. */
static void arm_all(void)
{
	for (int pass = 0; pass < 100; pass++) {
		int found = 0;
		DIR *d = opendir("/proc/self/task");
		if (!d)
			return;
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			if (*end || tid <= 0 || tid == E.keeper)
				continue;
			size_t i = E.capti ? cp_hash64((unsigned)tid) & (E.capti - 1) : 0;
			int known = 0;
			while (E.capti && E.ti[i].tid) {
				if (E.ti[i].tid == (pid_t)tid) {
					known = 1;
					break;
				}
				i = (i + 1) & (E.capti - 1);
			}
			if (known)
				continue;
			found = 1;
			uint64_t cpu0 = 0;
			cp_thread_cpu_ns((pid_t)tid, &cpu0);
			/* Its life in the profile starts now, on the CPU or
			 * not: its first switch event says which. */
			if (E.off_cpu)
				cp_switches_begin(&E.sw, (pid_t)tid, cp_mono_ns(), 0);
			int e = arm_thread((pid_t)tid);
			if (e < 0) {
				E.st.unarmed++;
				if (!E.st.first_error)
					E.st.first_error = e;
				/* Remembered, so that it is not tried again. */
				struct tinfo *t = tinfo_get((pid_t)tid);
				if (t) {
					t->exited = 1;
					E.st.armed--;
				}
				continue;
			}
			struct tinfo *t = tinfo_get((pid_t)tid);
			if (t) {
				t->original = 1;
				t->cpu0_ns = t->seen_ns = cpu0;
			}
			char path[64], name[32];
			snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				ssize_t n = read(fd, name, sizeof name - 1);
				close(fd);
				if (n > 0) {
					name[n] = '\0';
					name[strcspn(name, "\n")] = '\0';
					cp_names_set((pid_t)tid, name);
				}
			}
		}
		closedir(d);
		if (!found)
			return;
	}
}

/* What off-CPU time holds, freed. */
static void free_off_cpu(void)
{
	for (size_t i = 0; i < E.nsq; i++)
		free(E.sq[i].pcs);
	free(E.sq);
	free(E.swfds);
	free(E.scratch);
	cp_switches_free(&E.sw);
	E.sq = NULL;
	E.swfds = NULL;
	E.scratch = NULL;
	E.nsq = E.capsq = E.nswfds = E.capswfds = 0;
}

static void close_all(void)
{
	for (size_t i = 0; i < E.nrings; i++)
		cp_perf_ring_unmap(&E.rings[i]);
	for (size_t i = 0; i < E.nfds; i++)
		close(E.fds[i]);
	for (size_t i = 0; i < E.nswfds; i++)
		close(E.swfds[i]);
	free_off_cpu();
	free(E.rings);
	free(E.fds);
	free(E.bounce);
	cp_perf_counts_free(&E.counts);
	free(E.ti);
	E.rings = NULL;
	E.fds = NULL;
	E.bounce = NULL;
	E.ti = NULL;
	E.nrings = E.nfds = E.capfds = E.nti = E.capti = 0;
}

/* ---- off-CPU time ---- */

/* An off-CPU interval of thread tid (switches.h) into cp_sig.ring: a
 * sample of its switch-out's stack (objects of generation gen) that
 * weighs the time off the CPU. */
static void on_off(void *arg, void *ctx, uint64_t gen, pid_t tid, const uintptr_t *pcs, uint32_t n,
		   uint32_t stack_flags, uint32_t kind, uint64_t ns)
{
	struct cp_sample *s = cp_ring_claim(cp_sig.ring);
	if (!s) {
		E.st.off_lost++;
		return;
	}
	if (n > cp_sig.max_depth)
		n = cp_sig.max_depth;
	if (n)
		memcpy(s->pcs, pcs, n * sizeof *pcs);
	s->n = (uint16_t)n;
	s->flags = (uint16_t)(stack_flags | kind);
	s->weight_ns = ns;
	s->tid = (uint32_t)tid;
	s->gen = gen ? (uint32_t)gen : atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	cp_sample_commit(s, 0);
}

/* Queues an event of off-CPU time (its pcs, if any, malloc'd and owned by
 * the queue). */
static void sq_push(uint64_t time, pid_t tid, int kind, int preempted, const struct cp_sample *walk)
{
	if (E.nsq == E.capsq) {
		size_t cap = E.capsq ? 2 * E.capsq : 256;
		struct swq *n = realloc(E.sq, cap * sizeof *n);
		if (!n)
			return;
		E.sq = n;
		E.capsq = cap;
	}
	struct swq *q = &E.sq[E.nsq];
	*q = (struct swq){ .time = time, .seq = E.sqseq++, .tid = tid, .kind = kind, .preempted = preempted };
	if (walk) {
		q->n = walk->n;
		q->flags = walk->flags;
		q->gen = walk->gen;
		if (walk->n && !(q->pcs = malloc(walk->n * sizeof *q->pcs)))
			return;
		if (walk->n)
			memcpy(q->pcs, walk->pcs, walk->n * sizeof *q->pcs);
	}
	E.nsq++;
}

static int sq_cmp(const void *a, const void *b)
{
	const struct swq *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hands the queued events older than `until` to switches.c in time
 * order, and keeps the rest. */
static void sq_flush(uint64_t until)
{
	if (!E.nsq)
		return;
	qsort(E.sq, E.nsq, sizeof *E.sq, sq_cmp);
	size_t i = 0;
	for (; i < E.nsq && E.sq[i].time < until; i++) {
		const struct swq *q = &E.sq[i];
		switch (q->kind) {
		case SWQ_BEGIN: cp_switches_begin(&E.sw, q->tid, q->time, 1); break;
		case SWQ_END: cp_switches_end(&E.sw, q->tid, q->time); break;
		case SWQ_STACK:
			cp_switches_out_stack(&E.sw, q->tid, q->time, q->pcs, q->n, q->flags, NULL, q->gen);
			break;
		case SWQ_OUT: cp_switches_out(&E.sw, q->tid, q->time, q->preempted); break;
		case SWQ_IN: cp_switches_in(&E.sw, q->tid, q->time); break;
		}
		free(q->pcs);
	}
	memmove(E.sq, E.sq + i, (E.nsq - i) * sizeof *E.sq);
	E.nsq -= i;
}

/* Whether the kernel lets this process sample switch-outs (a probe on
 * the calling thread): off-CPU time on, or absent and why. */
static void start_off_cpu(void)
{
	int fd = open_switch(0, E.rings[0].cpu, -1);
	if (fd < 0) {
		E.st.off_cpu = CP_OFF_CPU_ABSENT;
		cp_switches_refused(fd, E.off_why, sizeof E.off_why);
		E.st.off_cpu_why = E.off_why;
		return;
	}
	close(fd);
	E.scratch = malloc(sizeof *E.scratch + (size_t)cp_sig.max_depth * sizeof(uintptr_t));
	if (!E.scratch) {
		E.st.off_cpu = CP_OFF_CPU_ABSENT;
		E.st.off_cpu_why = "out of memory";
		return;
	}
	cp_switches_init(&E.sw, on_off, NULL);
	E.off_cpu = E.ident = 1;
	E.st.off_cpu = CP_OFF_CPU_ON;
}

/* The threads whose samples held more than their CPU clocks at the last
 * stop, and what to multiply them by (perf_clock_factor), by tid. */
static struct clock_scale {
	uint32_t tid;
	double factor;
} *scales;
static size_t nscales;
/* The same for all the threads whose clocks are known, together: for
 * samples of no thread in particular (tid 0), and those lost. */
static double all_factor = 1.0;

static void forget_scales(void)
{
	free(scales);
	scales = NULL;
	nscales = 0;
	all_factor = 1.0;
}

static int by_tid(const void *a, const void *b)
{
	uint32_t x = ((const struct clock_scale *)a)->tid, y = ((const struct clock_scale *)b)->tid;
	return x < y ? -1 : x > y;
}

static double perf_clock_factor(uint32_t tid)
{
	if (tid == 0)
		return all_factor;
	struct clock_scale key = { tid, 1.0 };
	const struct clock_scale *s = nscales ? bsearch(&key, scales, nscales, sizeof *scales, by_tid) : NULL;
	return s ? s->factor : 1.0;
}

static int start_kind(struct perf_kind *k, const struct cp_engine_conf *c)
{
	forget_scales();
	memset(&E, 0, sizeof E);
	E.k = k;
	E.keeper = c->keeper_tid;
	E.ns_per_unit = 1.0 / k->units_per_ns;
	E.period = (uint64_t)((double)c->period_ns * k->units_per_ns);
	if (k->type == PERF_TYPE_HARDWARE && E.period < MIN_PERIOD_CYCLES)
		E.period = MIN_PERIOD_CYCLES;
	if (E.period == 0)
		E.period = 1;
	struct timespec res;
	E.tick_bound = clock_getres(CLOCK_MONOTONIC, &res) == 0 && (res.tv_sec > 0 || res.tv_nsec > 1000000);
	E.bounce_size = STACK_COPY + 4096;
	struct rlimit rl;
	E.fd_budget = 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 > 256)
		E.fd_budget = rl.rlim_cur / 2;
	if (!(E.bounce = malloc(E.bounce_size)) || cp_perf_rings(&E.rings, &E.nrings) < 0) {
		close_all();
		return -ENOMEM;
	}
	if (c->off_cpu)
		start_off_cpu();
	/* PERF_SAMPLE_READ with inherit, where the kernel has it. */
	int fd = open_event(k, 0, E.rings[0].cpu, E.period, k->count_kernel, 1, 1, E.ident);
	E.use_read = fd >= 0 && !cp_test_perf_no_read;
	if (fd >= 0)
		close(fd);
	uint64_t hz = c->period_ns ? 1000000000u / c->period_ns : 1000;
	uint64_t want = (hz * RING_MS / 1000 * (STACK_COPY + 256) + 4095) / 4096;
	if (E.off_cpu)
		want = CP_PERF_RING_PAGES_MAX; /* a sample per switch-out, too */
	E.ring_pages = cp_perf_ring_pages(E.nrings, want > UINT32_MAX ? UINT32_MAX : (unsigned)want);
	cp_threads_exit_clocks(1); /* before the events: no thread made after them is missed */
	arm_all();
	if (E.st.armed == 0) {
		int e = E.st.first_error ? E.st.first_error : -ENODEV;
		cp_threads_exit_clocks(0);
		close_all();
		return e;
	}
	/* One CPU's ring fills at most at HZ samples a second: sleep for
	 * half the time the smallest takes to fill. */
	uint64_t least = UINT64_MAX;
	for (size_t i = 0; i < E.nrings; i++)
		if (E.rings[i].page && E.rings[i].size < least)
			least = E.rings[i].size;
	uint64_t per_ring = least / (STACK_COPY + 256);
	uint64_t ms = hz ? per_ring * 1000u / (2 * hz) : SLEEP_MAX_MS;
	E.sleep_ms = ms < SLEEP_MIN_MS ? SLEEP_MIN_MS : ms > SLEEP_MAX_MS ? SLEEP_MAX_MS : (int)ms;
	if (E.off_cpu && E.sleep_ms > OFF_CPU_SLEEP_MS)
		E.sleep_ms = OFF_CPU_SLEEP_MS;
	return 0;
}

static int perf_start(const struct cp_engine_conf *c)
{
	return start_kind(&task_clock, c);
}

static int hw_start(const struct cp_engine_conf *c)
{
	return start_kind(&cycles, c);
}

/* ---- draining ---- */

/* The threads' CPU after their last samples, less what the kernel's
 * lost-sample records are charged with in [lost]: without
 * PERF_SAMPLE_READ (kernels before 6.12) a sample the kernel lost never
 * reaches a thread's sampled_ns, so its period is in the thread's tail
 * (its clock less its samples) as well as in lost_ns.  With it, the next
 * sample's count carries the lost periods and lost_ns holds none. */
static uint64_t unsampled_less_lost(uint64_t unsampled)
{
	return unsampled > E.st.lost_ns ? unsampled - E.st.lost_ns : 0;
}

/* The time since a thread's previous sample on cpu, in ns, from the
 * count `value` (or one period); accounts for it.  A task clock without
 * kernel-mode samples: the periods that ended in the kernel are not the
 * sample's, but *kernel_ns. */
static uint64_t weigh(pid_t tid, int cpu, uint64_t value, int have_value, uint64_t *kernel_ns)
{
	uint64_t kernel = 0;
	int user_only = E.k == &task_clock && !E.k->count_kernel && !E.tick_bound;
	uint64_t units = cp_perf_counts_weigh(&E.counts, tid, cpu, value, have_value, E.period,
					      user_only ? &kernel : NULL);
	*kernel_ns = (uint64_t)((double)kernel * E.ns_per_unit);
	return (uint64_t)((double)units * E.ns_per_unit);
}

/* Walks the stack copy of a sample (its registers regs, dyn bytes at
 * stack of the `whole` asked for) into s; a walk that wants more than a
 * whole copy holds is cut there (CP_SAMPLE_TRUNCATED).  A table not built
 * yet is built, and the copy walked again (it is still in the ring).
 * Returns whether every pc was in a table. */
static int walk_copy(const uint64_t *regs, const uint8_t *stack, uint64_t dyn, uint64_t whole, struct cp_sample *s)
{
	struct cp_regs regs_;
	CP_PERF_REGS(regs, &regs_);
	int beyond = 0;
	struct cp_stackmem m = {
		.beyond = &beyond,
		.lo = regs_.sp,
		.hi = regs_.sp + dyn,
		.delta = (intptr_t)((uintptr_t)stack - regs_.sp),
		.copy = 1,
	};
	int known = cp_unwind(&regs_, &m, s);
	if (!known && cp_unwind_build_wanted()) {
		beyond = 0;
		known = cp_unwind(&regs_, &m, s);
	}
	if (beyond && dyn == whole)
		s->flags |= CP_SAMPLE_TRUNCATED;
	return known;
}

/* A switch-out's sample (off-CPU time): its stack walked now, while the
 * copy is in the ring, and queued with the switch records. */
static void on_switch_sample(struct cp_perf_rec *r)
{
	uint32_t pid_tid[2];
	uint64_t time;
	if (!E.off_cpu || !cp_perf_take(r, pid_tid, sizeof pid_tid) || !cp_perf_take(r, &time, sizeof time))
		return;
	uint64_t regs[CP_PERF_NREGS] = { 0 };
	const uint8_t *stack;
	uint64_t dyn;
	int user = cp_perf_take_user(r, regs, CP_PERF_NREGS, &stack, &dyn);
	if (user < 0)
		return;
	struct cp_sample *s = E.scratch;
	s->n = 0;
	s->flags = 0;
	if (user)
		walk_copy(regs, stack, dyn, CP_SWITCH_STACK_COPY, s);
	s->gen = atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	sq_push(time, (pid_t)pid_tid[1], SWQ_STACK, 0, s);
}

static void on_sample(struct cp_perf_rec *r, int cpu)
{
	/* Beside a context-switch event, each sample leads with its
	 * event's id, and has its time after the thread. */
	if (E.ident && cp_switches_is_switch(&E.sw, cp_perf_u64(r))) {
		on_switch_sample(r);
		return;
	}
	uint32_t pid_tid[2];
	if (!cp_perf_take(r, pid_tid, sizeof pid_tid))
		return;
	if (E.ident)
		cp_perf_u64(r); /* its time */
	pid_t tid = (pid_t)pid_tid[1];
	uint64_t value = E.use_read ? cp_perf_u64(r) : 0;
	uint64_t kernel;
	uint64_t weight = weigh(tid, cpu, value, E.use_read, &kernel);
	struct tinfo *t = tinfo_get(tid);
	if (t)
		t->sampled_ns += weight + kernel;
	E.st.kernel_ns += kernel;

	uint64_t regs[CP_PERF_NREGS] = { 0 };
	const uint8_t *stack;
	uint64_t dyn;
	int user = cp_perf_take_user(r, regs, CP_PERF_NREGS, &stack, &dyn);
	if (user < 0)
		return;

	atomic_fetch_add_explicit(&cp_sig.samples, 1, memory_order_relaxed);
	struct cp_sample *s = cp_ring_claim(cp_sig.ring);
	if (!s) {
		atomic_fetch_add_explicit(&cp_sig.lost, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&cp_sig.lost_ns, weight, memory_order_relaxed);
		return;
	}
	int known = 1;
	if (!user) {
		s->n = 0; /* no user context (a kernel-only stretch): no stack */
		s->flags = 0;
	} else {
		known = walk_copy(regs, stack, dyn, STACK_COPY, s);
	}
	s->weight_ns = weight;
	s->tid = (uint32_t)tid;
	s->gen = atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	cp_sample_commit(s, !known);
}

static void on_record(const struct perf_event_header *h, int cpu, void *unused)
{
	const uint8_t *body = (const uint8_t *)(h + 1);
	struct cp_perf_rec r = { body, (const uint8_t *)h + h->size };
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(&r, cpu);
		break;
	case PERF_RECORD_LOST: {
		cp_perf_u64(&r); /* id */
		uint64_t n = cp_perf_u64(&r);
		E.st.lost += n;
		if (!E.use_read)
			E.st.lost_ns += (uint64_t)((double)(n * E.period) * E.ns_per_unit);
		break;
	}
	case PERF_RECORD_THROTTLE:
		E.st.throttled++;
		break;
	case PERF_RECORD_FORK: {
		uint32_t v[4]; /* pid, ppid, tid, ptid, then the time */
		if (cp_perf_take(&r, v, sizeof v) && v[0] == v[1]) {
			tinfo_get((pid_t)v[2]);
			cp_names_inherit((pid_t)v[2], (pid_t)v[3]);
			if (E.off_cpu)
				sq_push(cp_perf_u64(&r), (pid_t)v[2], SWQ_BEGIN, 0, NULL);
		}
		break;
	}
	case PERF_RECORD_SWITCH: {
		uint32_t v[2]; /* the sample_id: pid, tid, time */
		if (E.off_cpu && cp_perf_take(&r, v, sizeof v))
			sq_push(cp_perf_u64(&r), (pid_t)v[1], h->misc & PERF_RECORD_MISC_SWITCH_OUT ? SWQ_OUT : SWQ_IN,
				(h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0, NULL);
		break;
	}
	case PERF_RECORD_COMM: {
		uint32_t v[2]; /* pid, tid */
		if (cp_perf_take(&r, v, sizeof v)) {
			char name[16];
			size_t n = 0;
			while (n < sizeof name - 1 && r.p + n < r.end && r.p[n])
				n++;
			memcpy(name, r.p, n);
			name[n] = '\0';
			cp_names_set((pid_t)v[1], name);
		}
		break;
	}
	case PERF_RECORD_READ: {
		/* An inherited thread's final count on this CPU (inherit_stat). */
		uint32_t v[2];
		if (cp_perf_take(&r, v, sizeof v)) {
			uint64_t value = cp_perf_u64(&r);
			uint64_t tail = cp_perf_counts_tail(&E.counts, (pid_t)v[1], cpu, value);
			struct tinfo *t = tinfo_get((pid_t)v[1]);
			if (t) {
				t->tail_ns += (uint64_t)((double)tail * E.ns_per_unit);
				t->exited = 1;
			}
		}
		break;
	}
	case PERF_RECORD_EXIT: {
		uint32_t v[4]; /* pid, ppid, tid, ptid, then the time */
		if (!cp_perf_take(&r, v, sizeof v))
			break;
		struct tinfo *t = tinfo_get((pid_t)v[2]);
		if (t)
			t->exited = 1;
		if (E.off_cpu)
			sq_push(cp_perf_u64(&r), (pid_t)v[2], SWQ_END, 0, NULL);
		break;
	}
	}
}

/* The CPU clocks of the threads found at start, while they live: the last
 * reading is what each had used when it ended. */
static void read_original_clocks(void)
{
	for (size_t i = 0; i < E.capti; i++) {
		struct tinfo *t = &E.ti[i];
		if (t->tid && t->original && !t->exited && cp_thread_cpu_ns(t->tid, &t->seen_ns) < 0)
			t->exited = 1;
	}
}

static void note_end(pid_t tid, uint64_t cpu_ns)
{
	struct tinfo *t = tinfo_get(tid);
	if (t)
		t->end_ns = cpu_ns;
}

/* An ended inherited thread's CPU after its last sample: by its own clock
 * where it told it (the task clock counts a few percent less than the
 * scheduler for threads that sleep often), else by the task clock's
 * final count. */
static uint64_t ended_tail(const struct tinfo *t)
{
	uint64_t by_clock = t->end_ns > t->sampled_ns ? t->end_ns - t->sampled_ns : 0;
	return by_clock > t->tail_ns ? by_clock : t->tail_ns;
}

static int perf_drain(void)
{
	/* The time before the rings: every record older than it (less the
	 * slack) is in its ring by now, so none of them comes after the
	 * queue has handed on younger ones.  Taken after, a pass that took
	 * long (a table built, the keeper preempted between two rings) would
	 * hand on records that a ring drained early had not yet been given. */
	uint64_t now = cp_mono_ns();
	for (size_t i = 0; i < E.nrings; i++) {
		cp_perf_ring_drain(&E.rings[i], E.bounce, E.bounce_size, on_record, NULL);
		if (i == 0 && cp_test_perf_ring_pause_ms)
			nanosleep(&(struct timespec){ 0, cp_test_perf_ring_pause_ms * 1000000L }, NULL);
	}
	/* After the rings: a thread's samples are in before its end. */
	cp_threads_take_exit_clocks(note_end);
	read_original_clocks();
	if (E.off_cpu)
		sq_flush(now > ORDER_SLACK_NS ? now - ORDER_SLACK_NS : 0);
	return E.sleep_ms;
}

static int keeper_drain(void)
{
	return cp_test_read(cp_test_perf_stall) ? SLEEP_MIN_MS : perf_drain();
}

/* Thread tid's CPU in the profile, by what weighs its samples and its
 * tail (perf_stop); -1 if it is not known. */
static int64_t thread_cpu(void *arg, pid_t tid)
{
	for (size_t i = E.capti ? cp_hash64((unsigned)tid) & (E.capti - 1) : 0; E.capti && E.ti[i].tid;
	     i = (i + 1) & (E.capti - 1))
		if (E.ti[i].tid == tid)
			return (int64_t)(E.ti[i].sampled_ns + E.ti[i].tail_ns);
	return -1;
}

/* Off-CPU time at the stop: what is queued handed over, the intervals
 * under way ended at `end`, and every thread held to its lifetime. */
static void stop_off_cpu(uint64_t end)
{
	sq_flush(UINT64_MAX);
	cp_switches_finish(&E.sw, end);
	cp_switches_check(&E.sw, thread_cpu, NULL, 10000000, &E.st.acct);
	E.st.off_stackless = E.sw.stackless;
	E.st.off_unpaired = E.sw.unpaired;
}

/* What thread t's CPU clock says it used in the profile, into *used;
 * whether that is known. */
static int thread_used(const struct tinfo *t, uint64_t *used)
{
	*used = 0;
	if ((t->exited || t->end_ns) && !t->original) {
		*used = t->end_ns;
		return t->end_ns != 0;
	}
	if (t->original) {
		*used = t->seen_ns > t->cpu0_ns ? t->seen_ns - t->cpu0_ns : 0;
		return 1;
	}
	return !t->exited && cp_thread_cpu_ns(t->tid, used) == 0;
}

/* What perf_clock_factor answers, from the threads' clocks as they are:
 * each thread whose samples hold more than its clock says (the task clock,
 * or the cycle counter, ran on while the thread did not, its virtual CPU
 * taken away by the host), and all the threads whose clocks are known
 * together.  Returns what the samples hold beyond the clocks. */
static uint64_t make_scales(void)
{
	forget_scales();
	scales = calloc(E.nti ? E.nti : 1, sizeof *scales);
	double held = 0, clocked = 0;
	uint64_t ahead = 0;
	for (size_t i = 0; i < E.capti; i++) {
		const struct tinfo *t = &E.ti[i];
		uint64_t used;
		if (!t->tid || !thread_used(t, &used))
			continue;
		held += (double)t->sampled_ns;
		clocked += (double)(used < t->sampled_ns ? used : t->sampled_ns);
		if (used > 0 && t->sampled_ns > used && scales && nscales < E.nti) {
			scales[nscales++] = (struct clock_scale){ (uint32_t)t->tid, (double)used / (double)t->sampled_ns };
			ahead += t->sampled_ns - used;
		}
	}
	if (nscales)
		qsort(scales, nscales, sizeof *scales, by_tid);
	if (held > 0 && clocked < held)
		all_factor = clocked / held;
	return ahead;
}

static void perf_clocks_now(int on)
{
	if (on)
		make_scales();
	else
		forget_scales();
}

static void perf_stop(void)
{
	/* Closing disables every event and, with them, their inherited
	 * copies; what they wrote before is still in the rings. */
	for (size_t i = 0; i < E.nswfds; i++)
		ioctl(E.swfds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; i < E.nfds; i++)
		ioctl(E.fds[i], PERF_EVENT_IOC_DISABLE, 0);
	uint64_t end = cp_mono_ns();
	perf_drain();
	cp_threads_exit_clocks(0);
	for (size_t i = 0; i < E.capti; i++) {
		struct tinfo *t = &E.ti[i];
		if (!t->tid)
			continue;
		/* A thread still running: its CPU now is its end, as an ended
		 * one's (read once, for its tail and make_scales alike). */
		if (!t->original && !t->exited && !t->end_ns)
			cp_thread_cpu_ns(t->tid, &t->end_ns);
		uint64_t used;
		if (!t->original)
			t->tail_ns = ended_tail(t);
		else if (thread_used(t, &used))
			t->tail_ns = used > t->sampled_ns ? used - t->sampled_ns : 0;
	}
	E.st.ahead_ns += make_scales();
	uint64_t tails = 0, threads = 0;
	for (size_t i = 0; i < E.capti; i++) {
		tails += E.ti[i].tid ? E.ti[i].tail_ns : 0;
		threads += E.ti[i].tid != 0;
	}
	tails = unsampled_less_lost(tails);
	/* By the threads' clocks, what no sample stands for holds the
	 * switches' time no task clock counts (cp_perf_unseen) beside the
	 * true tails, which are at most a period per thread and CPU. */
	uint64_t most_tails = (uint64_t)((double)(threads * E.nrings * E.period) * E.ns_per_unit);
	struct rusage ru;
	if (E.k == &task_clock && tails > most_tails && getrusage(RUSAGE_SELF, &ru) == 0)
		E.st.wakeup_ns = cp_perf_unseen((int64_t)(tails - most_tails), ru.ru_nvcsw + ru.ru_nivcsw);
	E.st.unsampled_ns = tails - E.st.wakeup_ns;
	if (!E.use_read && !E.k->count_kernel)
		E.st.unsampled_what = UNSAMPLED_KERNEL;
	if (E.off_cpu)
		stop_off_cpu(end);
	struct cp_engine_stats keep = E.st;
	close_all();
	E.st = keep;
}

static void perf_stats(struct cp_engine_stats *s)
{
	*s = E.st;
	if (E.k && !E.k->count_kernel)
		s->user_only = 1;
	if (!E.use_read && E.k && !E.k->count_kernel)
		s->unsampled_what = UNSAMPLED_KERNEL;
	if (!E.ti)
		return;
	/* While running: the live threads' CPU since their last sample. */
	uint64_t un = 0;
	for (size_t i = 0; i < E.capti; i++) {
		const struct tinfo *t = &E.ti[i];
		if (!t->tid)
			continue;
		if (t->original || (!t->exited && !t->end_ns)) {
			uint64_t now = t->seen_ns, base = t->original ? t->cpu0_ns : 0;
			if (!t->exited)
				cp_thread_cpu_ns(t->tid, &now);
			uint64_t used = now > base ? now - base : 0;
			un += used > t->sampled_ns ? used - t->sampled_ns : 0;
		} else {
			un += ended_tail(t);
		}
	}
	s->unsampled_ns = unsampled_less_lost(un);
}

static void perf_forget(void)
{
	/* The rings are not mapped in a child (the kernel maps perf rings
	 * VM_DONTCOPY) and the events live in the keeper's descriptor
	 * table, which a child does not have: only our memory is left. */
	free(E.rings);
	free(E.fds);
	free(E.bounce);
	cp_perf_counts_free(&E.counts);
	free(E.ti);
	free_off_cpu();
	memset(&E, 0, sizeof E);
	forget_scales();
}

const struct cp_engine cp_engine_perf = {
	.name = CP_ENGINE_PERF,
	.signal_source = CP_SIG_NONE,
	.probe = perf_probe,
	.start = perf_start,
	.drain = keeper_drain,
	.stop = perf_stop,
	.clock_factor = perf_clock_factor,
	.clocks_now = perf_clocks_now,
	.stats = perf_stats,
	.forget = perf_forget,
};

const struct cp_engine cp_engine_hw = {
	.name = CP_ENGINE_HW,
	.signal_source = CP_SIG_NONE,
	.user_only = 1,
	.probe = hw_probe,
	.start = hw_start,
	.drain = keeper_drain,
	.stop = perf_stop,
	.clock_factor = perf_clock_factor,
	.clocks_now = perf_clocks_now,
	.stats = perf_stats,
	.forget = perf_forget,
};
