/*
 * kernel_end.c -- record's kernel collector (kernel.h): the end: the last
 * records, each image's off-CPU time and what its samples account for,
 * held to the kernel's clocks; freeing.
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

#include "commands.h"
#include "kernel_int.h"

/* ---- the end ---- */

struct image_check {
	struct cp_kcollector *k;
	const struct cp_image *m;
};

/* The CPU of thread tid of the image being checked, by the task clock:
 * its samples' weights and what it used after its last sample (by its
 * final counts where the kernel gave them, else by its switch records);
 * -1 for the threads of other images. */
static int64_t image_thread_cpu(void *arg, pid_t tid)
{
	const struct image_check *c = arg;
	const struct kthread *t = kc_pidmap_get(&c->k->threads, tid);
	if (!t || t->img != c->m)
		return -1;
	const struct cp_switch_thread *st = cp_switches_thread(&c->k->sw, tid);
	uint64_t tail = t->got_read ? t->tail_units : st ? st->run_after : 0;
	return (int64_t)(t->sampled_units + tail);
}

/* Image m's facts of off-CPU time: asked for or not, why it is absent,
 * and the truth check of its threads. */
static void image_off_cpu(struct cp_kcollector *k, struct cp_image *m)
{
	struct cp_facts *f = &m->facts;
	if (!k->conf.off_cpu)
		return;
	if (!k->off_cpu) {
		f->off_cpu = CP_OFF_CPU_ABSENT;
		snprintf(f->off_cpu_why, sizeof f->off_cpu_why, "%s", k->off_why);
		return;
	}
	f->off_cpu = CP_OFF_CPU_ON;
	if (m == k->tree.images[0]) {
		f->off_stackless = k->sw.stackless;
		f->off_unpaired = k->sw.unpaired;
	}
	struct image_check c = { k, m };
	cp_switches_check(&k->sw, image_thread_cpu, &c, 10000000, &f->acct);
}

/* Image m's facts of kernel frames: asked for or not, why they are
 * absent (their CPU, kframes_ns, came with the samples). */
static void image_kframes(const struct cp_kcollector *k, struct cp_image *m)
{
	struct cp_facts *f = &m->facts;
	if (!k->conf.kframes)
		return;
	f->kframes = k->kframes ? CP_KFRAMES_ON : CP_KFRAMES_ABSENT;
	if (!k->kframes)
		snprintf(f->kframes_why, sizeof f->kframes_why, "%s", k->kframes_why);
}

/* The switches' time no task clock counted (cp_perf_unseen), `unseen`
 * ns, shared by the images of tree t as their CPU is (`counted` in all):
 * the kernel does not say whose switches they were. */
static void share_unseen(struct cp_tree *t, double counted, uint64_t unseen)
{
	for (size_t i = 0; i < t->nimages && counted > 0; i++) {
		struct cp_facts *f = &t->images[i]->facts;
		f->wakeup_ns = (uint64_t)((double)unseen * (double)f->cpu_ns / counted + 0.5);
		f->cpu_ns += (int64_t)f->wakeup_ns;
	}
}

/* Image m's CPU by the task clock: its samples, kept or dropped, its
 * threads' tails and the periods that ended in the kernel. */
static int64_t image_counted_ns(const struct cp_image *m)
{
	return (int64_t)(m->sampled_ns + m->dropped_ns + m->facts.unsampled_ns + m->facts.kernel_ns);
}

/* Multiplies what image m's samples and counts hold by factor (at most
 * 1), its CPU then what they hold; returns the ns that took off. */
static uint64_t image_scale(struct cp_image *m, double factor)
{
	struct cp_facts *f = &m->facts;
	cp_image_scale(m, factor);
	f->unsampled_ns = (uint64_t)((double)f->unsampled_ns * factor + 0.5);
	f->kernel_ns = (uint64_t)((double)f->kernel_ns * factor + 0.5);
	f->kframes_ns = (uint64_t)((double)f->kframes_ns * factor + 0.5);
	int64_t before = f->cpu_ns;
	f->cpu_ns = image_counted_ns(m);
	return before > f->cpu_ns ? (uint64_t)(before - f->cpu_ns) : 0;
}

/* The images' CPU held to the kernel's charge cpu_ns (cp_kernel_hold_to),
 * with `switches` context switches for what no task clock counted. */
void kc_hold(struct cp_kcollector *k, int64_t cpu_ns, int64_t switches)
{
	struct cp_tree *t = &k->tree;
	double counted = 0;
	for (size_t i = 0; i < t->nimages; i++)
		counted += (double)t->images[i]->facts.cpu_ns;
	if (cpu_ns <= 0 || counted <= 0)
		return;
	/* Short of the kernel's charge: the switches' time no task clock
	 * counted. */
	if (counted < (double)cpu_ns) {
		share_unseen(t, counted, cp_perf_unseen(cpu_ns - (int64_t)counted, switches));
		return;
	}
	double factor = (double)cpu_ns / counted;
	for (size_t i = 0; i < t->nimages; i++)
		t->images[i]->facts.ahead_ns = image_scale(t->images[i], factor);
}

void kc_images_facts(struct cp_kcollector *k, int64_t counted)
{
	/* What the samples and the ended threads' final counts do not account
	 * for: the first task's CPU after its last sample (its event is not
	 * inherited: no final count comes as it ends), and what the threads
	 * still running used after theirs.  It goes to the first process's
	 * last image, in its [unsampled: ...] frame; with --every, less what
	 * the window before had of it (the samples of this one hold that). */
	k->tail1 = counted - (int64_t)cp_perf_counts_accounted(&k->counts);
	struct kproc *first = kc_proc_get(k, k->first);
	struct cp_image *to = first && first->img ? first->img : k->windows && k->tree.nimages ? k->tree.images[0] : NULL;
	if (to && k->tail1 > k->tail0)
		to->facts.unsampled_ns += (uint64_t)(k->tail1 - k->tail0);
	double held = 0;
	for (size_t i = 0; i < k->tree.nimages; i++) {
		struct cp_image *m = k->tree.images[i];
		struct cp_facts *f = &m->facts;
		f->cpu_ns = image_counted_ns(m);
		held += (double)f->cpu_ns;
		m->counted = 1;
		f->user_only = !k->kernel; /* its user time: the tree's rusage (record_write) */
		f->wall0_ns = k->wall0_ns;
		f->mono0_ns = (int64_t)k->mono0; /* its samples' times count from its start: a window's, with --every */
		f->duration_ns = (int64_t)(k->mono1 - k->mono0);
		f->unwind_tables = k->tables;
		f->unwind_bytes = k->table_bytes;
		f->unwind_cached = k->tables_cached;
		f->throttled = i == 0 ? k->throttled : 0;
		f->lost = i == 0 ? k->lost : 0;
		image_off_cpu(k, m);
		image_kframes(k, m);
		/* An exec that mapped nothing the events saw: the kernel took
		 * them away at a secure exec (setuid or setgid). */
		if (m->nobjs == 0 && !m->unprofiled)
			m->unprofiled = "it is setuid or setgid, and such programs are never profiled";
		size_t r = 0;
		for (size_t j = 0; j < k->nfiles && r < sizeof f->unwind_rejected / sizeof f->unwind_rejected[0]; j++)
			if (k->files[j]->rejected) {
				const char *base = strrchr(k->files[j]->path, '/');
				snprintf(f->unwind_rejected[r++], sizeof f->unwind_rejected[0], "%s: %s",
					 base ? base + 1 : k->files[j]->path, k->files[j]->why);
			}
	}
	/* A window whose samples hold more than its events counted: its first
	 * samples weighed CPU from before its start, which the window before
	 * had in its [unsampled: ...] frame.  Taken off them all alike. */
	double excess = (double)(k->tail0 - k->tail1);
	if (k->windows && excess > 0 && held > excess)
		for (size_t i = 0; i < k->tree.nimages; i++)
			image_scale(k->tree.images[i], (held - excess) / held);
}

void kc_procs_ended(struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (!p || !p->img)
			continue;
		struct pidfd_exit_info info = { .mask = CP_PIDFD_INFO_EXIT };
		if (p->pidfd >= 0 && ioctl(p->pidfd, CP_PIDFD_GET_INFO, &info) == 0 && (info.mask & CP_PIDFD_INFO_EXIT) &&
		    !p->img->have_status) {
			p->img->have_status = 1;
			p->img->status = info.exit_code;
		}
		if (p->exited || p->img->have_status)
			p->img->dead = 1;
	}
}

void cp_kernel_finish(struct cp_kcollector *k)
{
	/* Disabling an event disables its inherited copies; what they wrote
	 * stays in the rings.  Each event's count is then all its task and
	 * every task it was inherited by ran, ended or not.  With --every,
	 * the processes' clocks are read then too, the last window's end. */
	if (k->nattached)
		k->sched1 = kc_scheduler_cpu(k->attached, k->nattached, &k->switches1);
	if (k->windows)
		kc_window_clocks(k);
	cp_perf_fds_disable(&k->swfds);
	cp_perf_fds_disable(&k->fds);
	for (size_t i = 0; i < k->fds.n; i++) {
		uint64_t v;
		if (read(k->fds.fd[i], &v, sizeof v) == (ssize_t)sizeof v)
			k->counted_ns += (int64_t)v;
	}
	k->t_end = cp_mono_ns();
	kc_drain(k, UINT64_MAX);
	k->tree.kernel = k->kframes ? &k->ksyms : NULL;
	k->mono1 = cp_mono_ns();
	/* Threads off the CPU at the end are charged up to it. */
	if (k->off_cpu)
		cp_switches_finish(&k->sw, k->t_end);
	/* Each image's facts; how processes that nobody here reaped ended. */
	kc_images_facts(k, k->counted_ns);
	/* Attached: the scheduler's count of the window is the kernel's
	 * charge, where it has all of the window's CPU: no thread ended in it
	 * (an ended thread's count is gone) and no process began (it counts
	 * the processes attached to).  With --every, each window's is its
	 * processes' clocks (kc_window_last). */
	if (k->nattached && !k->sched_partial && !k->windows) {
		kc_hold(k, k->sched1 - k->sched0, k->switches1 - k->switches0);
		k->counted_ns = k->sched1 - k->sched0;
	}
	kc_procs_ended(k);
	/* Names of the JIT code of the processes still running, or whose
	 * exit came in no record. */
	for (size_t i = 0; i < k->procs.t.cap; i++) {
		struct kproc *p = kc_pidmap_slot(&k->procs, i);
		if (p && p->img)
			kc_jit_read(k, p);
	}
	if (k->windows)
		kc_window_last(k);
	cp_perf_fds_close(&k->fds, 0);
	cp_perf_fds_close(&k->swfds, 0);
	/* Code record could not read as it was mapped has no names and no
	 * frames above its own: say which, and why. */
	size_t said = 0, more = 0;
	for (size_t i = 0; i < k->nfiles; i++)
		if (k->files[i]->unreadable[0] && said++ < 4)
			fprintf(stderr, "cpuprof %s: no names or unwinding for %s: %s\n", cli_cmd, k->files[i]->path,
				k->files[i]->unreadable);
		else if (k->files[i]->unreadable[0])
			more++;
	if (more)
		fprintf(stderr, "cpuprof %s: ... and %zu more files it could not read\n", cli_cmd, more);
	/* And a JIT's map or dump it could not read (none there is no
	 * fault: most code is no JIT's). */
	for (size_t i = 0; i < k->njit_unread && i < sizeof k->jit_unread / sizeof k->jit_unread[0]; i++)
		fprintf(stderr, "cpuprof %s: no JIT names from %s\n", cli_cmd, k->jit_unread[i]);
	if (k->njit_unread > sizeof k->jit_unread / sizeof k->jit_unread[0])
		fprintf(stderr, "cpuprof %s: ... and %zu more JIT files it could not read\n", cli_cmd,
			k->njit_unread - sizeof k->jit_unread / sizeof k->jit_unread[0]);
}

void cp_kernel_hold_to(struct cp_kcollector *k, int64_t cpu_ns, int64_t switches)
{
	for (size_t i = 0; i < k->tree.nimages; i++)
		if (!k->tree.images[i]->dead && !k->tree.images[i]->have_status)
			return;
	kc_hold(k, cpu_ns, switches);
}

struct cp_tree *cp_kernel_tree(struct cp_kcollector *k)
{
	return &k->tree;
}

int64_t cp_kernel_counted_ns(const struct cp_kcollector *k)
{
	return k->counted_ns;
}

int64_t cp_kernel_scheduler_ns(const struct cp_kcollector *k)
{
	return k->sched1 - k->sched0;
}

uint64_t cp_kernel_lost(const struct cp_kcollector *k)
{
	return k->lost;
}

void cp_kernel_free(struct cp_kcollector *k)
{
	if (!k)
		return;
	cp_perf_fds_close(&k->fds, 1);
	cp_perf_fds_close(&k->swfds, 1);
	cp_switches_free(&k->sw);
	for (size_t i = 0; k->rings && i < k->nrings; i++)
		cp_perf_ring_unmap(&k->rings[i]);
	free(k->rings);
	cp_kallsyms_free(&k->ksyms);
	free(k->bounce);
	free(k->cache);
	for (size_t i = 0; i < k->nfiles; i++) {
		free(k->files[i]->path);
		free(k->files[i]->file);
		if (k->files[i]->fd >= 0)
			close(k->files[i]->fd);
		free(k->files[i]->tab);
		free(k->files[i]);
	}
	free(k->files);
	for (size_t i = 0; i < k->procs.t.cap; i++)
		if (kc_pidmap_slot(&k->procs, i))
			kc_proc_free(k, kc_pidmap_slot(&k->procs, i));
	cp_table_free(&k->procs.t);
	for (size_t i = 0; i < k->threads.t.cap; i++)
		free(kc_pidmap_slot(&k->threads, i));
	cp_table_free(&k->threads.t);
	cp_perf_counts_free(&k->counts);
	cp_perf_queue_free(&k->queue);
	free(k->marks);
	free(k->attached);
	cp_tree_free(&k->tree);
	free(k);
}
