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
 * without it the profile says why and holds CPU only.  Every sample leads
 * with its event's id and carries its time (CLOCK_MONOTONIC, as the
 * records do: src/perf/records.h), which tell the two events' samples
 * apart, also after off-CPU time was given up with some switch events
 * already writing.  The keeper walks each switch-out's stack at once, queues
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
#include "perf/records.h"
#include "perf/switches.h"
#include "engine.h"
#include "perf_int.h"
#include "profile/names.h"
#include "threads.h"
#include "unwind/tables.h"
#include "base/table.h"
#include "base/testhooks.h"
#include "sig/clock.h"

/* Data pages of each CPU's ring: room for RING_MS of samples at the rate
 * asked for (src/perf/events.h: at least 512 KiB, about 31 samples of 16
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
/* Off-CPU time: the keeper wakes at least this often (ms): a switch-out
 * is a sample too, as often as the program switches. */
#define OFF_CPU_SLEEP_MS 10
/* The frame of CPU no sample stands for, where periods that end in the
 * kernel raise no sample and are not charged to the next one. */
#define UNSAMPLED_KERNEL "[unsampled: in the kernel, or after each thread's last sample]"

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
	struct cp_perf_fds fds; /* every sampling event opened */
	size_t fd_budget;
	uint8_t *bounce;      /* a record that wraps around its ring */
	size_t bounce_size;
	struct cp_perf_counts counts; /* what each thread's samples accounted for, per CPU */
	struct cp_table threads; /* of struct tinfo, by tid */
	struct cp_engine_stats st;
	int sleep_ms;
	/* The task clock fires only at the kernel's tick here: a sample
	 * holds about a tick whatever the period, so the periods it holds
	 * beyond one do not say the thread was in the kernel. */
	int tick_bound;
	unsigned ring_pages;  /* asked for each ring */
	/* Off-CPU time: on, the context-switch events, the pairing, the
	 * queue of what it is handed in time order, a walk's scratch. */
	int off_cpu;
	struct cp_perf_fds swfds;
	struct cp_switches sw;
	struct cp_perf_queue sq;
	struct cp_sample *scratch;
	char off_why[384];
} eng; /* the running engine */

/* ---- per-thread and per-CPU accounting ---- */

static uint64_t tinfo_key(const void *e)
{
	return (uint64_t)(unsigned)((const struct tinfo *)e)->tid;
}

/* The i-th slot of the table of threads (tid 0: empty). */
static struct tinfo *tinfo_at(size_t i)
{
	return (struct tinfo *)eng.threads.e + i;
}

/* The entry of thread tid, or NULL. */
static struct tinfo *tinfo_find(pid_t tid)
{
	return tid > 0 ? cp_table_find(&eng.threads, (unsigned)tid) : NULL;
}

/* The entry of thread tid, made if new (counting it as armed); NULL if
 * out of memory. */
static struct tinfo *tinfo_get(pid_t tid)
{
	int made;
	struct tinfo *t = tid > 0 ? cp_table_get(&eng.threads, (unsigned)tid, &made) : NULL;
	if (t && made) {
		t->tid = tid;
		eng.st.armed++;
	}
	return t;
}

/* ---- opening ---- */

/* Opens the context-switch event of thread tid (0: the calling thread) on
 * cpu, writing into ring_fd's ring (-1: a probe, its own), and keeps it.
 * The fd or a negative errno. */
static int open_switch(pid_t tid, int cpu, int ring_fd)
{
	struct perf_event_attr a;
	cp_switches_attr(&a);
	a.inherit_thread = 1;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)CP_PERF_RING_PAGES_MAX * 4096u;
	int fd = cp_switches_open(&eng.sw, &a, tid, cpu, ring_fd);
	if (fd < 0 || ring_fd < 0)
		return fd;
	if (cp_perf_fds_keep(&eng.swfds, fd) < 0) {
		close(fd);
		return -ENOMEM;
	}
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
	cp_perf_fds_disable(&eng.swfds);
	eng.off_cpu = 0;
	eng.st.off_cpu = CP_OFF_CPU_ABSENT;
	snprintf(eng.off_why, sizeof eng.off_why, "the context-switch event could not be opened on thread %d: %s",
		 (int)tid, strerror(-fd));
	eng.st.off_cpu_why = eng.off_why;
}

/* Opens the events of thread tid on every CPU.  0 or a negative errno
 * (the thread is then not sampled; its events so far stay open). */
static int arm_thread(pid_t tid)
{
	if (eng.fds.n + eng.swfds.n + 2 * eng.nrings > eng.fd_budget)
		return -EMFILE;
	int armed = 0, err = 0;
	for (size_t i = 0; i < eng.nrings; i++) {
		struct cp_perf_ring *r = &eng.rings[i];
		int fd = cp_perf_open_event(eng.k, tid, r->cpu, eng.period, eng.k->count_kernel, 1, eng.use_read);
		if (fd < 0) {
			/* An offline CPU, or the thread is gone. */
			err = fd;
			continue;
		}
		int e = cp_perf_fds_keep(&eng.fds, fd);
		if (e == 0)
			e = cp_perf_ring_join(r, fd, &eng.ring_pages);
		if (e < 0) {
			cp_perf_fds_drop_last(&eng.fds, fd);
			close(fd);
			err = e;
			continue;
		}
		armed++;
		if (eng.off_cpu)
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
			if (*end || tid <= 0 || tid == eng.keeper)
				continue;
			if (tinfo_find((pid_t)tid))
				continue;
			found = 1;
			uint64_t cpu0 = 0;
			cp_thread_cpu_ns((pid_t)tid, &cpu0);
			/* Its life in the profile starts now, on the CPU or
			 * not: its first switch event says which. */
			if (eng.off_cpu)
				cp_switches_begin(&eng.sw, (pid_t)tid, cp_mono_ns(), 0);
			int e = arm_thread((pid_t)tid);
			if (e < 0) {
				eng.st.unarmed++;
				if (!eng.st.first_error)
					eng.st.first_error = e;
				/* Remembered, so that it is not tried again. */
				struct tinfo *t = tinfo_get((pid_t)tid);
				if (t) {
					t->exited = 1;
					eng.st.armed--;
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
	cp_perf_queue_free(&eng.sq);
	cp_perf_fds_close(&eng.swfds, 1);
	free(eng.scratch);
	cp_switches_free(&eng.sw);
	eng.scratch = NULL;
}

static void close_all(void)
{
	for (size_t i = 0; i < eng.nrings; i++)
		cp_perf_ring_unmap(&eng.rings[i]);
	cp_perf_fds_close(&eng.fds, 1);
	free_off_cpu();
	free(eng.rings);
	free(eng.bounce);
	cp_perf_counts_free(&eng.counts);
	cp_table_free(&eng.threads);
	eng.rings = NULL;
	eng.bounce = NULL;
	eng.nrings = 0;
}

/* ---- off-CPU time ---- */

/* An off-CPU interval of thread tid (switches.h) into cp_sig.ring: a
 * sample of its switch-out's stack (objects of generation gen) that
 * weighs the time off the CPU. */
static void off_into_ring(void *arg, void *ctx, uint64_t gen, pid_t tid, const uintptr_t *pcs, uint32_t n,
		   uint32_t stack_flags, uint32_t kind, uint64_t from, uint64_t ns)
{
	struct cp_sample *s = cp_ring_claim(cp_sig.ring);
	if (!s) {
		eng.st.off_lost++;
		return;
	}
	if (n > cp_sig.max_depth)
		n = cp_sig.max_depth;
	if (n)
		memcpy(s->pcs, pcs, n * sizeof *pcs);
	s->n = (uint16_t)n;
	s->flags = (uint16_t)(stack_flags | kind);
	s->weight_ns = ns;
	s->time = from;
	s->tid = (uint32_t)tid;
	s->gen = gen ? (uint32_t)gen : atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	cp_sample_commit(s, 0);
}

/* Whether the kernel lets this process sample switch-outs (a probe on
 * the calling thread): off-CPU time on, or absent and why. */
static void start_off_cpu(void)
{
	int fd = open_switch(0, eng.rings[0].cpu, -1);
	if (fd < 0) {
		eng.st.off_cpu = CP_OFF_CPU_ABSENT;
		cp_switches_refused(fd, eng.off_why, sizeof eng.off_why);
		eng.st.off_cpu_why = eng.off_why;
		return;
	}
	close(fd);
	eng.scratch = malloc(sizeof *eng.scratch + (size_t)cp_sig.max_depth * sizeof(uintptr_t));
	if (!eng.scratch) {
		eng.st.off_cpu = CP_OFF_CPU_ABSENT;
		eng.st.off_cpu_why = "out of memory";
		return;
	}
	cp_switches_init(&eng.sw, off_into_ring, NULL);
	eng.off_cpu = 1;
	eng.st.off_cpu = CP_OFF_CPU_ON;
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
	memset(&eng, 0, sizeof eng);
	eng.threads = (struct cp_table){ .size = sizeof(struct tinfo), .key_of = tinfo_key };
	eng.k = k;
	eng.keeper = c->keeper_tid;
	eng.ns_per_unit = 1.0 / k->units_per_ns;
	eng.period = (uint64_t)((double)c->period_ns * k->units_per_ns);
	if (k->type == PERF_TYPE_HARDWARE && eng.period < MIN_PERIOD_CYCLES)
		eng.period = MIN_PERIOD_CYCLES;
	if (eng.period == 0)
		eng.period = 1;
	struct timespec res;
	eng.tick_bound = clock_getres(CLOCK_MONOTONIC, &res) == 0 && (res.tv_sec > 0 || res.tv_nsec > 1000000);
	eng.bounce_size = CP_PERF_STACK_COPY + 4096;
	struct rlimit rl;
	eng.fd_budget = 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 > 256)
		eng.fd_budget = rl.rlim_cur / 2;
	if (!(eng.bounce = malloc(eng.bounce_size)) || cp_perf_rings(&eng.rings, &eng.nrings) < 0) {
		close_all();
		return -ENOMEM;
	}
	if (c->off_cpu)
		start_off_cpu();
	/* PERF_SAMPLE_READ with inherit, where the kernel has it. */
	int fd = cp_perf_open_event(k, 0, eng.rings[0].cpu, eng.period, k->count_kernel, 1, 1);
	eng.use_read = fd >= 0 && !cp_test_perf_no_read;
	if (fd >= 0)
		close(fd);
	uint64_t hz = c->period_ns ? 1000000000u / c->period_ns : 1000;
	uint64_t want = (hz * RING_MS / 1000 * (CP_PERF_STACK_COPY + 256) + 4095) / 4096;
	if (eng.off_cpu)
		want = CP_PERF_RING_PAGES_MAX; /* a sample per switch-out, too */
	eng.ring_pages = cp_perf_ring_pages(eng.nrings, want > UINT32_MAX ? UINT32_MAX : (unsigned)want);
	cp_threads_exit_clocks(1); /* before the events: no thread made after them is missed */
	arm_all();
	if (eng.st.armed == 0) {
		int e = eng.st.first_error ? eng.st.first_error : -ENODEV;
		cp_threads_exit_clocks(0);
		close_all();
		return e;
	}
	/* One CPU's ring fills at most at HZ samples a second: sleep for
	 * half the time the smallest takes to fill. */
	uint64_t least = UINT64_MAX;
	for (size_t i = 0; i < eng.nrings; i++)
		if (eng.rings[i].page && eng.rings[i].size < least)
			least = eng.rings[i].size;
	uint64_t per_ring = least / (CP_PERF_STACK_COPY + 256);
	uint64_t ms = hz ? per_ring * 1000u / (2 * hz) : SLEEP_MAX_MS;
	eng.sleep_ms = ms < SLEEP_MIN_MS ? SLEEP_MIN_MS : ms > SLEEP_MAX_MS ? SLEEP_MAX_MS : (int)ms;
	if (eng.off_cpu && eng.sleep_ms > OFF_CPU_SLEEP_MS)
		eng.sleep_ms = OFF_CPU_SLEEP_MS;
	return 0;
}

static int perf_start(const struct cp_engine_conf *c)
{
	return start_kind(&cp_perf_task_clock, c);
}

static int hw_start(const struct cp_engine_conf *c)
{
	return start_kind(&cp_perf_cycles, c);
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
	return unsampled > eng.st.lost_ns ? unsampled - eng.st.lost_ns : 0;
}

/* The time since a thread's previous sample on cpu, in ns, from the
 * count `value` (or one period); accounts for it.  A task clock without
 * kernel-mode samples: the periods that ended in the kernel are not the
 * sample's, but *kernel_ns. */
static uint64_t weigh(pid_t tid, int cpu, uint64_t value, int have_value, uint64_t *kernel_ns)
{
	uint64_t kernel = 0;
	int user_only = eng.k == &cp_perf_task_clock && !eng.k->count_kernel && !eng.tick_bound;
	uint64_t units = cp_perf_counts_weigh(&eng.counts, tid, cpu, value, have_value, eng.period,
					      user_only ? &kernel : NULL);
	*kernel_ns = (uint64_t)((double)kernel * eng.ns_per_unit);
	return (uint64_t)((double)units * eng.ns_per_unit);
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
 * copy is in the ring, and queued (the walk as its data) with the switch
 * records. */
static void queue_switch_out(const struct cp_perf_event *ev)
{
	struct cp_sample *s = eng.scratch;
	s->n = 0;
	s->flags = 0;
	if (ev->user)
		walk_copy(ev->regs, ev->data, ev->len, CP_SWITCH_STACK_COPY, s);
	s->gen = atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	struct cp_perf_event q = *ev;
	q.data = s;
	q.len = sizeof *s + s->n * sizeof s->pcs[0];
	cp_perf_queue_push(&eng.sq, &q);
}

/* An off-CPU event handed on in time order: a switch-out's walk, or a
 * record of a thread's life or switches. */
static void off_cpu_event(void *arg, const struct cp_perf_event *ev)
{
	(void)arg;
	if (ev->type != PERF_RECORD_SAMPLE) {
		cp_switches_record(&eng.sw, ev);
		return;
	}
	const struct cp_sample *w = ev->data;
	cp_switches_out_stack(&eng.sw, ev->tid, ev->time, w->pcs, w->n, w->flags, NULL, w->gen);
}

static void sample_into_ring(const struct cp_perf_event *ev)
{
	if (ev->is_switch) {
		queue_switch_out(ev);
		return;
	}
	uint64_t kernel;
	uint64_t weight = weigh(ev->tid, ev->cpu, ev->value, eng.use_read, &kernel);
	struct tinfo *t = tinfo_get(ev->tid);
	if (t)
		t->sampled_ns += weight + kernel;
	eng.st.kernel_ns += kernel;

	atomic_fetch_add_explicit(&cp_sig.samples, 1, memory_order_relaxed);
	struct cp_sample *s = cp_ring_claim(cp_sig.ring);
	if (!s) {
		atomic_fetch_add_explicit(&cp_sig.lost, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&cp_sig.lost_ns, weight, memory_order_relaxed);
		return;
	}
	int known = 1;
	if (!ev->user) {
		s->n = 0; /* no user context (a kernel-only stretch): no stack */
		s->flags = 0;
	} else {
		known = walk_copy(ev->regs, ev->data, ev->len, CP_PERF_STACK_COPY, s);
	}
	s->weight_ns = weight;
	s->time = ev->time;
	s->tid = (uint32_t)ev->tid;
	s->gen = atomic_load_explicit(&cp_sig.objgen, memory_order_relaxed);
	cp_sample_commit(s, !known);
}

/* An inherited thread's final count on this CPU (inherit_stat). */
static void on_read(const struct cp_perf_event *ev)
{
	uint64_t tail = cp_perf_counts_tail(&eng.counts, ev->tid, ev->cpu, ev->value);
	struct tinfo *t = tinfo_get(ev->tid);
	if (t) {
		t->tail_ns += (uint64_t)((double)tail * eng.ns_per_unit);
		t->exited = 1;
	}
}

/* A record, as the ring hands it: samples at once (their stacks are in
 * the ring), off-CPU time's records queued for time order. */
static void on_record(const struct perf_event_header *h, int cpu, void *unused)
{
	(void)unused;
	struct cp_perf_event ev;
	if (!cp_perf_decode(h, cpu, eng.use_read, &eng.sw, &ev))
		return;
	switch (ev.type) {
	case PERF_RECORD_SAMPLE:
		if (!ev.is_switch || eng.off_cpu)
			sample_into_ring(&ev);
		break;
	case PERF_RECORD_LOST:
		eng.st.lost += ev.lost;
		if (!eng.use_read)
			eng.st.lost_ns += (uint64_t)((double)(ev.lost * eng.period) * eng.ns_per_unit);
		break;
	case PERF_RECORD_THROTTLE:
		eng.st.throttled++;
		break;
	case PERF_RECORD_FORK:
		if (ev.pid != ev.ppid)
			break; /* a process: its threads have no events of ours */
		tinfo_get(ev.tid);
		cp_names_inherit(ev.tid, ev.ptid);
		if (eng.off_cpu)
			cp_perf_queue_push(&eng.sq, &ev);
		break;
	case PERF_RECORD_SWITCH:
		if (eng.off_cpu)
			cp_perf_queue_push(&eng.sq, &ev);
		break;
	case PERF_RECORD_COMM: {
		struct cp_perf_rec r = cp_perf_event_body(&ev);
		char name[16];
		r.p += 2 * sizeof(uint32_t); /* pid, tid */
		cp_perf_take_name(&r, name, sizeof name);
		cp_names_set(ev.tid, name);
		break;
	}
	case PERF_RECORD_READ:
		on_read(&ev);
		break;
	case PERF_RECORD_EXIT: {
		struct tinfo *t = tinfo_get(ev.tid);
		if (t)
			t->exited = 1;
		if (eng.off_cpu)
			cp_perf_queue_push(&eng.sq, &ev);
		break;
	}
	}
}

/* The CPU clocks of the threads found at start, while they live: the last
 * reading is what each had used when it ended. */
static void read_original_clocks(void)
{
	for (size_t i = 0; i < eng.threads.cap; i++) {
		struct tinfo *t = tinfo_at(i);
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
	for (size_t i = 0; i < eng.nrings; i++) {
		cp_perf_ring_drain(&eng.rings[i], eng.bounce, eng.bounce_size, on_record, NULL);
		if (i == 0 && cp_test_perf_ring_pause_ms)
			nanosleep(&(struct timespec){ 0, cp_test_perf_ring_pause_ms * 1000000L }, NULL);
	}
	/* After the rings: a thread's samples are in before its end. */
	cp_threads_take_exit_clocks(note_end);
	read_original_clocks();
	if (eng.off_cpu)
		cp_perf_queue_flush(&eng.sq, now > CP_PERF_ORDER_SLACK_NS ? now - CP_PERF_ORDER_SLACK_NS : 0,
				    off_cpu_event, NULL);
	return eng.sleep_ms;
}

static int keeper_drain(void)
{
	return cp_test_read(cp_test_perf_stall) ? SLEEP_MIN_MS : perf_drain();
}

/* Thread tid's CPU in the profile, by what weighs its samples and its
 * tail (perf_stop); -1 if it is not known. */
static int64_t sampled_cpu(void *arg, pid_t tid)
{
	const struct tinfo *t = tinfo_find(tid);
	return t ? (int64_t)(t->sampled_ns + t->tail_ns) : -1;
}

/* Off-CPU time at the stop: what is queued handed over, the intervals
 * under way ended at `end`, and every thread held to its lifetime. */
static void stop_off_cpu(uint64_t end)
{
	cp_perf_queue_flush(&eng.sq, UINT64_MAX, off_cpu_event, NULL);
	cp_switches_finish(&eng.sw, end);
	cp_switches_check(&eng.sw, sampled_cpu, NULL, 10000000, &eng.st.acct);
	eng.st.off_stackless = eng.sw.stackless;
	eng.st.off_unpaired = eng.sw.unpaired;
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
	scales = calloc(eng.threads.n ? eng.threads.n : 1, sizeof *scales);
	double held = 0, clocked = 0;
	uint64_t ahead = 0;
	for (size_t i = 0; i < eng.threads.cap; i++) {
		const struct tinfo *t = tinfo_at(i);
		uint64_t used;
		if (!t->tid || !thread_used(t, &used))
			continue;
		held += (double)t->sampled_ns;
		clocked += (double)(used < t->sampled_ns ? used : t->sampled_ns);
		if (used > 0 && t->sampled_ns > used && scales && nscales < eng.threads.n) {
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
	cp_perf_fds_disable(&eng.swfds);
	cp_perf_fds_disable(&eng.fds);
	uint64_t end = cp_mono_ns();
	perf_drain();
	cp_threads_exit_clocks(0);
	for (size_t i = 0; i < eng.threads.cap; i++) {
		struct tinfo *t = tinfo_at(i);
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
	eng.st.ahead_ns += make_scales();
	uint64_t tails = 0, threads = 0;
	for (size_t i = 0; i < eng.threads.cap; i++) {
		tails += tinfo_at(i)->tid ? tinfo_at(i)->tail_ns : 0;
		threads += tinfo_at(i)->tid != 0;
	}
	tails = unsampled_less_lost(tails);
	/* By the threads' clocks, what no sample stands for holds the
	 * switches' time no task clock counts (cp_perf_unseen) beside the
	 * true tails, which are at most a period per thread and CPU. */
	uint64_t most_tails = (uint64_t)((double)(threads * eng.nrings * eng.period) * eng.ns_per_unit);
	struct rusage ru;
	if (eng.k == &cp_perf_task_clock && tails > most_tails && getrusage(RUSAGE_SELF, &ru) == 0)
		eng.st.wakeup_ns = cp_perf_unseen((int64_t)(tails - most_tails), ru.ru_nvcsw + ru.ru_nivcsw);
	eng.st.unsampled_ns = tails - eng.st.wakeup_ns;
	if (!eng.use_read && !eng.k->count_kernel)
		eng.st.unsampled_what = UNSAMPLED_KERNEL;
	if (eng.off_cpu)
		stop_off_cpu(end);
	struct cp_engine_stats keep = eng.st;
	close_all();
	eng.st = keep;
}

static void perf_stats(struct cp_engine_stats *s)
{
	*s = eng.st;
	if (eng.k && !eng.k->count_kernel)
		s->user_only = 1;
	if (!eng.use_read && eng.k && !eng.k->count_kernel)
		s->unsampled_what = UNSAMPLED_KERNEL;
	if (!eng.threads.e)
		return;
	/* While running: the live threads' CPU since their last sample. */
	uint64_t un = 0;
	for (size_t i = 0; i < eng.threads.cap; i++) {
		const struct tinfo *t = tinfo_at(i);
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
	free(eng.rings);
	eng.fds.n = eng.swfds.n = 0; /* forgotten, not closed */
	cp_perf_fds_close(&eng.fds, 1);
	free(eng.bounce);
	cp_perf_counts_free(&eng.counts);
	cp_table_free(&eng.threads);
	free_off_cpu();
	memset(&eng, 0, sizeof eng);
	forget_scales();
}

const struct cp_engine cp_engine_perf = {
	.name = CP_ENGINE_PERF,
	.signal_source = CP_SIG_NONE,
	.probe = cp_perf_probe,
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
	.probe = cp_hw_probe,
	.start = hw_start,
	.drain = keeper_drain,
	.stop = perf_stop,
	.clock_factor = perf_clock_factor,
	.clocks_now = perf_clocks_now,
	.stats = perf_stats,
	.forget = perf_forget,
};
