/*
 * kernel_tables.c -- record's kernel collector (kernel.h): the files mapped
 * for their code and their unwind tables, the processes, their images and
 * threads, by the kernel's records.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
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

/* ---- tables of pids ---- */

static uint64_t pid_key(const void *e)
{
	return ((const struct pidmap_e *)e)->key;
}

void *kc_pidmap_get(const struct pidmap *m, pid_t key)
{
	const struct pidmap_e *e = key > 0 ? cp_table_find(&m->t, (unsigned)key) : NULL;
	return e ? e->val : NULL;
}

/* Sets key's value (replacing any).  0 or -1. */
int kc_pidmap_put(struct pidmap *m, pid_t key, void *val)
{
	m->t.size = sizeof(struct pidmap_e);
	m->t.key_of = pid_key;
	int made;
	struct pidmap_e *e = key > 0 ? cp_table_get(&m->t, (unsigned)key, &made) : NULL;
	if (!e)
		return -1;
	e->key = (unsigned)key;
	e->val = val;
	return 0;
}

void *kc_pidmap_slot(const struct pidmap *m, size_t i)
{
	const struct pidmap_e *e = (const struct pidmap_e *)m->t.e + i;
	return e->key ? e->val : NULL;
}

/* ---- files and their tables ---- */

/* Opens path (absolute, as a process whose root directory is `root`
 * names it) with flags, as that process would: its symbolic links are
 * resolved inside that root (RESOLVE_IN_ROOT), never in ours, so a
 * container's files cannot lead record (root, most often) to the host's.
 * root -1: ours.  A kernel before 5.6 has no openat2: there the last part
 * of the path is not followed if it is a link (the kernel's and
 * /proc/PID/maps' paths have none).  -1 and errno if it cannot. */
int kc_open_in_root(int root, const char *path, int flags)
{
	if (root < 0)
		return open(path, flags | O_CLOEXEC);
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof how);
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	return openat(root, path, flags | O_CLOEXEC | O_NOFOLLOW);
}

/* Where f, mapped by process pid, is read from: the path it names, unless
 * pid has another root than ours (a container's mount namespace, a
 * chroot) and the file at that path here is not the one mapped (the
 * kernel names a mapping from the mapping process's root; /proc/PID/maps
 * from ours where it can): then through /proc/PID/root, kept open while
 * record runs, for the process may be gone when its names and lines are
 * read. */
static void file_through_root(struct cp_kcollector *k, struct kfile *f, pid_t pid)
{
	char root[64];
	struct stat ours, theirs;
	struct cp_elf e;
	snprintf(root, sizeof root, "/proc/%d/root", (int)pid);
	if (f->vdso || f->anon || stat("/", &ours) != 0 || stat(root, &theirs) != 0 ||
	    (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino))
		return;
	if (kc_file_open(k, f, &e) == 0) {
		cp_elf_close(&e);
		return;
	}
	if (k->nrootfds >= MAX_ROOT_FDS) {
		snprintf(f->unreadable, sizeof f->unreadable, "in the root of process %d, past the %d files record "
			 "keeps open through other roots", (int)pid, MAX_ROOT_FDS);
		return;
	}
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -1, err = errno;
	if (rootfd >= 0) {
		fd = kc_open_in_root(rootfd, f->path, O_RDONLY);
		err = errno;
		/* /proc/PID/maps names a chroot's file with the chroot's own
		 * path before it (as the kernel finds it from the mount): take
		 * that off. */
		char in[CP_SHM_PATH_MAX];
		ssize_t n = fd < 0 ? readlink(root, in, sizeof in - 1) : 0;
		if (n > 1) {
			in[n] = '\0';
			if (!strncmp(f->path, in, (size_t)n) && f->path[n] == '/') {
				fd = kc_open_in_root(rootfd, f->path + n, O_RDONLY);
				err = errno;
			}
		}
		close(rootfd);
	}
	if (fd < 0) {
		snprintf(f->unreadable, sizeof f->unreadable, "not in the root of process %d (%s): %s", (int)pid,
			 "another mount namespace or a chroot", strerror(err));
		return;
	}
	char self[64];
	snprintf(self, sizeof self, "/proc/%d/fd/%d", (int)getpid(), fd);
	if (!(f->file = strdup(self))) {
		close(fd);
		return;
	}
	k->nrootfds++;
	f->fd = fd;
}

/* The file of a mapping by process pid, made if new; SIZE_MAX if out of
 * memory. */
size_t kc_file_of(struct cp_kcollector *k, pid_t pid, const char *path, const char *build_id, uint64_t dev,
		  uint64_t ino)
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
	f->anon = !strcmp(path, "//anon");
	snprintf(f->build_id, sizeof f->build_id, "%s", vdso ? k->vdso_build_id : build_id);
	f->dev = dev;
	f->ino = ino;
	f->state = CP_UR_LAZY;
	f->fd = -1;
	file_through_root(k, f, pid);
	k->files[k->nfiles] = f;
	return k->nfiles++;
}

/* Opens f: its file on disk (if it is still the one mapped) or, for the
 * vDSO, our own.  0, or -1 if it cannot be read as what was mapped. */
int kc_file_open(const struct cp_kcollector *k, const struct kfile *f, struct cp_elf *e)
{
	if (f->vdso)
		return k->vdso_lo && cp_elf_open_image(e, (const void *)k->vdso_lo, k->vdso_hi - k->vdso_lo) == 0 ? 0 : -1;
	if (cp_elf_open(e, f->file ? f->file : f->path) != 0)
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

/* Says in f->unreadable why f cannot be read as what was mapped, unless
 * it says already. */
static void file_unreadable(struct kfile *f)
{
	if (f->unreadable[0] || f->vdso || f->anon)
		return;
	const char *at = f->file ? f->file : f->path;
	struct cp_elf e;
	int rc = cp_elf_open(&e, at);
	if (rc != 0) {
		snprintf(f->unreadable, sizeof f->unreadable, "%s",
			 rc == -ENOEXEC ? "not an ELF file of this machine's" : strerror(-rc));
		return;
	}
	snprintf(f->unreadable, sizeof f->unreadable, "the file there now is not the one mapped (%s)",
		 f->build_id[0] ? "another build ID" : "another inode");
	cp_elf_close(&e);
}

/* Reads f's PT_LOAD headers, which say where its code is in its own
 * addresses. */
static void file_headers(struct cp_kcollector *k, struct kfile *f)
{
	if (f->headers)
		return;
	struct cp_elf e;
	f->headers = -1;
	if (kc_file_open(k, f, &e) < 0) {
		f->state = CP_UR_NONE;
		file_unreadable(f);
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
	if (kc_file_open(k, f, &e) < 0)
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
int kc_build_wanted(struct cp_kcollector *k)
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
		for (size_t i = 0; i < k->procs.t.cap; i++)
			if (kc_pidmap_slot(&k->procs, i)) {
				struct kproc *p = kc_pidmap_slot(&k->procs, i);
				free(p->set);
				p->set = NULL;
			}
	return built;
}

/* The set of p's ranges, made from its mappings if they changed; NULL if
 * out of memory. */
const struct cp_unwind_set *kc_proc_set(struct cp_kcollector *k, struct kproc *p)
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
struct cp_image *kc_new_image(struct cp_kcollector *k, struct kproc *p, const char *comm)
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
	m->start_ns = (int64_t)cp_mono_ns();
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

struct kproc *kc_proc_get(const struct cp_kcollector *k, pid_t pid)
{
	return kc_pidmap_get(&k->procs, pid);
}

/* A new process: with the mappings and image of `parent` (a fork), or
 * none. */
struct kproc *kc_proc_new(struct cp_kcollector *k, pid_t pid, struct kproc *parent)
{
	struct kproc *p = calloc(1, sizeof *p);
	if (!p || kc_pidmap_put(&k->procs, pid, p) < 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->pidfd = -1;
	p->jit_tmp = p->jit_dump = -1;
	p->clock0 = p->clock1 = p->clock_end = p->switches_end = -1;
	if (k->npidfds < MAX_PIDFDS) {
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		k->npidfds += p->pidfd >= 0;
	}
	if (!parent || !parent->img)
		return p;
	/* A fork of a JIT has its code, and writes its own files. */
	if (parent->jit)
		kc_jit_note(k, p, NULL);
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
	m->start_ns = (int64_t)cp_mono_ns();
	if (pm->nobjs && (m->objs = malloc(pm->nobjs * sizeof *m->objs)) &&
	    (!pm->files || (m->files = calloc(pm->nobjs, sizeof *m->files)))) {
		memcpy(m->objs, pm->objs, pm->nobjs * sizeof *m->objs);
		for (uint32_t i = 0; pm->files && i < pm->nobjs; i++)
			m->files[i] = pm->files[i] ? strdup(pm->files[i]) : NULL;
		m->nobjs = pm->nobjs;
	}
	p->gen = parent->gen;
	cp_image_add_epoch(m, p->gen);
	p->img = m;
	return p;
}

void kc_proc_free(struct cp_kcollector *k, struct kproc *p)
{
	if (p->pidfd >= 0) {
		close(p->pidfd);
		k->npidfds--;
	}
	kc_jit_end(k, p);
	free(p->maps);
	free(p->set);
	free(p);
}

struct kthread *kc_thread_get(struct cp_kcollector *k, pid_t tid, pid_t pid)
{
	struct kthread *t = kc_pidmap_get(&k->threads, tid);
	if (t) {
		if (pid > 0)
			t->pid = pid;
		return t;
	}
	t = calloc(1, sizeof *t);
	if (!t || kc_pidmap_put(&k->threads, tid, t) < 0) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->pid = pid;
	return t;
}

/* Names thread tid of image m.  name may be one of m's own names (a new
 * thread takes its creator's: cp_image_thread_name), which growing m's
 * names may move: it is copied first. */
void kc_name_thread(struct cp_image *m, pid_t tid, const char *name)
{
	char copy[sizeof m->names[0].name];
	snprintf(copy, sizeof copy, "%s", name);
	if (cp_array_grow((void **)&m->names, &m->capnames, m->nnames + 1, sizeof *m->names, 16))
		return;
	m->names[m->nnames].tid = tid;
	memcpy(m->names[m->nnames].name, copy, sizeof copy);
	m->nnames++;
}

/* Records in m's objects that file f is mapped at [lo, hi) from file
 * offset pgoff with this bias; a mapping over one of another file starts
 * a new epoch. */
static void image_object(struct cp_kcollector *k, struct kproc *p, const struct kfile *f, const struct kmap *map,
			 const struct cp_elf_seg *seg, int clash)
{
	struct cp_image *m = p->img;
	if (!m)
		return;
	/* The profile's Mapping is the segment as loaded (its first byte at
	 * bias + p_vaddr, from file offset p_offset), not the pages around
	 * it: pprof readers that place a binary by its executable segment's
	 * p_vaddr alone (Go's own `go tool pprof`) then agree with readers
	 * that use the file offset, on every linker's layout. */
	struct cp_shm_seg at = { map->lo, map->hi, map->pgoff };
	if (seg && map->bias_known) {
		uint64_t lo = map->bias + seg->vaddr, hi = lo + seg->memsz;
		if (lo > at.start && lo < at.limit) {
			at.file_offset += lo - at.start;
			at.start = lo;
		}
		if (hi > at.start && hi < at.limit)
			at.limit = hi;
	}
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
			o->segs[o->nsegs++] = at;
			return;
		}
	}
	struct cp_shm_obj *objs = realloc(m->objs, (m->nobjs + 1) * sizeof *objs);
	if (!objs)
		return;
	m->objs = objs;
	/* files beside objs, an entry each (a fork's copy has its parent's:
	 * kc_proc_new). */
	char **files = realloc(m->files, (m->nobjs + 1) * sizeof *files);
	if (!files)
		return;
	m->files = files;
	files[m->nobjs] = f->file ? strdup(f->file) : NULL;
	struct cp_shm_obj *o = &objs[m->nobjs++];
	memset(o, 0, sizeof *o);
	snprintf(o->path, sizeof o->path, "%s", f->path);
	snprintf(o->build_id, sizeof o->build_id, "%s", f->build_id);
	o->bias = map->bias;
	o->nsegs = 1;
	o->segs[0] = at;
	o->gen = p->gen;
	(void)k;
}

/* Process p maps file `fi` for its code at [lo, hi) from offset pgoff. */
void kc_add_mapping(struct cp_kcollector *k, struct kproc *p, size_t fi, uint64_t lo, uint64_t hi,
			uint64_t pgoff)
{
	struct kfile *f = k->files[fi];
	file_headers(k, f);
	struct kmap map = { .lo = lo, .hi = hi, .pgoff = pgoff, .file = (uint32_t)fi };
	/* The segment this mapping loads: the executable one whose pages
	 * hold pgoff (record sees code mappings only).  Where the linker put
	 * a segment at another address than its file offset (lld, mold:
	 * p_vaddr = p_offset + 0x1000), the read-only one before it shares
	 * its first page and would give a bias one page off. */
	const struct cp_elf_seg *seg = NULL;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < f->nloads; i++) {
		const struct cp_elf_seg *s = &f->loads[i];
		if (pgoff >= (s->offset & ~(page - 1)) && pgoff < s->offset + s->filesz &&
		    (!seg || ((s->flags & PF_X) && !(seg->flags & PF_X))))
			seg = s;
	}
	if (seg) {
		map.bias = lo - (seg->vaddr - seg->offset + pgoff);
		map.bias_known = 1;
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
	image_object(k, p, f, &map, seg, clash);
}
