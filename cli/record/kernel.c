/*
 * kernel.c -- `cpuprof record` reading the kernel's rings (kernel.h): the
 * records, in time order.  The collector's other parts: kernel_tables.c,
 * kernel_open.c, kernel_end.c (kernel_int.h).
 *
 * Events.  One task-clock event per online CPU on CMD's process (or, when
 * attaching, per CPU on each thread of the processes), inherited by every
 * thread and process it makes; the first event of each CPU has the CPU's
 * ring mapped and the others write into it.  Each sample carries its
 * thread, time, CPU, the event's count (PERF_SAMPLE_READ with inherit,
 * Linux 6.12; elsewhere a sample weighs one period), the thread's user
 * registers and a 16 KiB copy of the top of its stack; the side records
 * (mmap2 with build IDs, comm with exec, fork, exit, and each inherited
 * thread's final count as it exits) come with the same thread, time and
 * CPU.  Timestamps are CLOCK_MONOTONIC.
 *
 * Order.  Records of different CPUs' rings are put in time order before
 * they are used: a sample must meet the mappings of the image it was
 * taken in (an exec on one CPU, the new program sampled on another).  Each
 * pass reads every ring into a queue and handles what is older than the
 * pass's start less a margin; the rest waits for the next pass.  A pass
 * reads the rings a batch at a time (about 1 MiB in all), handing on after
 * each what no ring can still hold older than: where record fell behind,
 * the rings hold up to 4 MiB a CPU, which the queue would otherwise copy
 * whole before handling any.
 *
 * Unwinding.  A process's executable mappings make its set of ranges
 * (src/sig/unwind_table.h), each pointing at its file's table: one per
 * file (path and build ID, or device and inode), built from the file on
 * disk the first time a walk needs it (src/unwind/file.c) and shared by
 * every process that maps the file.  The vDSO's table is built from ours.
 *
 * Off-CPU time (--off-cpu).  Beside each task clock, on the same task and
 * CPU and into the same ring, a context-switch event: a sample at every
 * switch-out, with the user registers and stack where the thread entered
 * the kernel, and the switch records (out, with PREEMPT if it was still
 * runnable, and in).  Its samples are taken in kernel mode, so it needs
 * root, CAP_PERFMON or perf_event_paranoid <= 1; without them record
 * says so and records CPU only.  Every sample starts with its event's id
 * (PERF_SAMPLE_IDENTIFIER: src/perf/records.h), which tells the two
 * events' samples apart, also after off-CPU time was given up with some
 * switch events already writing (their samples are then dropped).  In time order with everything else, each thread's
 * switch-outs are paired with its switch-ins (src/perf/switches.c) and
 * the intervals go into the images' stack tables, charged to the stack of
 * the switch-out.
 *
 * Kernel frames (--kernel).  Where the kernel allows samples in kernel
 * mode and shows kallsyms' addresses (kernel_open.c's kframes_begin and
 * kframes_refused say what refused them otherwise), the task clock's
 * samples also carry the kernel's callchain, its user part excluded: a
 * sample taken in a system call or a fault has those frames put leaf
 * first above the user stack unwound as always, and its weight is the
 * image's kframes_ns.  record_write.c names them from the kallsyms table
 * read at the start, one object [kernel.kallsyms] in every image.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "kernel_int.h"
#include "symbolize/jit.h"

/* ---- records ---- */

static void on_mmap2(struct cp_kcollector *k, const struct cp_perf_event *ev)
{
	struct cp_perf_rec rec = cp_perf_event_body(ev), *r = &rec;
	uint32_t pt[2];
	uint64_t addr, len, pgoff;
	if (!cp_perf_take(r, pt, sizeof pt) || !cp_perf_take(r, &addr, 8) || !cp_perf_take(r, &len, 8) ||
	    !cp_perf_take(r, &pgoff, 8))
		return;
	char build_id[2 * CP_ELF_BUILD_ID_MAX + 1] = "";
	uint64_t dev = 0, ino = 0;
	uint8_t ids[24];
	if (!cp_perf_take(r, ids, sizeof ids))
		return;
	if (ev->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		unsigned n = ids[0] <= 20 ? ids[0] : 20;
		for (unsigned i = 0; i < n; i++)
			snprintf(build_id + 2 * i, 3, "%02x", ids[4 + i]);
	} else {
		uint32_t maj, min;
		memcpy(&maj, ids, 4);
		memcpy(&min, ids + 4, 4);
		memcpy(&ino, ids + 8, 8);
		dev = (uint64_t)maj << 32 | min;
	}
	uint32_t prot_flags[2];
	if (!cp_perf_take(r, prot_flags, sizeof prot_flags) || !(prot_flags[0] & PROT_EXEC))
		return;
	char path[CP_SHM_PATH_MAX];
	cp_perf_take_name(r, path, sizeof path);
	struct kproc *p = kc_proc_get(k, (pid_t)pt[0]);
	if (!p)
		p = kc_proc_new(k, (pid_t)pt[0], NULL);
	if (p)
		kc_code_mapping(k, p, path, build_id, dev, ino, addr, addr + len, pgoff);
}

/* Process p maps `path` executable at [lo, hi) from offset pgoff.  A
 * jitdump is a JIT's mark for perf, not code; anonymous memory (the
 * kernel's "//anon", a memfd, a named anonymous mapping) is a JIT's code:
 * a range of its own, unwound by frame pointers, its names read from the
 * JIT's files (kernel_jit.c). */
void kc_code_mapping(struct cp_kcollector *k, struct kproc *p, const char *path, const char *build_id, uint64_t dev,
		     uint64_t ino, uint64_t lo, uint64_t hi, uint64_t pgoff)
{
	if (path[0] == '/' && cp_jit_is_dump_path(path)) {
		kc_jit_note(k, p, path);
		return;
	}
	if (cp_jit_is_anon_path(path)) {
		kc_jit_note(k, p, NULL);
		path = "//anon";
	} else if (path[0] != '/' && strcmp(path, "[vdso]") != 0) {
		return; /* [vsyscall], [uprobes]: no code of the program's */
	}
	size_t fi = kc_file_of(k, p->pid, path, build_id, dev, ino);
	if (fi != SIZE_MAX)
		kc_add_mapping(k, p, fi, lo, hi, pgoff);
}

static void on_comm(struct cp_kcollector *k, const struct cp_perf_event *ev)
{
	struct cp_perf_rec r = cp_perf_event_body(ev);
	char name[16];
	r.p += 2 * sizeof(uint32_t); /* pid, tid */
	cp_perf_take_name(&r, name, sizeof name);
	struct kproc *p = kc_proc_get(k, ev->pid);
	if (ev->misc & PERF_RECORD_MISC_COMM_EXEC) {
		if (!p)
			p = kc_proc_new(k, ev->pid, NULL);
		if (!p)
			return;
		/* The old program's JIT names are its image's. */
		kc_jit_read(k, p);
		kc_jit_end(k, p);
		/* The old program's mappings are gone with it. */
		p->nmaps = 0;
		free(p->set);
		p->set = NULL;
		kc_new_image(k, p, name);
		/* The command's first thread starts at its exec, as its
		 * events do (a thread known already is not started again). */
		if (k->off_cpu)
			cp_switches_begin(&k->sw, ev->tid, ev->time, 0);
	}
	if (p && p->img)
		kc_name_thread(p->img, ev->tid, name);
}

static void on_fork(struct cp_kcollector *k, const struct cp_perf_event *ev)
{
	struct kproc *parent = kc_proc_get(k, ev->ppid);
	if (ev->pid != ev->ppid) {
		k->sched_partial = 1; /* a new process: not among those -p counts */
		struct kproc *p = kc_proc_get(k, ev->pid);
		if (!p)
			p = kc_proc_new(k, ev->pid, parent);
		if (p) {
			p->start_time = ev->time;
			if (p->img && parent && parent->img)
				kc_name_thread(p->img, ev->tid, cp_image_thread_name(parent->img, ev->ptid));
		}
	} else if (parent && parent->img) {
		kc_name_thread(parent->img, ev->tid, cp_image_thread_name(parent->img, ev->ptid));
	}
	struct kthread *t = kc_thread_get(k, ev->tid, ev->pid);
	if (t) {
		struct kproc *p = kc_proc_get(k, ev->pid);
		t->img = p ? p->img : NULL;
		if (t->img)
			t->img->facts.armed++;
	}
	/* A new thread: it waits for a CPU until its first switch-in. */
	if (k->off_cpu)
		cp_switches_record(&k->sw, ev);
}

static void on_task_exit(struct cp_kcollector *k, const struct cp_perf_event *ev)
{
	if (k->off_cpu)
		cp_switches_record(&k->sw, ev);
	struct kthread *t = kc_thread_get(k, ev->tid, ev->pid);
	if (t)
		t->exited = 1;
	k->sched_partial = 1; /* its count is gone from the scheduler's */
	struct kproc *p = kc_proc_get(k, ev->pid);
	if (p && ev->pid == ev->tid) {
		p->exited = 1;
		/* Its JIT's files are whole now, and may soon be gone. */
		kc_jit_read(k, p);
	}
}

/* An inherited thread's final count on its CPU (inherit_stat). */
static void on_read(struct cp_kcollector *k, const struct cp_perf_event *ev)
{
	uint64_t tail = cp_perf_counts_tail(&k->counts, ev->tid, ev->cpu, ev->value);
	struct kthread *t = kc_thread_get(k, ev->tid, ev->pid);
	if (!t)
		return;
	t->exited = 1;
	t->tail_units += tail;
	t->got_read = 1;
	struct kproc *p = kc_proc_get(k, ev->pid);
	struct cp_image *m = t->img ? t->img : p ? p->img : NULL;
	if (m)
		m->facts.unsampled_ns += tail;
}

/* Walks sample s of process p into pcs; returns how many, *flags. */
static unsigned walk(struct cp_kcollector *k, struct kproc *p, const struct cp_perf_event *s, uintptr_t *pcs,
		     uint32_t *flags)
{
	*flags = 0;
	if (!s->user)
		return 0; /* no user context: a stretch in the kernel */
	struct cp_regs regs;
	CP_PERF_REGS(s->regs, &regs);
	/* A walk that wants the stack past a whole copy: the stack is deeper
	 * than the copy, and the stack is cut there. */
	int beyond = 0;
	uint64_t whole = s->is_switch ? CP_SWITCH_STACK_COPY : CP_PERF_STACK_COPY;
	struct cp_stackmem m = {
		.beyond = &beyond,
		.lo = regs.sp,
		.hi = regs.sp + s->len,
		.delta = (intptr_t)((uintptr_t)s->data - regs.sp),
		.copy = 1,
	};
	if (k->conf.unwind == CP_UNWIND_FP) {
		unsigned n = cp_unwind_fp(&regs, &m, pcs, k->conf.depth, flags);
		*flags |= beyond && s->len == whole ? CP_SAMPLE_TRUNCATED : 0;
		return n;
	}
	for (int again = 0;; again = 1) {
		struct cp_unwinder u = { .set = kc_proc_set(k, p), .cache = k->cache, .want = k->want };
		int truncated = 0, complete = 1;
		beyond = 0;
		unsigned n = cp_unwind_dwarf(&u, &regs, &m, k->conf.unwind == CP_UNWIND_AUTO, pcs, k->conf.depth,
					     &truncated, &complete);
		*flags = truncated || (beyond && s->len == whole) ? CP_SAMPLE_TRUNCATED : 0;
		if (complete || again || !kc_build_wanted(k))
			return n;
	}
}

/* The sample of a switch-out: its stack, which the thread's next
 * switch-in charges with the time in between (on_off). */
static void on_switch_sample(struct cp_kcollector *k, const struct cp_perf_event *s)
{
	struct kproc *p = kc_proc_get(k, (pid_t)s->pid);
	if (!k->off_cpu || !p || !p->img)
		return;
	struct kthread *t = kc_thread_get(k, (pid_t)s->tid, (pid_t)s->pid);
	if (t)
		t->img = p->img;
	uintptr_t pcs[1024];
	uint32_t flags;
	unsigned n = walk(k, p, s, pcs, &flags);
	cp_switches_out_stack(&k->sw, (pid_t)s->tid, s->time, pcs, n, flags, p->img, p->gen);
}

/* An off-CPU interval of thread tid (switches.h): into the stack table of
 * the image whose stack it is (ctx, its objects' generation in gen), or,
 * without a stack, of the thread's image. */
void kc_off_into_image(void *arg, void *ctx, uint64_t gen, pid_t tid, const uintptr_t *pcs, uint32_t n,
		   uint32_t stack_flags, uint32_t kind, uint64_t from, uint64_t ns)
{
	struct cp_kcollector *k = arg;
	struct cp_image *m = ctx;
	if (!m) {
		struct kthread *t = kc_pidmap_get(&k->threads, tid);
		struct kproc *p = t ? kc_proc_get(k, t->pid) : NULL;
		m = t && t->img ? t->img : p ? p->img : NULL;
		if (!m)
			return;
		p = kc_proc_get(k, m->pid);
		gen = p && p->img == m ? p->gen : m->epochs ? m->epochs[m->nepochs - 1].gen : 0;
	}
	struct cp_epoch *e = m->epochs ? cp_image_epoch_for(m, (uint32_t)gen) : NULL;
	if (!e || cp_stacktab_add_at(&e->tab, (uint32_t)tid, pcs, n, stack_flags | kind, ns, from) < 0)
		return;
	m->facts.off_ns += ns;
	m->facts.off_switches++;
	if (kind & CP_OFF_RUNNABLE)
		m->facts.runnable_ns += ns;
}

/* The kernel's frames of sample s (--kernel), leaf first, into pcs[max]:
 * its chain without the context markers; how many. */
static unsigned kernel_frames(const struct cp_perf_event *s, uintptr_t *pcs, unsigned max)
{
	unsigned n = 0;
	for (uint32_t i = 0; i < s->nchain && n < max; i++)
		if (s->chain[i] < (uint64_t)PERF_CONTEXT_MAX)
			pcs[n++] = (uintptr_t)s->chain[i];
	return n;
}

static void on_sample(struct cp_kcollector *k, const struct cp_perf_event *s)
{
	if (s->is_switch) {
		on_switch_sample(k, s);
		return;
	}
	if (k->off_cpu)
		cp_switches_sample(&k->sw, (pid_t)s->tid, s->time);
	uint64_t kernel = 0;
	uint64_t weight = cp_perf_counts_weigh(&k->counts, s->tid, s->cpu, s->value, k->use_read, k->period,
					       k->kernel ? NULL : &kernel);
	struct kproc *p = kc_proc_get(k, (pid_t)s->pid);
	if (!p)
		p = kc_proc_new(k, (pid_t)s->pid, NULL);
	if (!p || !p->img)
		return; /* before its exec: record's own child */
	p->img->facts.kernel_ns += kernel;
	struct kthread *t = kc_thread_get(k, (pid_t)s->tid, (pid_t)s->pid);
	if (t) {
		t->img = p->img;
		t->sampled_units += weight;
	}
	/* With --kernel, a sample taken in the kernel has its kernel frames
	 * above the user stack that entered it. */
	uintptr_t pcs[1024 + CP_PERF_KERNEL_CHAIN_MAX];
	uint32_t flags;
	unsigned nk = kernel_frames(s, pcs, CP_PERF_KERNEL_CHAIN_MAX);
	unsigned n = nk + walk(k, p, s, pcs + nk, &flags);
	if (nk)
		flags &= ~CP_STACK_LINK_REG; /* its leaf is the kernel's, not the user code's */
	struct cp_image *m = p->img;
	struct cp_epoch *e = m->epochs ? cp_image_epoch_for(m, p->gen) : NULL;
	if (!e || cp_stacktab_add_at(&e->tab, (uint32_t)s->tid, pcs, n, flags, weight, s->time) < 0) {
		m->dropped++;
		m->dropped_ns += weight;
		return;
	}
	m->samples++;
	m->sampled_ns += weight;
	if (nk)
		m->facts.kframes_ns += weight;
}

/* A record handed on in time order. */
void kc_handle(void *arg, const struct cp_perf_event *ev)
{
	struct cp_kcollector *k = arg;
	switch (ev->type) {
	case PERF_RECORD_SAMPLE: on_sample(k, ev); break;
	case PERF_RECORD_MMAP2: on_mmap2(k, ev); break;
	case PERF_RECORD_COMM: on_comm(k, ev); break;
	case PERF_RECORD_SWITCH:
		if (k->off_cpu)
			cp_switches_record(&k->sw, ev);
		break;
	case PERF_RECORD_FORK: on_fork(k, ev); break;
	case PERF_RECORD_EXIT: on_task_exit(k, ev); break;
	case PERF_RECORD_READ: on_read(k, ev); break;
	}
}

/* A ring's record: counted if it says what was lost, else queued. */
static void enqueue(const struct perf_event_header *h, int cpu, void *arg)
{
	struct cp_kcollector *k = arg;
	struct cp_perf_event ev;
	if (!cp_perf_decode_chain(h, cpu, k->use_read, k->kframes, &k->sw, &ev))
		return;
	if (ev.type == PERF_RECORD_LOST)
		k->lost += ev.lost;
	else if (ev.type == PERF_RECORD_THROTTLE)
		k->throttled++;
	else if (cp_perf_queue_push(&k->queue, &ev) < 0 && ev.type == PERF_RECORD_SAMPLE)
		k->lost++;
}

/* Reads every ring, and handles what is older than `until`: a batch of
 * records at a time, so that where record fell behind, the queue does not
 * hold a copy of everything the rings held (cp_perf_drain_ordered). */
void kc_drain(struct cp_kcollector *k, uint64_t until)
{
	struct cp_perf_drain d = { k->rings, k->marks, k->nrings, CP_PERF_DRAIN_BUDGET, k->bounce, k->bounce_size,
				   enqueue, k, &k->queue };
	cp_perf_drain_ordered(&d, until, kc_handle, k);
}

void cp_kernel_poll(struct cp_kcollector *k)
{
	uint64_t now = cp_mono_ns();
	kc_drain(k, now > CP_PERF_ORDER_SLACK_NS ? now - CP_PERF_ORDER_SLACK_NS : 0);
}
