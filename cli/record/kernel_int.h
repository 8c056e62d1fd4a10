/*
 * kernel_int.h -- the inside of record's kernel collector (kernel.h), shared
 * by its files: kernel.c (the records, in time order), kernel_tables.c
 * (files, processes, images and threads), kernel_open.c (opening the events
 * and attaching to running processes), kernel_end.c (the end: what each
 * image's samples account for, held to the kernel's clocks), kernel_jit.c
 * (JITs' names) and kernel_window.c (the same for each window of record
 * --every).
 */
#ifndef CPUPROF_RECORD_KERNEL_INT_H
#define CPUPROF_RECORD_KERNEL_INT_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "base/table.h"
#include "base/array.h"
#include "base/elf.h"
#include "kernel.h"
#include "perf/events.h"
#include "perf/records.h"
#include "perf/switches.h"
#include "profile/options.h"
#include "sig/clock.h"
#include "sig/sigstate.h"
#include "symbolize/kallsyms.h"
#include "unwind/file.h"

/* Each CPU's ring holds this long of samples at the rate asked for (as
 * far as the locked-memory limits allow); the reader wakes a quarter full. */
#define RING_MS 250
/* The most file descriptors record keeps for processes' exit statuses. */
#define MAX_PIDFDS 4096
/* ... and for JITs' files (kernel_jit.c). */
#define MAX_JIT_FDS 4096
/* ... and for files read through another root than ours (a container's). */
#define MAX_ROOT_FDS 4096

/* pidfd's PIDFD_GET_INFO (Linux 6.13) and its exit status (6.15), which
 * Debian 12's headers lack. */
struct pidfd_exit_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
#define CP_PIDFD_GET_INFO _IOWR(0xFF, 11, struct pidfd_exit_info)
#define CP_PIDFD_INFO_EXIT (1ull << 3)

/* One file mapped for its code somewhere in the tree. */
struct kfile {
	char *path;                   /* as the process that mapped it names it */
	char *file;                   /* where record reads it, if not path: through the process's root
	                                 (a container's, a chroot's), /proc/self/fd/<fd> of `fd` */
	int fd;                       /* kept open for `file`, or -1 */
	char unreadable[160];         /* why it cannot be read as what was mapped, or "" */
	char build_id[2 * CP_ELF_BUILD_ID_MAX + 1]; /* from the kernel, or "" */
	uint64_t dev, ino;            /* when the kernel gave no build ID */
	int vdso;
	int anon;                     /* no file: a JIT's code ("//anon", as kc_code_mapping names it) */
	int headers;                  /* 0: not read; 1: read; -1: unreadable */
	struct cp_elf_seg loads[CP_ELF_MAX_SEGS];
	size_t nloads;
	int state;                    /* enum cp_urange_state */
	struct cp_utab *tab;
	size_t tab_bytes;
	int rejected;                 /* its .eh_frame was malformed: why */
	char why[160];
};

/* An executable mapping of a process. */
struct kmap {
	uint64_t lo, hi, pgoff, bias;
	uint32_t file;
	int bias_known;
};

struct kproc {
	pid_t pid;
	struct cp_image *img;         /* its current image; NULL before its first exec */
	struct kmap *maps;            /* sorted by lo, disjoint */
	size_t nmaps, capmaps;
	struct cp_unwind_set *set;    /* from maps; NULL when they changed */
	uint32_t gen;                 /* its objects' generation */
	int pidfd;                    /* for its exit status, or -1 */
	int exited;
	uint64_t start_time;
	/* Its JIT (kernel_jit.c): seen (anonymous code or a jitdump mapped),
	 * its names read; its /tmp and the jitdump it mapped, open (or -1);
	 * its PID in its own namespace. */
	int jit, jit_read;
	int jit_tmp, jit_dump;
	int jit_fds;                  /* how many of the two are open */
	pid_t jit_nspid;
	int64_t jit_not_before;       /* when it started (cp_jit_not_before) */
	int jit_owner_known;          /* its user (cp_jit_owner): its files' owner or root */
	uid_t jit_owner;
	/* --every (kernel_window.c): its CPU clock (the kernel's count of all
	 * its threads, ended ones too) at the window's start (-1: it began in
	 * the window, from 0), at its end, read at cut `clock_cut` (-1: it
	 * could not be: gone), and as it ended, read by record before reaping
	 * it (-1: not read); its live threads' context switches at both ends,
	 * and all its threads' as record reaped it (its rusage; -1: none). */
	int64_t clock0, clock1, clock_end;
	int64_t switches0, switches1, switches_end;
	uint64_t clock_cut;
};

struct kthread {
	pid_t tid, pid;
	uint64_t sampled_units;
	uint64_t tail_units;          /* after its last sample, by its final counts (inherited threads) */
	int got_read;                 /* a final count came */
	struct cp_image *img;         /* the image of its last record */
	int exited;
};

/* A pid-keyed open-addressing table of pointers. */
struct pidmap {
	struct cp_table t; /* of struct pidmap_e; all zero to start */
};
struct pidmap_e {
	uint64_t key;      /* the pid */
	void *val;
};

struct cp_kcollector {
	struct cp_kernel_conf conf;
	struct cp_tree tree;
	uint64_t period;              /* ns of task clock */
	int use_read, build_id;       /* what the kernel takes (open_one) */
	int kernel;                   /* samples are taken in kernel mode too (open_one) */
	/* --kernel: the samples carry the kernel's chain (open_one), named
	 * from ksyms; or why not. */
	int kframes;
	char kframes_why[256];
	struct cp_kallsyms ksyms;
	struct cp_perf_ring *rings;
	size_t nrings;
	unsigned ring_pages;
	struct cp_perf_fds fds;
	uint8_t *bounce;
	size_t bounce_size;
	struct kfile **files;
	size_t nfiles, capfiles;
	struct pidmap procs, threads;
	struct cp_perf_counts counts;
	_Atomic uint64_t want[CP_UNWIND_WANT_WORDS];
	struct cp_ucache *cache;
	uint64_t set_gen;
	struct cp_perf_queue queue;   /* the records in time order */
	struct cp_perf_mark *marks;   /* each ring's, during a drain (nrings, made with them) */
	uint64_t lost, throttled;
	int64_t wall0_ns;
	uint64_t mono0, mono1;
	int npidfds, njitfds, nrootfds;
	/* Why JITs' files could not be read (the first few), and how many
	 * were not: said at the end, as unreadable files are. */
	char jit_unread[4][224];
	size_t njit_unread;
	pid_t first;                  /* the command's process, or the first attached to */
	int64_t sched0, sched1;       /* -p: the scheduler's count of their live threads' CPU, at both ends */
	int64_t switches0, switches1; /* ... and their context switches */
	int sched_partial;            /* -p: the scheduler's count misses some of the window's CPU (a thread
	                                 ended in it, or a new process began) */
	pid_t *attached;              /* -p: the processes attached to */
	size_t nattached;
	int64_t counted_ns;
	uint64_t tables, table_bytes, tables_cached;
	struct cp_facts base;         /* what every image's facts start as */
	/* Our own vDSO, where another process's is the same image. */
	uintptr_t vdso_lo, vdso_hi;
	char vdso_build_id[2 * CP_ELF_BUILD_ID_MAX + 1];
	/* Off-CPU time: asked for and opened (off_cpu), or why not. */
	int off_cpu;
	char off_why[384];
	struct cp_switches sw;
	struct cp_perf_fds swfds;     /* the context-switch events */
	uint64_t t_end;               /* when the events were disabled */
	/* --every (kernel_window.c): windows on; the windows ended so far;
	 * the task clocks' CPU no sample accounted for, at the window's start
	 * (counted in the window before) and at its end; the window's CPU by
	 * the kernel's clocks, with its context switches, and how many
	 * processes' part of it is their events' count instead (they ended
	 * and record could not read their clocks). */
	int windows;
	uint64_t cuts;
	int64_t tail0, tail1;
	int64_t window_cpu_ns, window_switches;
	size_t window_by_events;
};

/* kernel_tables.c: tables of pids; files and their unwind tables;
 * processes, their images (proctree.h) and threads. */
void *kc_pidmap_get(const struct pidmap *m, pid_t key);
int kc_pidmap_put(struct pidmap *m, pid_t key, void *val);
/* The value in m's i-th slot, of m->t.cap (NULL: empty). */
void *kc_pidmap_slot(const struct pidmap *m, size_t i);
size_t kc_file_of(struct cp_kcollector *k, pid_t pid, const char *path, const char *build_id, uint64_t dev,
		  uint64_t ino);
int kc_file_open(const struct cp_kcollector *k, const struct kfile *f, struct cp_elf *e);
int kc_open_in_root(int root, const char *path, int flags);
int kc_build_wanted(struct cp_kcollector *k);
const struct cp_unwind_set *kc_proc_set(struct cp_kcollector *k, struct kproc *p);
struct cp_image *kc_new_image(struct cp_kcollector *k, struct kproc *p, const char *comm);
struct kproc *kc_proc_get(const struct cp_kcollector *k, pid_t pid);
struct kproc *kc_proc_new(struct cp_kcollector *k, pid_t pid, struct kproc *parent);
struct kthread *kc_thread_get(struct cp_kcollector *k, pid_t tid, pid_t pid);
/* Frees p, whose pid's entry the caller has emptied or is freeing. */
void kc_proc_free(struct cp_kcollector *k, struct kproc *p);
void kc_name_thread(struct cp_image *m, pid_t tid, const char *name);
void kc_add_mapping(struct cp_kcollector *k, struct kproc *p, size_t fi, uint64_t lo, uint64_t hi, uint64_t pgoff);

/* kernel_jit.c: process p has a JIT (anonymous code mapped, or the
 * jitdump `dump`, a path in its mount namespace); its names read into its
 * image (once, the first time asked); its files let go (its exec, the
 * end). */
void kc_jit_note(struct cp_kcollector *k, struct kproc *p, const char *dump);
void kc_jit_read(struct cp_kcollector *k, struct kproc *p);
void kc_jit_end(struct cp_kcollector *k, struct kproc *p);

/* kernel.c: a record handed on in time order (cp_perf_deliver_fn); every
 * ring read and what is older than `until` handled; an off-CPU interval
 * into its image's stacks (cp_switch_emit_fn). */
void kc_handle(void *arg, const struct cp_perf_event *ev);
void kc_code_mapping(struct cp_kcollector *k, struct kproc *p, const char *path, const char *build_id, uint64_t dev,
		     uint64_t ino, uint64_t lo, uint64_t hi, uint64_t pgoff);
void kc_drain(struct cp_kcollector *k, uint64_t until);
void kc_off_into_image(void *arg, void *ctx, uint64_t gen, pid_t tid, const uintptr_t *pcs, uint32_t n,
		       uint32_t stack_flags, uint32_t kind, uint64_t from, uint64_t ns);

/* kernel_end.c: each image's facts as its samples stand (the task
 * clock's CPU that no sample accounts for, of `counted` in all, to the
 * first process's image, less tail0); how the processes ended, by their
 * pidfds; the images held to the kernel's charge (cp_kernel_hold_to). */
void kc_images_facts(struct cp_kcollector *k, int64_t counted);
void kc_procs_ended(struct cp_kcollector *k);
void kc_hold(struct cp_kcollector *k, int64_t cpu_ns, int64_t switches);

/* kernel_window.c: with --every, each live process's clock at the start of
 * cp_kernel_finish; and the last window's CPU by the clocks, the images
 * held to it, once all is taken. */
void kc_window_clocks(struct cp_kcollector *k);
void kc_window_last(struct cp_kcollector *k);

/* kernel_open.c: the scheduler's count of the live threads' CPU of
 * processes pids, and their context switches (-p). */
int64_t kc_scheduler_cpu(const pid_t *pids, size_t n, int64_t *switches);

#endif
