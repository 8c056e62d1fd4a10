/*
 * kernel_window.c -- record's kernel collector (kernel.h) in windows, for
 * `record --every`: each window a whole profile of its own, held to the
 * kernel's clocks for that window alone, as kernel_end.c holds a whole
 * run's.
 *
 * The kernel's charge of a window is each process's CPU clock (the
 * scheduler's count of all its threads, ended ones too) at the window's
 * end less at its start: read at every cut, and as record reaps a process
 * (its clock is still there while it is a zombie).  A process that ended
 * within the window and was reaped by another (CMD's own children) left no
 * clock to read: its part is its events' own count, and the profile says
 * for how many processes it is (window_cpu=).  What the samples hold is
 * the task clocks' (kernel_end.c's kc_images_facts): the window's samples
 * and the part of the threads' CPU after their last sample that the
 * window's end brought (the events' count then, less what the samples had
 * accounted for, less what the window before had of that).
 *
 * Between windows, what grows with samples is emptied -- the stack tables
 * (their memory kept for the next window's), the images' counts -- and the
 * images that can take no more samples (their process ended, or exec'd
 * another program) are let go with their ended processes, whose pid may
 * come again; the processes that run on, their threads, the files and
 * their unwind tables, the rings stay.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel_int.h"

/* The CPU clock of process p now (the kernel's count of all its threads'
 * CPU, ended ones too), or -1 where it is gone. */
static int64_t process_clock(const struct kproc *p)
{
	clockid_t c;
	struct timespec ts;
	if (clock_getcpuclockid(p->pid, &c) != 0 || clock_gettime(c, &ts) != 0)
		return -1;
	/* A pid reaped before the read may be another process's by then. */
	if (p->pidfd >= 0 && syscall(SYS_pidfd_send_signal, p->pidfd, 0, NULL, 0) < 0 && errno == ESRCH)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Reads, for the cut being made, the clock and switches of each process
 * not read at it yet: its clock as it ended, if record read it then;
 * else, unless its end was seen, its clock now. */
static void read_clocks(struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (!p || p->clock_cut == k->cuts)
			continue;
		p->clock_cut = k->cuts;
		p->clock1 = p->clock_end >= 0 ? p->clock_end : p->exited ? -1 : process_clock(p);
		p->switches1 = p->clock_end >= 0 && p->switches_end >= 0 ? p->switches_end : p->switches0;
		if (p->clock1 >= 0 && p->clock_end < 0)
			kc_scheduler_cpu(&p->pid, 1, &p->switches1);
	}
}

void kc_window_clocks(struct cp_kcollector *k)
{
	k->cuts++;
	read_clocks(k);
}

/* The window's CPU by the kernel's clocks, and its context switches; the
 * images held to it (kc_hold). */
static void window_hold(struct cp_kcollector *k)
{
	int64_t cpu = 0, switches = 0;
	k->window_by_events = 0;
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (!p)
			continue;
		int64_t c0 = p->clock0 > 0 ? p->clock0 : 0;
		if (p->clock1 >= 0) {
			cpu += p->clock1 > c0 ? p->clock1 - c0 : 0;
			switches += p->switches1 > p->switches0 ? p->switches1 - p->switches0 : 0;
			continue;
		}
		/* Ended, its clock gone with it: its images' own count. */
		int64_t own = 0;
		for (size_t j = 0; j < k->tree.nimages; j++)
			if (k->tree.images[j]->pid == p->pid)
				own += k->tree.images[j]->facts.cpu_ns;
		cpu += own;
		k->window_by_events += own > 0;
	}
	k->window_cpu_ns = cpu;
	k->window_switches = switches;
	kc_hold(k, cpu, switches);
}

/* Whether process p has ended: its end was seen, its pidfd says all its
 * threads are gone, and it is not record's child waiting to be reaped
 * (record reads its clock and status then: its image is wanted until). */
static int ended(const struct kproc *p)
{
	struct pollfd q = { p->pidfd, POLLIN, 0 };
	siginfo_t si = { 0 };
	if (!p->exited || (p->pidfd >= 0 && poll(&q, 1, 0) != 1))
		return 0;
	return waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

/* Marks the images that can take no more samples once the records up to
 * the cut are in: their process exec'd another program (a later image
 * took over), or it ended (record reaped it, or it ended otherwise). */
static void mark_over(struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->tree.nimages; i++) {
		struct cp_image *m = k->tree.images[i];
		const struct kproc *p = kc_proc_get(k, m->pid);
		m->over = !p || p->img != m || m->have_status || ended(p);
	}
}

void cp_kernel_window_end(struct cp_kcollector *k)
{
	/* The events' count and the processes' clocks as the window ends,
	 * then every record before that moment: the processes the records
	 * brought are read after them. */
	int64_t counted = 0;
	for (size_t i = 0; i < k->fds.n; i++) {
		uint64_t v;
		if (read(k->fds.fd[i], &v, sizeof v) == (ssize_t)sizeof v)
			counted += (int64_t)v;
	}
	kc_window_clocks(k);
	uint64_t t = cp_mono_ns();
	kc_drain(k, t);
	read_clocks(k);
	k->tree.kernel = k->kframes ? &k->ksyms : NULL;
	k->mono1 = t;
	kc_images_facts(k, counted);
	kc_procs_ended(k);
	mark_over(k);
	window_hold(k);
}

void kc_window_last(struct cp_kcollector *k)
{
	read_clocks(k); /* the processes the last records brought */
	window_hold(k);
}

/* What image m's facts count within a window, emptied for the next. */
static void facts_clear(struct cp_facts *f)
{
	f->cpu_ns = 0;
	f->lost = f->lost_ns = f->throttled = 0;
	f->unsampled_ns = f->kernel_ns = f->kframes_ns = f->wakeup_ns = f->ahead_ns = 0;
	f->off_ns = f->runnable_ns = f->off_switches = f->off_stackless = f->off_unpaired = 0;
	memset(&f->acct, 0, sizeof f->acct);
}

/* Lets go of the images marked over, of the threads that had ended in
 * them and of their processes that ended (a pid that comes again is a new
 * process). */
static void retire(struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->threads.t.cap; i++) {
		struct kthread *t = kc_pidmap_slot(&k->threads, i);
		if (!t || !t->img || !t->img->over)
			continue;
		t->img = NULL;
		if (t->exited) {
			kc_pidmap_put(&k->threads, t->tid, NULL);
			free(t);
		}
	}
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (p && p->img && p->img->over) {
			kc_pidmap_put(&k->procs, p->pid, NULL);
			kc_proc_free(k, p);
		}
	}
	struct cp_tree *tr = &k->tree;
	size_t w = 0;
	for (size_t i = 0; i < tr->nimages; i++)
		if (tr->images[i]->over)
			cp_image_free(tr->images[i]);
		else
			tr->images[w++] = tr->images[i];
	tr->nimages = w;
}

void cp_kernel_window_start(struct cp_kcollector *k)
{
	if (!k->windows) {
		/* The first window: it began when the events were set up. */
		k->windows = 1;
		for (size_t i = 0; i < k->procs.t.cap; i++) {
			struct kproc *p = kc_pidmap_slot(&k->procs, i);
			if (p && (p->clock0 = process_clock(p)) >= 0)
				kc_scheduler_cpu(&p->pid, 1, &p->switches0);
		}
		return;
	}
	retire(k);
	for (size_t i = 0; i < k->tree.nimages; i++) {
		cp_image_clear_samples(k->tree.images[i]);
		facts_clear(&k->tree.images[i]->facts);
	}
	/* The next window starts where this one ended. */
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (!p)
			continue;
		p->clock0 = p->clock1;
		p->switches0 = p->switches1;
	}
	k->tail0 = k->tail1;
	k->wall0_ns += (int64_t)(k->mono1 - k->mono0);
	k->mono0 = k->mono1;
	k->lost = k->throttled = 0;
}

void cp_kernel_window_names(struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (p && p->img)
			kc_jit_read(k, p);
	}
}

int64_t cp_kernel_window_cpu_ns(const struct cp_kcollector *k, size_t *by_events)
{
	if (by_events)
		*by_events = k->window_by_events;
	return k->window_cpu_ns;
}

void cp_kernel_ending(struct cp_kcollector *k, pid_t pid)
{
	struct kproc *p = kc_proc_get(k, pid);
	if (k->windows && p && p->clock_end < 0)
		p->clock_end = process_clock(p);
}
