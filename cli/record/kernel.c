/*
 * kernel.c -- `cpuprof record` reading the kernel's rings (kernel.h).
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
 * pass's start less a margin; the rest waits for the next pass.
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
 * says so and records CPU only.  Every sample then starts with its
 * event's id (PERF_SAMPLE_IDENTIFIER), which tells the two events'
 * samples apart.  In time order with everything else, each thread's
 * switch-outs are paired with its switch-ins (src/perf/switches.c) and
 * the intervals go into the images' stack tables, charged to the stack of
 * the switch-out.
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

#include "arch.h"
#include "base/array.h"
#include "base/elf.h"
#include "kernel.h"
#include "perf/events.h"
#include "perf/switches.h"
#include "profile/options.h"
#include "sig/sigstate.h"
#include "unwind/file.h"

/* Bytes of each sample's stack copied (a multiple of 8 below 64 KiB):
 * deeper stacks end where the copy does. */
#define STACK_COPY 16384
/* Each CPU's ring holds this long of samples at the rate asked for (as
 * far as the locked-memory limits allow); the reader wakes a quarter full. */
#define RING_MS 250
/* Records younger than this wait for the next pass: an older one of
 * another CPU may not be in its ring yet. */
#define ORDER_SLACK_NS 2000000
/* The most file descriptors record keeps for processes' exit statuses. */
#define MAX_PIDFDS 4096

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
	char *path;
	char build_id[2 * CP_ELF_BUILD_ID_MAX + 1]; /* from the kernel, or "" */
	uint64_t dev, ino;            /* when the kernel gave no build ID */
	int vdso;
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
	struct pidmap_e {
		pid_t key;
		void *val;
	} *e;
	size_t n, cap;
};

/* A record waiting its turn: its time, its order of arrival, where its
 * copy is in the queue's buffer. */
struct qent {
	uint64_t time;
	uint64_t seq;
	size_t off;
};

/* A sample as queued: what the walk and the weight need, and the stack
 * bytes the kernel copied. */
struct ksample {
	uint32_t pid, tid, cpu;
	int have_regs;
	int is_switch;                /* of the context-switch event: a switch-out */
	uint64_t time, value;
	uint64_t regs[CP_PERF_NREGS];
	uint64_t dyn;
	uint8_t stack[];
};

struct cp_kcollector {
	struct cp_kernel_conf conf;
	struct cp_tree tree;
	uint64_t period;              /* ns of task clock */
	int use_read, build_id;       /* what the kernel takes (open_one) */
	int kernel;                   /* samples are taken in kernel mode too (open_one) */
	struct cp_perf_ring *rings;
	size_t nrings;
	unsigned ring_pages;
	int *fds;
	size_t nfds, capfds;
	uint8_t *bounce;
	size_t bounce_size;
	struct kfile **files;
	size_t nfiles, capfiles;
	struct pidmap procs, threads;
	struct cp_perf_counts counts;
	_Atomic uint64_t want[CP_UNWIND_WANT_WORDS];
	struct cp_ucache *cache;
	uint64_t set_gen;
	struct qent *q;
	size_t nq, capq;
	uint8_t *buf;
	size_t nbuf, capbuf;
	uint64_t seq;
	uint64_t lost, throttled;
	int64_t wall0_ns;
	uint64_t mono0, mono1;
	int npidfds;
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
	int ident;                    /* samples start with their event's id */
	char off_why[384];
	struct cp_switches sw;
	int *swfds;                   /* the context-switch events */
	size_t nswfds, capswfds;
	uint64_t t_end;               /* when the events were disabled */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- tables of pids ---- */

static size_t pid_hash(pid_t p, size_t cap)
{
	return ((size_t)(unsigned)p * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

static void *pidmap_get(const struct pidmap *m, pid_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = pid_hash(key, m->cap); m->e[i].key; i = (i + 1) & (m->cap - 1))
		if (m->e[i].key == key)
			return m->e[i].val;
	return NULL;
}

/* Sets key's value (replacing any).  0 or -1. */
static int pidmap_put(struct pidmap *m, pid_t key, void *val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct pidmap_e *e = calloc(cap, sizeof *e);
		if (!e)
			return -1;
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].key) {
				size_t j = pid_hash(m->e[i].key, cap);
				while (e[j].key)
					j = (j + 1) & (cap - 1);
				e[j] = m->e[i];
			}
		free(m->e);
		m->e = e;
		m->cap = cap;
	}
	size_t i = pid_hash(key, m->cap);
	while (m->e[i].key && m->e[i].key != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->e[i].key)
		m->n++;
	m->e[i].key = key;
	m->e[i].val = val;
	return 0;
}

/* ---- files and their tables ---- */

/* The file of a mapping, made if new; SIZE_MAX if out of memory. */
static size_t file_of(struct cp_kcollector *k, const char *path, const char *build_id, uint64_t dev, uint64_t ino)
{
	int vdso = !strcmp(path, "[vdso]");
	for (size_t i = 0; i < k->nfiles; i++) {
		const struct kfile *f = k->files[i];
		if (strcmp(f->path, path) != 0)
			continue;
		if (vdso || (build_id[0] ? !strcmp(f->build_id, build_id) : (f->dev == dev && f->ino == ino)))
			return i;
	}
	if (cp_array_grow((void **)&k->files, &k->capfiles, k->nfiles + 1, sizeof *k->files, 64))
		return SIZE_MAX;
	struct kfile *f = calloc(1, sizeof *f);
	if (!f || !(f->path = strdup(path))) {
		free(f);
		return SIZE_MAX;
	}
	f->vdso = vdso;
	snprintf(f->build_id, sizeof f->build_id, "%s", vdso ? k->vdso_build_id : build_id);
	f->dev = dev;
	f->ino = ino;
	f->state = CP_UR_LAZY;
	k->files[k->nfiles] = f;
	return k->nfiles++;
}

/* Opens f: its file on disk (if it is still the one mapped) or, for the
 * vDSO, our own.  0, or -1 if it cannot be read as what was mapped. */
static int file_open(const struct cp_kcollector *k, const struct kfile *f, struct cp_elf *e)
{
	if (f->vdso)
		return k->vdso_lo && cp_elf_open_image(e, (const void *)k->vdso_lo, k->vdso_hi - k->vdso_lo) == 0 ? 0 : -1;
	if (cp_elf_open(e, f->path) != 0)
		return -1;
	struct stat st;
	int same = f->build_id[0] ? !strcmp(e->build_id, f->build_id)
				  : (fstat(e->fd, &st) == 0 && (uint64_t)st.st_ino == f->ino);
	if (!same) {
		cp_elf_close(e);
		return -1;
	}
	return 0;
}

/* Reads f's PT_LOAD headers, which say where its code is in its own
 * addresses. */
static void file_headers(struct cp_kcollector *k, struct kfile *f)
{
	if (f->headers)
		return;
	struct cp_elf e;
	f->headers = -1;
	if (file_open(k, f, &e) < 0) {
		f->state = CP_UR_NONE;
		return;
	}
	for (size_t i = 0; i < e.nseg; i++)
		if (e.seg[i].type == PT_LOAD)
			f->loads[f->nloads++] = e.seg[i];
	if (!f->build_id[0])
		snprintf(f->build_id, sizeof f->build_id, "%s", e.build_id);
	f->headers = 1;
	cp_elf_close(&e);
}

/* Builds f's table. */
static void file_build(struct cp_kcollector *k, struct kfile *f)
{
	if (f->state != CP_UR_LAZY)
		return;
	struct cp_elf e;
	f->state = CP_UR_NONE;
	if (file_open(k, f, &e) < 0)
		return;
	int cached;
	f->tab = cp_unwind_table_of_elf(&e, &f->tab_bytes, &f->rejected, &cached, f->why, sizeof f->why);
	cp_elf_close(&e);
	if (f->tab) {
		f->state = CP_UR_TABLE;
		k->tables++;
		k->tables_cached += (uint64_t)cached;
		k->table_bytes += f->tab_bytes;
	}
}

/* Builds the tables walks asked for; every process's set is then made
 * again.  Returns 1 if it built any. */
static int build_wanted(struct cp_kcollector *k)
{
	uint64_t want[CP_UNWIND_WANT_WORDS];
	int any = 0, built = 0;
	for (int i = 0; i < CP_UNWIND_WANT_WORDS; i++)
		any |= (want[i] = atomic_exchange(&k->want[i], 0)) != 0;
	if (!any)
		return 0;
	int all = (want[CP_UNWIND_WANT_ANY / 64] >> (CP_UNWIND_WANT_ANY % 64)) & 1;
	for (size_t i = 0; i < k->nfiles; i++)
		if (k->files[i]->state == CP_UR_LAZY &&
		    (all || (i < CP_UNWIND_WANT_ANY && (want[i / 64] >> (i % 64)) & 1))) {
			file_build(k, k->files[i]);
			built = 1;
		}
	if (built)
		for (size_t i = 0; i < k->procs.cap; i++)
			if (k->procs.e[i].key) {
				struct kproc *p = k->procs.e[i].val;
				free(p->set);
				p->set = NULL;
			}
	return built;
}

/* The set of p's ranges, made from its mappings if they changed; NULL if
 * out of memory. */
static const struct cp_unwind_set *proc_set(struct cp_kcollector *k, struct kproc *p)
{
	if (p->set)
		return p->set;
	struct cp_unwind_set *s = malloc(sizeof *s + (p->nmaps ? p->nmaps : 1) * sizeof s->r[0]);
	if (!s)
		return NULL;
	s->gen = ++k->set_gen;
	s->n = 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct kmap *m = &p->maps[i];
		const struct kfile *f = k->files[m->file];
		s->r[s->n++] = (struct cp_urange){ .lo = m->lo, .hi = m->hi, .bias = m->bias, .tab = f->tab,
						   .obj = m->file,
						   .state = m->bias_known ? (uint32_t)f->state : CP_UR_NONE };
	}
	p->set = s;
	return s;
}

/* ---- processes, images, threads ---- */

/* A new image of p (its first, or what an exec made of it). */
static struct cp_image *new_image(struct cp_kcollector *k, struct kproc *p, const char *comm)
{
	struct cp_image *old = p->img, *m = cp_tree_new_image(&k->tree);
	if (!m)
		return NULL;
	m->pid = p->pid;
	m->ppid = old ? old->ppid : 0;
	m->order = old ? old->order + 1 : 0;
	snprintf(m->comm, sizeof m->comm, "%s", comm);
	m->facts = k->base;
	m->have_facts = 1;
	m->start_ns = (int64_t)mono_ns();
	p->gen++;
	cp_image_add_epoch(m, p->gen);
	m->facts.armed = 1; /* the thread that exec'd, or the first one found */
	if (old) {
		old->replaced = old->dead = 1;
		old->facts.ended = CP_END_EXEC;
		old->facts.exec_pending = 1;
	}
	p->img = m;
	return m;
}

static struct kproc *proc_get(const struct cp_kcollector *k, pid_t pid)
{
	return pidmap_get(&k->procs, pid);
}

/* A new process: with the mappings and image of `parent` (a fork), or
 * none. */
static struct kproc *proc_new(struct cp_kcollector *k, pid_t pid, struct kproc *parent)
{
	struct kproc *p = calloc(1, sizeof *p);
	if (!p || pidmap_put(&k->procs, pid, p) < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->pidfd = -1;
	if (k->npidfds < MAX_PIDFDS) {
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		k->npidfds += p->pidfd >= 0;
	}
	if (!parent || !parent->img)
		return p;
	if (parent->nmaps && (p->maps = malloc(parent->nmaps * sizeof *p->maps))) {
		memcpy(p->maps, parent->maps, parent->nmaps * sizeof *p->maps);
		p->nmaps = p->capmaps = parent->nmaps;
	}
	struct cp_image *pm = parent->img, *m = cp_tree_new_image(&k->tree);
	if (!m)
		return p;
	m->pid = pid;
	m->ppid = parent->pid;
	memcpy(m->exe, pm->exe, sizeof m->exe);
	memcpy(m->comm, pm->comm, sizeof m->comm);
	m->facts = k->base;
	m->have_facts = 1;
	m->start_ns = (int64_t)mono_ns();
	if (pm->nobjs && (m->objs = malloc(pm->nobjs * sizeof *m->objs))) {
		memcpy(m->objs, pm->objs, pm->nobjs * sizeof *m->objs);
		m->nobjs = pm->nobjs;
	}
	p->gen = parent->gen;
	cp_image_add_epoch(m, p->gen);
	p->img = m;
	return p;
}

static struct kthread *thread_get(struct cp_kcollector *k, pid_t tid, pid_t pid)
{
	struct kthread *t = pidmap_get(&k->threads, tid);
	if (t) {
		if (pid > 0)
			t->pid = pid;
		return t;
	}
	t = calloc(1, sizeof *t);
	if (!t || pidmap_put(&k->threads, tid, t) < 0) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->pid = pid;
	return t;
}

/* Names thread tid of image m. */
static void name_thread(struct cp_image *m, pid_t tid, const char *name)
{
	if (cp_array_grow((void **)&m->names, &m->capnames, m->nnames + 1, sizeof *m->names, 16))
		return;
	m->names[m->nnames].tid = tid;
	snprintf(m->names[m->nnames].name, sizeof m->names[m->nnames].name, "%s", name);
	m->nnames++;
}

/* Records in m's objects that file f is mapped at [lo, hi) from file
 * offset pgoff with this bias; a mapping over one of another file starts
 * a new epoch. */
static void image_object(struct cp_kcollector *k, struct kproc *p, const struct kfile *f, const struct kmap *map,
			 int clash)
{
	struct cp_image *m = p->img;
	if (!m)
		return;
	if (clash) {
		p->gen++;
		cp_image_add_epoch(m, p->gen);
	}
	if (!m->exe[0] && !f->vdso) {
		/* The program: its first mapping after the exec.  A setuid or
		 * setgid one is not profiled: the kernel takes a secure exec's
		 * events away. */
		struct stat st;
		snprintf(m->exe, sizeof m->exe, "%s", f->path);
		if (stat(f->path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
			m->unprofiled = "it is setuid or setgid, and such programs are never profiled";
	}
	for (uint32_t i = m->nobjs; i-- > 0;) {
		struct cp_shm_obj *o = &m->objs[i];
		if (o->gen == p->gen && !strcmp(o->path, f->path) && o->bias == map->bias && o->nsegs < CP_SHM_MAX_SEGS) {
			o->segs[o->nsegs++] = (struct cp_shm_seg){ map->lo, map->hi, map->pgoff };
			return;
		}
	}
	struct cp_shm_obj *objs = realloc(m->objs, (m->nobjs + 1) * sizeof *objs);
	if (!objs)
		return;
	m->objs = objs;
	struct cp_shm_obj *o = &objs[m->nobjs++];
	memset(o, 0, sizeof *o);
	snprintf(o->path, sizeof o->path, "%s", f->path);
	snprintf(o->build_id, sizeof o->build_id, "%s", f->build_id);
	o->bias = map->bias;
	o->nsegs = 1;
	o->segs[0] = (struct cp_shm_seg){ map->lo, map->hi, map->pgoff };
	o->gen = p->gen;
	(void)k;
}

/* Process p maps file `fi` for its code at [lo, hi) from offset pgoff. */
static void add_mapping(struct cp_kcollector *k, struct kproc *p, size_t fi, uint64_t lo, uint64_t hi,
			uint64_t pgoff)
{
	struct kfile *f = k->files[fi];
	file_headers(k, f);
	struct kmap map = { .lo = lo, .hi = hi, .pgoff = pgoff, .file = (uint32_t)fi };
	for (size_t i = 0; i < f->nloads; i++) {
		const struct cp_elf_seg *s = &f->loads[i];
		if (pgoff >= (s->offset & ~4095ull) && pgoff < s->offset + s->filesz) {
			map.bias = lo - (s->vaddr - s->offset + pgoff);
			map.bias_known = 1;
			break;
		}
	}
	/* What it maps over goes. */
	int clash = 0;
	size_t w = 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		struct kmap *o = &p->maps[i];
		if (o->lo < hi && lo < o->hi) {
			clash |= o->file != fi;
			if (o->lo < lo && o->hi > hi)
				continue; /* split: both ends dropped, rarely matters */
			if (o->lo < lo) {
				o->hi = lo;
			} else if (o->hi > hi) {
				o->pgoff += hi - o->lo;
				o->lo = hi;
			} else {
				continue;
			}
		}
		p->maps[w++] = *o;
	}
	p->nmaps = w;
	if (cp_array_grow((void **)&p->maps, &p->capmaps, p->nmaps + 1, sizeof *p->maps, 16))
		return;
	size_t at = p->nmaps;
	while (at > 0 && p->maps[at - 1].lo > lo) {
		p->maps[at] = p->maps[at - 1];
		at--;
	}
	p->maps[at] = map;
	p->nmaps++;
	free(p->set);
	p->set = NULL;
	image_object(k, p, f, &map, clash);
}

/* ---- records ---- */

static void on_mmap2(struct cp_kcollector *k, const struct perf_event_header *h, struct cp_perf_rec *r)
{
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
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
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
	size_t n = 0;
	while (n < sizeof path - 1 && r->p + n < r->end && r->p[n])
		n++;
	memcpy(path, r->p, n);
	path[n] = '\0';
	if (path[0] != '/' && strcmp(path, "[vdso]") != 0)
		return; /* anonymous code (a JIT's): frame pointers only */
	struct kproc *p = proc_get(k, (pid_t)pt[0]);
	if (!p)
		p = proc_new(k, (pid_t)pt[0], NULL);
	if (!p)
		return;
	size_t fi = file_of(k, path, build_id, dev, ino);
	if (fi != SIZE_MAX)
		add_mapping(k, p, fi, addr, addr + len, pgoff);
}

static void on_comm(struct cp_kcollector *k, const struct perf_event_header *h, struct cp_perf_rec *r, uint64_t time)
{
	uint32_t pt[2];
	if (!cp_perf_take(r, pt, sizeof pt))
		return;
	char name[16];
	size_t n = 0;
	while (n < sizeof name - 1 && r->p + n < r->end && r->p[n])
		n++;
	memcpy(name, r->p, n);
	name[n] = '\0';
	struct kproc *p = proc_get(k, (pid_t)pt[0]);
	if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
		if (!p)
			p = proc_new(k, (pid_t)pt[0], NULL);
		if (!p)
			return;
		/* The old program's mappings are gone with it. */
		p->nmaps = 0;
		free(p->set);
		p->set = NULL;
		new_image(k, p, name);
		/* The command's first thread starts at its exec, as its
		 * events do (a thread known already is not started again). */
		if (k->off_cpu)
			cp_switches_begin(&k->sw, (pid_t)pt[1], time, 0);
	}
	if (p && p->img)
		name_thread(p->img, (pid_t)pt[1], name);
}

static void on_fork(struct cp_kcollector *k, struct cp_perf_rec *r)
{
	uint32_t v[4]; /* pid, ppid, tid, ptid */
	uint64_t time;
	if (!cp_perf_take(r, v, sizeof v) || !cp_perf_take(r, &time, 8))
		return;
	struct kproc *parent = proc_get(k, (pid_t)v[1]);
	if (v[0] != v[1]) {
		k->sched_partial = 1; /* a new process: not among those -p counts */
		struct kproc *p = proc_get(k, (pid_t)v[0]);
		if (!p)
			p = proc_new(k, (pid_t)v[0], parent);
		if (p) {
			p->start_time = time;
			if (p->img && parent && parent->img)
				name_thread(p->img, (pid_t)v[2], cp_image_thread_name(parent->img, (int32_t)v[3]));
		}
	} else if (parent && parent->img) {
		name_thread(parent->img, (pid_t)v[2], cp_image_thread_name(parent->img, (int32_t)v[3]));
	}
	struct kthread *t = thread_get(k, (pid_t)v[2], (pid_t)v[0]);
	if (t) {
		struct kproc *p = proc_get(k, (pid_t)v[0]);
		t->img = p ? p->img : NULL;
		if (t->img)
			t->img->facts.armed++;
	}
	/* A new thread: it waits for a CPU until its first switch-in. */
	if (k->off_cpu)
		cp_switches_begin(&k->sw, (pid_t)v[2], time, 1);
}

static void on_task_exit(struct cp_kcollector *k, struct cp_perf_rec *r)
{
	uint32_t v[4];
	uint64_t time;
	if (!cp_perf_take(r, v, sizeof v) || !cp_perf_take(r, &time, 8))
		return;
	if (k->off_cpu)
		cp_switches_end(&k->sw, (pid_t)v[2], time);
	struct kthread *t = thread_get(k, (pid_t)v[2], (pid_t)v[0]);
	if (t)
		t->exited = 1;
	k->sched_partial = 1; /* its count is gone from the scheduler's */
	struct kproc *p = proc_get(k, (pid_t)v[0]);
	if (p && v[0] == v[2])
		p->exited = 1;
}

static void on_read(struct cp_kcollector *k, struct cp_perf_rec *r, int cpu)
{
	uint32_t pt[2];
	if (!cp_perf_take(r, pt, sizeof pt))
		return;
	uint64_t value = cp_perf_u64(r);
	uint64_t tail = cp_perf_counts_tail(&k->counts, (pid_t)pt[1], cpu, value);
	struct kthread *t = thread_get(k, (pid_t)pt[1], (pid_t)pt[0]);
	if (!t)
		return;
	t->exited = 1;
	t->tail_units += tail;
	t->got_read = 1;
	struct kproc *p = proc_get(k, (pid_t)pt[0]);
	struct cp_image *m = t->img ? t->img : p ? p->img : NULL;
	if (m)
		m->facts.unsampled_ns += tail;
}

/* Walks sample s of process p into pcs; returns how many, *flags. */
static unsigned walk(struct cp_kcollector *k, struct kproc *p, const struct ksample *s, uintptr_t *pcs,
		     uint32_t *flags)
{
	*flags = 0;
	if (!s->have_regs)
		return 0; /* no user context: a stretch in the kernel */
	struct cp_regs regs;
	CP_PERF_REGS(s->regs, &regs);
	/* A walk that wants the stack past a whole copy: the stack is deeper
	 * than the copy, and the stack is cut there. */
	int beyond = 0;
	uint64_t whole = s->is_switch ? CP_SWITCH_STACK_COPY : STACK_COPY;
	struct cp_stackmem m = {
		.beyond = &beyond,
		.lo = regs.sp,
		.hi = regs.sp + s->dyn,
		.delta = (intptr_t)((uintptr_t)s->stack - regs.sp),
		.copy = 1,
	};
	if (k->conf.unwind == CP_UNWIND_FP) {
		unsigned n = cp_unwind_fp(&regs, &m, pcs, k->conf.depth, flags);
		*flags |= beyond && s->dyn == whole ? CP_SAMPLE_TRUNCATED : 0;
		return n;
	}
	for (int again = 0;; again = 1) {
		struct cp_unwinder u = { .set = proc_set(k, p), .cache = k->cache, .want = k->want };
		int truncated = 0, complete = 1;
		beyond = 0;
		unsigned n = cp_unwind_dwarf(&u, &regs, &m, k->conf.unwind == CP_UNWIND_AUTO, pcs, k->conf.depth,
					     &truncated, &complete);
		*flags = truncated || (beyond && s->dyn == whole) ? CP_SAMPLE_TRUNCATED : 0;
		if (complete || again || !build_wanted(k))
			return n;
	}
}

/* The sample of a switch-out: its stack, which the thread's next
 * switch-in charges with the time in between (on_off). */
static void on_switch_sample(struct cp_kcollector *k, const struct ksample *s)
{
	struct kproc *p = proc_get(k, (pid_t)s->pid);
	if (!k->off_cpu || !p || !p->img)
		return;
	struct kthread *t = thread_get(k, (pid_t)s->tid, (pid_t)s->pid);
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
static void on_off(void *arg, void *ctx, uint64_t gen, pid_t tid, const uintptr_t *pcs, uint32_t n,
		   uint32_t stack_flags, uint32_t kind, uint64_t ns)
{
	struct cp_kcollector *k = arg;
	struct cp_image *m = ctx;
	if (!m) {
		struct kthread *t = pidmap_get(&k->threads, tid);
		struct kproc *p = t ? proc_get(k, t->pid) : NULL;
		m = t && t->img ? t->img : p ? p->img : NULL;
		if (!m)
			return;
		p = proc_get(k, m->pid);
		gen = p && p->img == m ? p->gen : m->epochs ? m->epochs[m->nepochs - 1].gen : 0;
	}
	struct cp_epoch *e = m->epochs ? cp_image_epoch_for(m, (uint32_t)gen) : NULL;
	if (!e || cp_stacktab_add_tid(&e->tab, (uint32_t)tid, pcs, n, stack_flags | kind, 1, ns) < 0)
		return;
	m->facts.off_ns += ns;
	m->facts.off_switches++;
	if (kind & CP_OFF_RUNNABLE)
		m->facts.runnable_ns += ns;
}

/* A switch record: PERF_RECORD_SWITCH of the thread in its sample_id. */
static void on_switch(struct cp_kcollector *k, const struct perf_event_header *h, struct cp_perf_rec *r, uint64_t time)
{
	uint32_t pt[2];
	if (!k->off_cpu || !cp_perf_take(r, pt, sizeof pt))
		return;
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT)
		cp_switches_out(&k->sw, (pid_t)pt[1], time, (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0);
	else
		cp_switches_in(&k->sw, (pid_t)pt[1], time);
}

static void on_sample(struct cp_kcollector *k, const struct ksample *s)
{
	if (s->is_switch) {
		on_switch_sample(k, s);
		return;
	}
	if (k->off_cpu)
		cp_switches_sample(&k->sw, (pid_t)s->tid, s->time);
	uint64_t kernel = 0;
	uint64_t weight = cp_perf_counts_weigh(&k->counts, (pid_t)s->tid, (int)s->cpu, s->value, k->use_read, k->period,
					       k->kernel ? NULL : &kernel);
	struct kproc *p = proc_get(k, (pid_t)s->pid);
	if (!p)
		p = proc_new(k, (pid_t)s->pid, NULL);
	if (!p || !p->img)
		return; /* before its exec: record's own child */
	p->img->facts.kernel_ns += kernel;
	struct kthread *t = thread_get(k, (pid_t)s->tid, (pid_t)s->pid);
	if (t) {
		t->img = p->img;
		t->sampled_units += weight;
	}
	uintptr_t pcs[1024];
	uint32_t flags;
	unsigned n = walk(k, p, s, pcs, &flags);
	struct cp_image *m = p->img;
	struct cp_epoch *e = m->epochs ? cp_image_epoch_for(m, p->gen) : NULL;
	if (!e || cp_stacktab_add_tid(&e->tab, s->tid, pcs, n, flags, 1, weight) < 0) {
		m->dropped++;
		m->dropped_ns += weight;
		return;
	}
	m->samples++;
	m->sampled_ns += weight;
}

/* Handles one queued record. */
static void handle(struct cp_kcollector *k, const uint8_t *at)
{
	struct perf_event_header h;
	memcpy(&h, at, sizeof h);
	if (h.type == PERF_RECORD_SAMPLE) {
		on_sample(k, (const struct ksample *)(at + sizeof h));
		return;
	}
	int cpu;
	uint64_t time;
	memcpy(&time, at + sizeof h, sizeof time); /* stored before the record */
	memcpy(&cpu, at + sizeof h + sizeof(uint64_t), sizeof cpu);
	const uint8_t *body = at + sizeof h + 2 * sizeof(uint64_t);
	struct cp_perf_rec r = { body, body + h.size - sizeof h };
	switch (h.type) {
	case PERF_RECORD_MMAP2: on_mmap2(k, &h, &r); break;
	case PERF_RECORD_COMM: on_comm(k, &h, &r, time); break;
	case PERF_RECORD_SWITCH: on_switch(k, &h, &r, time); break;
	case PERF_RECORD_FORK: on_fork(k, &r); break;
	case PERF_RECORD_EXIT: on_task_exit(k, &r); break;
	case PERF_RECORD_READ: on_read(k, &r, cpu); break;
	}
}

/* ---- the queue ---- */

static void *queue_room(struct cp_kcollector *k, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	if (k->nbuf + n > k->capbuf) {
		size_t cap = k->capbuf ? k->capbuf : 1u << 20;
		while (cap < k->nbuf + n)
			cap *= 2;
		uint8_t *b = realloc(k->buf, cap);
		if (!b)
			return NULL;
		k->buf = b;
		k->capbuf = cap;
	}
	if (cp_array_grow((void **)&k->q, &k->capq, k->nq + 1, sizeof *k->q, 1024))
		return NULL;
	void *p = k->buf + k->nbuf;
	k->q[k->nq].off = k->nbuf;
	k->nbuf += n;
	return p;
}

/* A ring's record into the queue: a sample as a struct ksample with the
 * stack bytes the kernel copied, anything else as it is (after its CPU). */
static void enqueue(const struct perf_event_header *h, int cpu, void *arg)
{
	struct cp_kcollector *k = arg;
	const uint8_t *body = (const uint8_t *)(h + 1);
	struct cp_perf_rec r = { body, (const uint8_t *)h + h->size };
	uint64_t time = 0;
	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		uint32_t pt[2], cr[2];
		int is_switch = k->ident && cp_switches_is_switch(&k->sw, cp_perf_u64(&r));
		if (!cp_perf_take(&r, pt, sizeof pt) || !cp_perf_take(&r, &time, 8) || !cp_perf_take(&r, cr, sizeof cr))
			return;
		uint64_t value = k->use_read && !is_switch ? cp_perf_u64(&r) : 0;
		uint64_t regs[CP_PERF_NREGS] = { 0 };
		const uint8_t *stack;
		uint64_t dyn;
		int user = cp_perf_take_user(&r, regs, CP_PERF_NREGS, &stack, &dyn);
		if (user < 0)
			return;
		struct perf_event_header hh = { PERF_RECORD_SAMPLE, 0, 0 };
		uint8_t *at = queue_room(k, sizeof hh + sizeof(struct ksample) + dyn);
		if (!at)
			return;
		memcpy(at, &hh, sizeof hh);
		struct ksample *s = (struct ksample *)(at + sizeof hh);
		s->pid = pt[0];
		s->tid = pt[1];
		s->cpu = cr[0];
		s->time = time;
		s->value = value;
		s->have_regs = user;
		s->is_switch = is_switch;
		memcpy(s->regs, regs, sizeof regs);
		s->dyn = dyn;
		memcpy(s->stack, stack, dyn);
		break;
	}
	case PERF_RECORD_LOST:
		cp_perf_u64(&r);
		k->lost += cp_perf_u64(&r);
		return;
	case PERF_RECORD_THROTTLE:
		k->throttled++;
		return;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_READ:
	case PERF_RECORD_SWITCH: {
		/* sample_id_all: ... time, cpu at the end (and the event's
		 * id after them, with PERF_SAMPLE_IDENTIFIER). */
		size_t trail = k->ident ? 24 : 16;
		if (h->size < sizeof *h + trail)
			return;
		memcpy(&time, (const uint8_t *)h + h->size - trail, 8);
		uint8_t *at = queue_room(k, h->size + 2 * sizeof(uint64_t));
		if (!at)
			return;
		memcpy(at, h, sizeof *h);
		uint64_t c = (uint64_t)(unsigned)cpu;
		memcpy(at + sizeof *h, &time, 8);
		memcpy(at + sizeof *h + 8, &c, 8);
		memcpy(at + sizeof *h + 16, body, h->size - sizeof *h);
		break;
	}
	default:
		return;
	}
	k->q[k->nq].time = time;
	k->q[k->nq].seq = k->seq++;
	k->nq++;
}

static int qent_cmp(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Handles the queued records older than `until`, in time order, and
 * keeps the rest. */
static void flush_queue(struct cp_kcollector *k, uint64_t until)
{
	if (!k->nq)
		return;
	qsort(k->q, k->nq, sizeof *k->q, qent_cmp);
	size_t i = 0;
	for (; i < k->nq && k->q[i].time < until; i++)
		handle(k, k->buf + k->q[i].off);
	if (i == k->nq) {
		k->nq = k->nbuf = 0;
		return;
	}
	/* What is left moves to the front, in order. */
	size_t n = k->nq - i, bytes = 0;
	uint8_t *nb = malloc(k->capbuf);
	if (!nb) {
		for (; i < k->nq; i++)
			handle(k, k->buf + k->q[i].off);
		k->nq = k->nbuf = 0;
		return;
	}
	for (size_t j = 0; j < n; j++) {
		struct qent *e = &k->q[i + j];
		const uint8_t *at = k->buf + e->off;
		struct perf_event_header h;
		memcpy(&h, at, sizeof h);
		size_t len = h.type == PERF_RECORD_SAMPLE
				     ? sizeof h + sizeof(struct ksample) + ((const struct ksample *)(at + sizeof h))->dyn
				     : h.size + 2 * sizeof(uint64_t);
		len = (len + 7) & ~(size_t)7;
		memcpy(nb + bytes, at, len);
		k->q[j] = *e;
		k->q[j].off = bytes;
		bytes += len;
	}
	free(k->buf);
	k->buf = nb;
	k->nbuf = bytes;
	k->nq = n;
}

void cp_kernel_poll(struct cp_kcollector *k)
{
	uint64_t now = mono_ns();
	for (size_t i = 0; i < k->nrings; i++)
		cp_perf_ring_drain(&k->rings[i], k->bounce, k->bounce_size, enqueue, k);
	flush_queue(k, now > ORDER_SLACK_NS ? now - ORDER_SLACK_NS : 0);
}

/* ---- opening ---- */

static void attr_for(const struct cp_kcollector *k, struct perf_event_attr *a, int use_read, int build_id)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = k->period;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER | (use_read ? PERF_SAMPLE_READ : 0) |
			 (k->ident ? PERF_SAMPLE_IDENTIFIER : 0);
	a->sample_regs_user = CP_PERF_REGS_MASK;
	a->sample_stack_user = STACK_COPY;
	a->exclude_kernel = (unsigned)!k->kernel;
	a->exclude_hv = 1;
	a->inherit = 1;
	a->inherit_stat = 1;
	a->task = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->build_id = (unsigned)build_id;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(k->ring_pages * 4096u / 4);
}

/* The context-switch event of --off-cpu: a sample at every switch-out
 * (taken in the kernel, hence exclude_kernel 0, which needs privileges),
 * with the user registers and stack, and the switch records; no side
 * records of its own (the task clock's say what they say once).  Its
 * samples' layout is the task clock's less PERF_SAMPLE_READ. */
static void switch_attr(const struct cp_kcollector *k, struct perf_event_attr *a)
{
	cp_switches_attr(a, PERF_SAMPLE_CPU, CP_PERF_REGS_MASK, CP_SWITCH_STACK_COPY);
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(k->ring_pages * 4096u / 4);
}

/* Opens the context-switch event on pid and cpu, writing into ring_fd's
 * ring (or its own, for a probe: -1), and notes its id.  The fd, or a
 * negative errno. */
static int open_switch(struct cp_kcollector *k, pid_t pid, int cpu, int on_exec, int ring_fd)
{
	struct perf_event_attr a;
	switch_attr(k, &a);
	a.disabled = (unsigned)on_exec;
	a.enable_on_exec = (unsigned)on_exec;
	int fd = cp_perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 || ring_fd < 0)
		return fd;
	uint64_t id = 0;
	int e = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0 ? -errno
													  : 0;
	if (e == 0)
		e = cp_switches_add_id(&k->sw, id);
	if (e < 0) {
		close(fd);
		return e;
	}
	return fd;
}

/* Off-CPU time could not be had after all (an event refused on some task
 * or CPU): what was opened of it is closed, and the profile says why. */
static void off_cpu_fails(struct cp_kcollector *k, int e, const char *what)
{
	for (size_t i = 0; i < k->nswfds; i++)
		close(k->swfds[i]);
	k->nswfds = 0;
	k->off_cpu = 0;
	snprintf(k->off_why, sizeof k->off_why, "the context-switch event could not be opened on %s: %s", what,
		 strerror(-e));
}

/* Opens an event on pid and cpu with what this kernel and its settings
 * allow, best first: samples in kernel mode too (root, CAP_PERFMON or
 * perf_event_paranoid <= 1: a sample taken in a system call, a page fault
 * or a wake-up carries the user registers and stack of where the thread
 * entered the kernel, so that time is charged to the code that entered
 * it, not to the user code that runs next); PERF_SAMPLE_READ under
 * inherit (Linux 6.12: each sample weighs the CPU since the thread's
 * previous one) and build IDs in the mmap records (5.12).  What it did not
 * take is not tried again.  The fd, or a negative errno. */
static int open_one(struct cp_kcollector *k, pid_t pid, int cpu, int on_exec)
{
	static const int tries[4][2] = { { 1, 1 }, { 1, 0 }, { 0, 1 }, { 0, 0 } };
	struct perf_event_attr a;
	int fd = -EINVAL;
	for (int i = 0; i < 4; i++) {
		if (tries[i][0] > k->use_read || tries[i][1] > k->build_id)
			continue;
		attr_for(k, &a, tries[i][0], tries[i][1]);
		a.disabled = (unsigned)on_exec;
		a.enable_on_exec = (unsigned)on_exec;
		fd = cp_perf_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if ((fd == -EACCES || fd == -EPERM) && k->kernel) {
			k->kernel = 0; /* user mode only, as an unprivileged user may */
			i--;
			continue;
		}
		if (fd >= 0) {
			k->use_read = tries[i][0];
			k->build_id = tries[i][1];
			return fd;
		}
		if (fd != -EINVAL)
			return fd;
	}
	return fd;
}

static int keep_fd(struct cp_kcollector *k, int fd)
{
	if (cp_array_grow((void **)&k->fds, &k->capfds, k->nfds + 1, sizeof *k->fds, 16))
		return -ENOMEM;
	k->fds[k->nfds++] = fd;
	return 0;
}

/* Opens the context-switch event of task pid on ring r's CPU, into it;
 * if it cannot be, off-CPU time is given up (off_cpu_fails). */
static void open_task_switches(struct cp_kcollector *k, pid_t pid, const struct cp_perf_ring *r, int on_exec)
{
	int fd = open_switch(k, pid, r->cpu, on_exec, r->fd);
	if (fd == -ESRCH)
		return; /* the thread ended meanwhile: so did its CPU */
	if (fd >= 0 && cp_array_grow((void **)&k->swfds, &k->capswfds, k->nswfds + 1, sizeof *k->swfds, 16)) {
		close(fd);
		fd = -ENOMEM;
	}
	if (fd < 0) {
		char what[64];
		snprintf(what, sizeof what, "task %d, CPU %d", (int)pid, r->cpu);
		off_cpu_fails(k, fd, what);
		return;
	}
	k->swfds[k->nswfds++] = fd;
}

/* Opens the events of task pid on every CPU, each writing into its CPU's
 * ring.  0 or a negative errno. */
static int open_task(struct cp_kcollector *k, pid_t pid, int on_exec)
{
	int opened = 0, err = 0;
	for (size_t i = 0; i < k->nrings; i++) {
		struct cp_perf_ring *r = &k->rings[i];
		int fd = open_one(k, pid, r->cpu, on_exec);
		if (fd < 0) {
			err = fd;
			if (fd == -ESRCH || fd == -EACCES || fd == -EPERM)
				return fd;
			continue;
		}
		int e = keep_fd(k, fd);
		if (e == 0)
			e = r->fd < 0 ? cp_perf_ring_map(r, fd, &k->ring_pages)
				      : (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0 ? -errno : 0);
		if (e < 0) {
			if (k->nfds && k->fds[k->nfds - 1] == fd)
				k->nfds--;
			close(fd);
			err = e;
			continue;
		}
		opened++;
		if (k->off_cpu)
			open_task_switches(k, pid, r, on_exec);
	}
	return opened ? 0 : err ? err : -ENODEV;
}

/* The common part of starting: rings, our vDSO, the facts every image
 * starts with. */
static int setup(struct cp_kcollector **out, const struct cp_kernel_conf *c)
{
	struct cp_kcollector *k = calloc(1, sizeof *k);
	if (!k)
		return -ENOMEM;
	k->conf = *c;
	cp_switches_init(&k->sw, on_off, k);
	k->off_cpu = k->ident = c->off_cpu != 0;
	int hz = (int)cp_option_taken(&cp_options[CP_OPT_HZ], c->hz);
	k->period = 1000000000u / (unsigned)hz;
	k->use_read = k->build_id = k->kernel = 1;
	k->bounce_size = STACK_COPY + 4096;
	k->bounce = malloc(k->bounce_size);
	k->cache = calloc(1, sizeof *k->cache);
	if (!k->bounce || !k->cache || cp_perf_rings(&k->rings, &k->nrings) < 0) {
		cp_kernel_free(k);
		return -ENOMEM;
	}
	uint64_t want = ((uint64_t)hz * RING_MS / 1000 * (STACK_COPY + 256) + 4095) / 4096;
	/* A switch-out costs a sample too, at whatever rate the program
	 * switches: the largest rings. */
	if (k->off_cpu)
		want = CP_PERF_RING_PAGES_MAX;
	k->ring_pages = cp_perf_ring_pages(k->nrings, want > UINT32_MAX ? UINT32_MAX : (unsigned)want);
	/* Our vDSO: the same kernel gives every process the same one. */
	struct cp_elf e;
	if (cp_elf_vdso(&k->vdso_lo, &k->vdso_hi) &&
	    cp_elf_open_image(&e, (const void *)k->vdso_lo, k->vdso_hi - k->vdso_lo) == 0)
		snprintf(k->vdso_build_id, sizeof k->vdso_build_id, "%s", e.build_id);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	k->wall0_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	k->mono0 = mono_ns();
	struct cp_facts *b = &k->base;
	snprintf(b->engine, sizeof b->engine, "%s", CP_ENGINE_PERF);
	b->hz = hz;
	b->hz_asked = c->hz;
	b->depth = (int32_t)c->depth;
	b->unwind = c->unwind;
	b->period_ns = k->period;
	b->wall0_ns = k->wall0_ns;
	clock_getres(CLOCK_MONOTONIC, &ts);
	b->timer_res_ns = ts.tv_sec * 1000000000l + ts.tv_nsec;
	*out = k;
	return 0;
}

/* What refused an event, and what would allow it, into why[len]. */
static void refused(int e, const char *what, char *why, size_t len)
{
	int par = cp_perf_paranoid();
	if ((e == -EACCES || e == -EPERM) && (par > 2 || par < -1))
		snprintf(why, len, "%s: perf_event_open: %s (perf_event_paranoid=%d; `sysctl kernel.perf_event_paranoid=2`, "
			 "or CAP_PERFMON, would allow it)", what, strerror(-e), par);
	else if (e == -EACCES || e == -EPERM)
		snprintf(why, len, "%s: perf_event_open: %s, though perf_event_paranoid=%d allows it: a seccomp filter, a "
			 "security module or a container's profile refuses it (Docker's default: run with a seccomp profile "
			 "that allows perf_event_open, or CAP_PERFMON)", what, strerror(-e), par);
	else if (e == -ENOSYS)
		snprintf(why, len, "%s: perf_event_open is not available here (ENOSYS: a seccomp filter, an emulator, or a "
			 "kernel without perf events)", what);
	else
		snprintf(why, len, "%s: perf_event_open: %s", what, strerror(-e));
}

int cp_kernel_probe(const struct cp_kernel_conf *c, char *why, size_t len)
{
	struct cp_kcollector *k;
	int rc = setup(&k, c);
	if (rc < 0) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	int fd = open_one(k, 0, k->rings[0].cpu, 1);
	if (fd >= 0)
		close(fd);
	else
		refused(fd, "sampling from outside", why, len);
	cp_kernel_free(k);
	return fd < 0 ? fd : 0;
}

int cp_kernel_pmu(char *why, size_t len)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = cp_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -ENOENT || fd == -EOPNOTSUPP || fd == -ENODEV)
		snprintf(why, len, "no PMU counts CPU cycles here (perf_event_open: %s)", strerror(-fd));
	else
		refused(fd, "the cycles event", why, len);
	return fd;
}

int cp_kernel_probe_off_cpu(const struct cp_kernel_conf *c, char *why, size_t len)
{
	struct cp_kcollector *k;
	struct cp_kernel_conf oc = *c;
	oc.off_cpu = 1;
	int rc = setup(&k, &oc);
	if (rc < 0) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	int fd = open_switch(k, 0, k->rings[0].cpu, 1, -1);
	if (fd >= 0)
		close(fd);
	else
		cp_switches_refused(fd, why, len);
	cp_kernel_free(k);
	return fd < 0 ? fd : 0;
}

int cp_kernel_start(struct cp_kcollector **out, const struct cp_kernel_conf *c, pid_t pid, char *why, size_t len)
{
	struct cp_kcollector *k;
	int rc = setup(&k, c);
	if (rc == 0 && (rc = open_task(k, pid, 1)) < 0)
		refused(rc, "the command", why, len);
	else if (rc < 0)
		snprintf(why, len, "out of memory");
	if (rc < 0) {
		cp_kernel_free(k);
		return rc;
	}
	if (!proc_new(k, pid, NULL)) {
		cp_kernel_free(k);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	k->first = pid;
	*out = k;
	return 0;
}

/* ---- attaching ---- */

/* Reads a small file into buf (NUL-terminated).  Bytes read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Process pid as it is now: an image with its program, name and threads'
 * names, and its executable mappings.  0, or a negative errno if its
 * memory map cannot be read (none of its code could be named). */
static int synthesize(struct cp_kcollector *k, pid_t pid)
{
	struct kproc *p = proc_get(k, pid);
	if (!p && !(p = proc_new(k, pid, NULL)))
		return -ENOMEM;
	char path[64], name[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if (read_small(path, name, sizeof name) <= 0)
		name[0] = '\0';
	name[strcspn(name, "\n")] = '\0';
	struct cp_image *m = new_image(k, p, name);
	if (!m)
		return -ENOMEM;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, m->exe, sizeof m->exe - 1);
	m->exe[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		char tpath[96], tname[64];
		snprintf(tpath, sizeof tpath, "/proc/%d/task/%ld/comm", (int)pid, tid);
		if (read_small(tpath, tname, sizeof tname) > 0) {
			tname[strcspn(tname, "\n")] = '\0';
			name_thread(m, (pid_t)tid, tname);
		}
		struct kthread *t = thread_get(k, (pid_t)tid, pid);
		if (t) {
			t->img = m;
			m->facts.armed += t->tid != pid; /* the first is counted */
		}
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno; /* gone: open_threads says so */
	char line[4096 + 128];
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off, ino;
		unsigned maj, min;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj, &min, &ino, &at) < 7 ||
		    !strchr(perms, 'x'))
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = '\0';
		if (file[0] != '/' && strcmp(file, "[vdso]") != 0)
			continue;
		/* The build ID of the file on disk: what it is now is what we
		 * can read, and file_open checks it is still the one mapped
		 * by its inode. */
		size_t fi = file_of(k, file, "", (uint64_t)maj << 32 | min, ino);
		if (fi != SIZE_MAX)
			add_mapping(k, p, fi, lo, hi, off);
	}
	fclose(f);
	return 0;
}

/* The CPU the live threads of processes pids[0..n) have run, by the
 * scheduler's own count (/proc/PID/task/TID/schedstat, ns), and into
 * *switches their context switches (.../status). */
static int64_t scheduler_cpu(const pid_t *pids, size_t n, int64_t *switches)
{
	int64_t sum = 0;
	*switches = 0;
	for (size_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/task", (int)pids[i]);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d)) != NULL) {
			char file[320], buf[128];
			if (de->d_name[0] == '.')
				continue;
			snprintf(file, sizeof file, "/proc/%d/task/%s/schedstat", (int)pids[i], de->d_name);
			if (read_small(file, buf, sizeof buf) > 0)
				sum += strtoll(buf, NULL, 10);
			char status[16384];
			snprintf(file, sizeof file, "/proc/%d/task/%s/status", (int)pids[i], de->d_name);
			if (read_small(file, status, sizeof status) > 0)
				for (const char *at = status; (at = strstr(at, "_ctxt_switches:")) != NULL; at++)
					*switches += strtoll(at + strlen("_ctxt_switches:"), NULL, 10);
		}
		if (d)
			closedir(d);
	}
	return sum;
}

/* Opens the events on every thread of pid not yet opened, listing its
 * threads again until a pass finds no new one.  0 or a negative errno. */
static int open_threads(struct cp_kcollector *k, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	struct pidmap opened = { 0 };
	int rc = 0, any = 0;
	for (int pass = 0; pass < 100; pass++) {
		DIR *d = opendir(path);
		if (!d)
			return any ? 0 : -ESRCH;
		int found = 0;
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			if (*end || tid <= 0 || pidmap_get(&opened, (pid_t)tid))
				continue;
			found = 1;
			pidmap_put(&opened, (pid_t)tid, k);
			/* Its life in the profile starts now, on the CPU or
			 * not: its first switch event says which. */
			if (k->off_cpu)
				cp_switches_begin(&k->sw, (pid_t)tid, mono_ns(), 0);
			int e = open_task(k, (pid_t)tid, 0);
			if (e == 0)
				any = 1;
			else if (e != -ESRCH && !rc)
				rc = e;
		}
		closedir(d);
		if (!found)
			break;
	}
	free(opened.e);
	return any ? 0 : rc ? rc : -ESRCH;
}

int cp_kernel_attach(struct cp_kcollector **out, const struct cp_kernel_conf *c, const pid_t *pids, size_t n,
		     char *why, size_t len)
{
	struct cp_kcollector *k;
	int rc = setup(&k, c);
	if (rc < 0) {
		snprintf(why, len, "out of memory");
		return rc;
	}
	k->attached = calloc(n ? n : 1, sizeof *k->attached);
	if (!k->attached) {
		cp_kernel_free(k);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char what[64];
		snprintf(what, sizeof what, "process %d", (int)pids[i]);
		/* What it has mapped first: code it maps from now on comes in
		 * the events' records. */
		int maps = synthesize(k, pids[i]);
		/* The scheduler's count as its events open, not before the
		 * map was read: CPU between the two is the scheduler's only. */
		int64_t sw;
		k->sched0 += scheduler_cpu(&pids[i], 1, &sw);
		k->switches0 += sw;
		rc = maps < 0 && maps != -ESRCH ? maps : open_threads(k, pids[i]);
		if (rc == -ESRCH) {
			snprintf(why, len, "process %d: no such process", (int)pids[i]);
		} else if (rc == -EACCES || rc == -EPERM) {
			struct stat st;
			char proc[32];
			snprintf(proc, sizeof proc, "/proc/%d", (int)pids[i]);
			if (stat(proc, &st) == 0 && st.st_uid != geteuid() && geteuid() != 0)
				snprintf(why, len, "process %d belongs to another user (uid %u): profiling it needs root, "
					 "CAP_PERFMON, or CAP_SYS_PTRACE", (int)pids[i], (unsigned)st.st_uid);
			else if (maps < 0)
				snprintf(why, len, "process %d: its memory map (/proc/%d/maps) may not be read here, even by "
					 "this user (another PID namespace, or a security module): none of its code could be "
					 "named", (int)pids[i], (int)pids[i]);
			else
				refused(rc, what, why, len);
		} else if (rc < 0 && maps < 0) {
			snprintf(why, len, "process %d: /proc/%d/maps: %s", (int)pids[i], (int)pids[i], strerror(-rc));
		} else if (rc < 0) {
			refused(rc, what, why, len);
		}
		if (rc < 0) {
			cp_kernel_free(k);
			return rc;
		}
		k->attached[k->nattached++] = pids[i];
	}
	k->first = pids[0];
	*out = k;
	return 0;
}

int cp_kernel_all_ended(const struct cp_kcollector *k)
{
	for (size_t i = 0; i < k->nattached; i++) {
		const struct kproc *p = proc_get(k, k->attached[i]);
		if (p && p->pidfd >= 0) {
			struct pollfd q = { p->pidfd, POLLIN, 0 };
			if (poll(&q, 1, 0) != 1)
				return 0;
		} else if (kill(k->attached[i], 0) == 0) {
			return 0;
		}
	}
	return 1;
}

size_t cp_kernel_pollfds(const struct cp_kcollector *k, struct pollfd *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < k->nrings && n < max; i++)
		if (k->rings[i].page)
			out[n++] = (struct pollfd){ k->rings[i].fd, POLLIN, 0 };
	return n;
}

void cp_kernel_status(struct cp_kcollector *k, pid_t pid, int status, int64_t cpu_ns)
{
	/* Records of it may still wait in the rings: the image it ended in
	 * is the one it has once they are in. */
	cp_kernel_poll(k);
	flush_queue(k, UINT64_MAX);
	cp_tree_status(&k->tree, pid, status, cpu_ns);
}

/* ---- the end ---- */

struct image_check {
	struct cp_kcollector *k;
	const struct cp_image *m;
};

/* The CPU of thread tid of the image being checked, by the task clock:
 * its samples' weights and what it used after its last sample (by its
 * final counts where the kernel gave them, else by its switch records);
 * -1 for the threads of other images. */
static int64_t thread_cpu(void *arg, pid_t tid)
{
	const struct image_check *c = arg;
	const struct kthread *t = pidmap_get(&c->k->threads, tid);
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
	cp_switches_check(&k->sw, thread_cpu, &c, 10000000, &f->acct);
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

/* The images' CPU held to the kernel's charge cpu_ns (cp_kernel_hold_to),
 * with `switches` context switches for what no task clock counted. */
static void hold(struct cp_kcollector *k, int64_t cpu_ns, int64_t switches)
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
	for (size_t i = 0; i < t->nimages; i++) {
		struct cp_image *m = t->images[i];
		struct cp_facts *f = &m->facts;
		cp_image_scale(m, factor);
		f->unsampled_ns = (uint64_t)((double)f->unsampled_ns * factor + 0.5);
		f->kernel_ns = (uint64_t)((double)f->kernel_ns * factor + 0.5);
		int64_t before = f->cpu_ns;
		f->cpu_ns = image_counted_ns(m);
		f->ahead_ns = before > f->cpu_ns ? (uint64_t)(before - f->cpu_ns) : 0;
	}
}

void cp_kernel_finish(struct cp_kcollector *k)
{
	/* Disabling an event disables its inherited copies; what they wrote
	 * stays in the rings.  Each event's count is then all its task and
	 * every task it was inherited by ran, ended or not. */
	if (k->nattached)
		k->sched1 = scheduler_cpu(k->attached, k->nattached, &k->switches1);
	for (size_t i = 0; i < k->nswfds; i++)
		ioctl(k->swfds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; i < k->nfds; i++) {
		ioctl(k->fds[i], PERF_EVENT_IOC_DISABLE, 0);
		uint64_t v;
		if (read(k->fds[i], &v, sizeof v) == (ssize_t)sizeof v)
			k->counted_ns += (int64_t)v;
	}
	k->t_end = mono_ns();
	for (size_t i = 0; i < k->nrings; i++)
		cp_perf_ring_drain(&k->rings[i], k->bounce, k->bounce_size, enqueue, k);
	flush_queue(k, UINT64_MAX);
	k->mono1 = mono_ns();
	/* Threads off the CPU at the end are charged up to it. */
	if (k->off_cpu)
		cp_switches_finish(&k->sw, k->t_end);
	/* What the samples and the ended threads' final counts do not account
	 * for: the first task's CPU after its last sample (its event is not
	 * inherited: no final count comes as it ends), and what the threads
	 * still running used after theirs.  It goes to the first process's
	 * last image, in its [unsampled: ...] frame. */
	uint64_t accounted = 0;
	for (size_t i = 0; i < k->counts.cap; i++)
		accounted += k->counts.e[i].key ? k->counts.e[i].accounted : 0;
	struct kproc *first = proc_get(k, k->first);
	if (first && first->img && (uint64_t)k->counted_ns > accounted)
		first->img->facts.unsampled_ns += (uint64_t)k->counted_ns - accounted;
	/* Each image's facts; how processes that nobody here reaped ended. */
	for (size_t i = 0; i < k->tree.nimages; i++) {
		struct cp_image *m = k->tree.images[i];
		struct cp_facts *f = &m->facts;
		f->cpu_ns = image_counted_ns(m);
		m->counted = 1;
		f->user_only = !k->kernel; /* its user time: the tree's rusage (record_write) */
		f->duration_ns = (int64_t)(k->mono1 - k->mono0);
		f->unwind_tables = k->tables;
		f->unwind_bytes = k->table_bytes;
		f->unwind_cached = k->tables_cached;
		f->throttled = i == 0 ? k->throttled : 0;
		f->lost = i == 0 ? k->lost : 0;
		image_off_cpu(k, m);
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
	/* Attached: the scheduler's count of the window is the kernel's
	 * charge, where it has all of the window's CPU: no thread ended in it
	 * (an ended thread's count is gone) and no process began (it counts
	 * the processes attached to). */
	if (k->nattached && !k->sched_partial) {
		hold(k, k->sched1 - k->sched0, k->switches1 - k->switches0);
		k->counted_ns = k->sched1 - k->sched0;
	}
	for (size_t i = 0; i < k->procs.cap; i++) {
		struct kproc *p = k->procs.e[i].key ? k->procs.e[i].val : NULL;
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
	for (size_t i = 0; i < k->nfds; i++)
		close(k->fds[i]);
	k->nfds = 0;
	for (size_t i = 0; i < k->nswfds; i++)
		close(k->swfds[i]);
	k->nswfds = 0;
}

void cp_kernel_hold_to(struct cp_kcollector *k, int64_t cpu_ns, int64_t switches)
{
	for (size_t i = 0; i < k->tree.nimages; i++)
		if (!k->tree.images[i]->dead && !k->tree.images[i]->have_status)
			return;
	hold(k, cpu_ns, switches);
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

void cp_kernel_free(struct cp_kcollector *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nfds; i++)
		close(k->fds[i]);
	for (size_t i = 0; i < k->nswfds; i++)
		close(k->swfds[i]);
	free(k->swfds);
	cp_switches_free(&k->sw);
	for (size_t i = 0; k->rings && i < k->nrings; i++)
		cp_perf_ring_unmap(&k->rings[i]);
	free(k->rings);
	free(k->fds);
	free(k->bounce);
	free(k->cache);
	for (size_t i = 0; i < k->nfiles; i++) {
		free(k->files[i]->path);
		free(k->files[i]->tab);
		free(k->files[i]);
	}
	free(k->files);
	for (size_t i = 0; i < k->procs.cap; i++)
		if (k->procs.e[i].key) {
			struct kproc *p = k->procs.e[i].val;
			if (p->pidfd >= 0)
				close(p->pidfd);
			free(p->maps);
			free(p->set);
			free(p);
		}
	free(k->procs.e);
	for (size_t i = 0; i < k->threads.cap; i++)
		if (k->threads.e[i].key)
			free(k->threads.e[i].val);
	free(k->threads.e);
	cp_perf_counts_free(&k->counts);
	free(k->q);
	free(k->buf);
	free(k->attached);
	cp_tree_free(&k->tree);
	free(k);
}
