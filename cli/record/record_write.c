/*
 * record_write.c -- the profile(s) of a recorded tree (record_write.h).
 * Each process image's samples are written with the objects it had
 * loaded (an image whose objects changed places has several epochs, each
 * with its own set), its frames that are not code carry its labels, and
 * its facts are added into the tree's; how the kernel charged the tree
 * (CMD's rusage, which holds what it reaped, and the orphans') is the
 * measure of coverage.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/array.h"
#include "profile/judge.h"
#include "profile/pprof_write.h"
#include "record_write.h"
#include "symbolize/kallsyms.h"
#include "symbolize/debuginfod.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

/* Most processes the comments describe one by one. */
#define MAX_PROCESS_COMMENTS 64

/* How the image's process ended, as text ("exit:0", "signal:9", ...). */
static void ended(const struct cp_image *m, char *buf, size_t len)
{
	if (m->replaced || (m->facts.ended == CP_END_EXEC && m->facts.exec_pending && !m->have_status))
		snprintf(buf, len, "exec");
	else if (m->have_status && WIFEXITED(m->status))
		snprintf(buf, len, "exit:%d", WEXITSTATUS(m->status));
	else if (m->have_status && WIFSIGNALED(m->status))
		snprintf(buf, len, "signal:%d%s", WTERMSIG(m->status), WCOREDUMP(m->status) ? " (core dumped)" : "");
	else if (m->facts.ended == CP_END_UNDERSCORE_EXIT)
		snprintf(buf, len, "_exit:%d", m->facts.exit_status);
	else if (m->facts.ended == CP_END_EXIT)
		snprintf(buf, len, "exit");
	else if (!m->dead)
		snprintf(buf, len, "running");
	else
		snprintf(buf, len, "unknown");
}

/* The image's name for labels and messages: its program's base name. */
static const char *image_name(const struct cp_image *m)
{
	const char *slash = strrchr(m->exe, '/');
	return m->exe[0] ? (slash ? slash + 1 : m->exe) : m->comm;
}

/* The image's facts, with what record counted itself. */
static void image_facts(const struct cp_tree *c, const struct cp_image *m, struct cp_facts *f)
{
	if (m->have_facts)
		*f = m->facts;
	else
		memset(f, 0, sizeof *f);
	/* Its CPU before its profile started, by its own clock: the clock of
	 * a process goes on through an exec, so for an image an exec made,
	 * what the one before it had used (at its stop) is not its own. */
	int64_t base = 0;
	for (size_t k = 0; k < c->nimages; k++) {
		const struct cp_image *o = c->images[k];
		if (o->pid == m->pid && o->order + 1 == m->order && o->have_facts)
			base = o->facts.cpu0_ns + o->facts.cpu_ns;
	}
	f->before_ns = m->have_facts && f->cpu0_ns > base ? (uint64_t)(f->cpu0_ns - base) : 0;
	/* The image's CPU is from its start, as its profile counts it. */
	f->cpu_ns += (int64_t)f->before_ns;
	f->samples = m->samples;
	f->sampled_ns = m->sampled_ns;
	f->lost += m->dropped;
	f->lost_ns += m->dropped_ns;
	/* A process that never said it ended (killed) last published its
	 * CPU a while before: the kernel's count from its wait is better. */
	if (!m->counted && m->facts.ended == CP_END_NONE && m->have_status && m->wait_cpu_ns - base > f->cpu_ns)
		f->cpu_ns = m->wait_cpu_ns - base;
	/* One still running when CMD ended: the kernel's count at its last
	 * samples (cp_collect_finish). */
	if (m->live_cpu_ns && !m->have_status && m->live_cpu_ns - base > f->cpu_ns)
		f->cpu_ns = m->live_cpu_ns - base;
}

/* Whether image m is of a process still running: CMD ended, and nobody
 * reaped it. */
static int is_running(const struct cp_image *m)
{
	return !m->dead && !m->have_status;
}

/* The tree's images sorted by process ID, then exec order: a process's
 * last image is its current one, whose parent is followed. */
struct by_pid {
	const struct cp_image **v;
	size_t n;
};

static int pid_order(const void *a, const void *b)
{
	const struct cp_image *x = *(const struct cp_image *const *)a, *y = *(const struct cp_image *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Where the images of process pid end in ix (one past its last), or 0. */
static size_t pid_end(const struct by_pid *ix, pid_t pid)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->v[mid]->pid <= pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && ix->v[lo - 1]->pid == pid ? lo : 0;
}

/* Whether the CPU of process pid is in record's rusage of the tree:
 * record reaped it, or it ended and its parent's CPU is there (a parent
 * that reaps a child holds the child's CPU in its own rusage; a child
 * whose parent ended first was given to record, which reaped it if it
 * ended).  A process still running, or reaped by one still running, is
 * not. */
static int in_rusage(const struct by_pid *ix, pid_t pid, int depth)
{
	size_t end = pid_end(ix, pid);
	if (!end || depth > 256 || is_running(ix->v[end - 1]))
		return 0;
	for (size_t i = end; i-- > 0 && ix->v[i]->pid == pid;)
		if (ix->v[i]->wait_cpu_ns >= 0)
			return 1;
	pid_t parent = ix->v[end - 1]->ppid;
	return parent > 0 && parent != pid && in_rusage(ix, parent, depth + 1);
}

/* Adds image facts f into the tree's t. */
static void add_facts(struct cp_facts *t, const struct cp_facts *f)
{
	t->cpu_ns += f->cpu_ns;
	t->user_ns += f->user_ns;
	t->waits += f->waits;
	t->samples += f->samples;
	t->sampled_ns += f->sampled_ns;
	t->lost += f->lost;
	t->lost_ns += f->lost_ns;
	t->unsampled_ns += f->unsampled_ns;
	t->kernel_ns += f->kernel_ns;
	t->wakeup_ns += f->wakeup_ns;
	t->profiler_ns += f->profiler_ns;
	t->before_ns += f->before_ns;
	t->armed += f->armed;
	t->unarmed += f->unarmed;
	t->blocked += f->blocked;
	t->throttled += f->throttled;
	t->ahead_ns += f->ahead_ns;
	if (!t->first_error)
		t->first_error = f->first_error;
	if (f->duration_ns > t->duration_ns)
		t->duration_ns = f->duration_ns;
	t->off_ns += f->off_ns;
	t->runnable_ns += f->runnable_ns;
	t->off_switches += f->off_switches;
	t->off_stackless += f->off_stackless;
	t->off_unpaired += f->off_unpaired;
	cp_switch_check_add(&t->acct, &f->acct);
	t->kframes_ns += f->kframes_ns;
}

/* Where --off-cpu was asked for and the profile has none, its facts say
 * why (whatever its images said). */
static void off_cpu_absent(struct cp_facts *f, const struct record_run *r)
{
	if (!r->off_cpu || !r->off_cpu_absent)
		return;
	f->off_cpu = CP_OFF_CPU_ABSENT;
	snprintf(f->off_cpu_why, sizeof f->off_cpu_why, "%s", r->off_cpu_absent);
}

/* Where --kernel was asked for and recorded inside each process (which
 * has no kernel frames), its facts say why. */
static void kframes_absent(struct cp_facts *f, const struct record_run *r)
{
	if (!r->kframes || !r->kframes_absent)
		return;
	f->kframes = CP_KFRAMES_ABSENT;
	snprintf(f->kframes_why, sizeof f->kframes_why, "%s", r->kframes_absent);
}

/* Why a program was not profiled, from its file: statically linked (no
 * dynamic loader to preload with), setuid or setgid. */
static const char *why_unprofiled(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		return "it is setuid or setgid, and such programs are never profiled";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ElfW(Ehdr) eh;
		int interp = -1;
		if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
		    eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum < 256) {
			interp = 0;
			for (unsigned i = 0; i < eh.e_phnum; i++) {
				ElfW(Phdr) ph;
				if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) == (ssize_t)sizeof ph &&
				    ph.p_type == PT_INTERP)
					interp = 1;
			}
		}
		close(fd);
		if (interp == 0)
			return "it is statically linked: no dynamic loader preloads the profiler into it";
	}
	return "it never loaded the profiler (its environment lost LD_PRELOAD?)";
}

/* The thread-name callback of a part: the image's names. */
static const char *thread_name(const void *arg, uint32_t tid)
{
	return cp_image_thread_name(arg, (int32_t)tid);
}

/* The objects image m had loaded in epoch e: those published before the
 * next epoch, less any that a later one of them was loaded over; and the
 * kernel, named by `kernel` (NULL: no kernel frames), one object
 * CP_KALLSYMS_OBJECT over all its text, as perf's converters write it. */
static struct cp_symbols *epoch_symbols(const struct cp_image *m, size_t e, const struct cp_kallsyms *kernel)
{
	uint32_t until = e + 1 < m->nepochs ? m->epochs[e + 1].gen : UINT32_MAX;
	struct cp_object_desc *d = calloc(m->nobjs + 1, sizeof *d);
	struct cp_segment_desc *segs = calloc(m->nobjs ? m->nobjs * CP_SHM_MAX_SEGS : 1, sizeof *segs);
	size_t n = 0;
	for (uint32_t i = 0; d && segs && i < m->nobjs; i++) {
		const struct cp_shm_obj *o = &m->objs[i];
		if (o->gen >= until)
			continue;
		int covered = 0;
		for (uint32_t k = i + 1; k < m->nobjs && !covered; k++) {
			const struct cp_shm_obj *later = &m->objs[k];
			for (uint32_t a = 0; later->gen < until && a < o->nsegs && !covered; a++)
				for (uint32_t b = 0; b < later->nsegs && !covered; b++)
					covered = o->segs[a].start < later->segs[b].limit &&
						  later->segs[b].start < o->segs[a].limit;
		}
		if (covered)
			continue;
		struct cp_segment_desc *sd = segs + i * CP_SHM_MAX_SEGS;
		for (uint32_t g = 0; g < o->nsegs; g++)
			sd[g] = (struct cp_segment_desc){ (uintptr_t)o->segs[g].start, (uintptr_t)o->segs[g].limit,
							  o->segs[g].file_offset };
		d[n++] = (struct cp_object_desc){ o->path, o->build_id, (uintptr_t)o->bias, sd, o->nsegs,
						  m->files ? m->files[i] : NULL, NULL };
	}
	struct cp_segment_desc ktext = { kernel ? kernel->lo : 0, kernel ? kernel->hi : 0, 0 };
	if (d && kernel)
		d[n++] = (struct cp_object_desc){ CP_KALLSYMS_OBJECT, "", 0, &ktext, 1, NULL, &kernel->tab };
	struct cp_symbols *s = d && segs ? cp_symbols_from_objects(d, n, m->exe) : NULL;
	free(d);
	free(segs);
	return s;
}

/* The parts of image m (one per epoch with samples, the first with its
 * frames that are not code) appended to *parts; its pseudo samples go in
 * pseudo[CP_FACTS_PSEUDO].  0 or -1 (out of memory). */
static int image_parts(const struct cp_image *m, const struct cp_kallsyms *kernel, const struct cp_facts *f,
		       struct cp_pseudo_sample *pseudo,
		       struct cp_profile_part **parts, size_t *nparts, size_t *cap)
{
	for (size_t e = 0; e < m->nepochs; e++) {
		if (e > 0 && m->epochs[e].tab.len == 0)
			continue;
		if (*nparts == *cap) {
			size_t nc = *cap ? 2 * *cap : 16;
			struct cp_profile_part *np = realloc(*parts, nc * sizeof *np);
			if (!np)
				return -1;
			*parts = np;
			*cap = nc;
		}
		struct cp_symbols *s = epoch_symbols(m, e, kernel);
		if (!s)
			return -1;
		struct cp_profile_part *p = &(*parts)[(*nparts)++];
		memset(p, 0, sizeof *p);
		p->syms = s;
		p->tab = &m->epochs[e].tab;
		p->jit = m->jit;
		p->pid = m->pid;
		p->process = image_name(m);
		p->thread_name = thread_name;
		p->arg = m;
		if (e == 0) {
			p->pseudo = pseudo;
			p->npseudo = cp_facts_pseudo(f, pseudo);
		}
	}
	return 0;
}

static void free_parts(struct cp_profile_part *parts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cp_symbols_free((struct cp_symbols *)parts[i].syms);
	free(parts);
}

/* The value of comment `key` among c's ("4017" of "samples=4017"), or
 * NULL. */
static const char *comment_value(const struct cp_comments *c, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < c->n; i++)
		if (strncmp(c->list[i], key, klen) == 0 && c->list[i][klen] == '=')
			return c->list[i] + klen + 1;
	return NULL;
}

/* Prints the one-line summary of the profile just written (shown as
 * `shown`) from the comments it was written with. */
static void summarise(const struct cp_comments *c, const char *shown, size_t nprocs)
{
	const char *samples = comment_value(c, "samples"), *engine = comment_value(c, "engine");
	const char *coverage = comment_value(c, "coverage"), *attributed = comment_value(c, "attributed");
	char procs[48] = "", off[64] = "";
	if (nprocs > 1)
		snprintf(procs, sizeof procs, ", %zu processes", nprocs);
	const char *off_ns = comment_value(c, "off_cpu_ns");
	if (off_ns)
		snprintf(off, sizeof off, ", off-CPU %.3f s", strtod(off_ns, NULL) / 1e9);
	fprintf(stderr, "cpuprof: wrote %s: %s samples, engine=%s, coverage=%s%s%s%s%s\n", shown, samples ? samples : "?",
		engine ? engine : "unknown", coverage ? coverage : "unknown", attributed ? ", attributed=" : "",
		attributed ? attributed : "", off, procs);
}

/* The objects some sample of parts is in, each (path, build ID) once,
 * into objs[*n] (grown as needed).  0 or -1 (out of memory). */
static int sampled_objects(const struct cp_profile_part *parts, size_t nparts, struct cp_lines_object **objs,
			   size_t *n)
{
	size_t cap = 0, cappcs = 0;
	uintptr_t *pcs = NULL;
	*objs = NULL;
	*n = 0;
	for (size_t p = 0; p < nparts; p++) {
		const struct cp_stacktab *tab = parts[p].tab;
		const struct cp_object *last = NULL;
		for (size_t i = 0; i < tab->len; i++) {
			if (cp_array_grow((void **)&pcs, &cappcs, (size_t)tab->items[i]->n + 1, sizeof *pcs, 256)) {
				free(pcs);
				return -1;
			}
			cp_stack_pcs(tab->items[i], pcs);
			for (uint32_t k = 0; k < tab->items[i]->n; k++) {
				uintptr_t pc = pcs[k];
				const struct cp_segment *g = cp_symbols_segment_for(parts[p].syms, k && pc ? pc - 1 : pc);
				if (!g || g->obj == last)
					continue;
				last = g->obj;
				size_t j = 0;
				while (j < *n && (strcmp((*objs)[j].path, last->path) ||
						  strcmp((*objs)[j].build_id, last->build_id)))
					j++;
				if (j < *n)
					continue;
				if (cp_array_grow((void **)objs, &cap, *n + 1, sizeof **objs, 16)) {
					free(pcs);
					return -1;
				}
				(*objs)[(*n)++] = (struct cp_lines_object){ last->path, last->build_id, last->file };
			}
		}
	}
	free(pcs);
	return 0;
}

/* What did not come from debuginfod: its objects' comments and the
 * summary's clauses. */
struct unfetched {
	const struct cp_lines_object *objs;
	struct cp_comments *c;
	char line[512];
	size_t n;
};

static void unfetched(void *arg, size_t i, const char *why)
{
	struct unfetched *u = arg;
	const char *path = u->objs[i].path, *base = strrchr(path, '/');
	cp_comment(u->c, "debuginfod_missing=%s: %s", path, why);
	size_t len = strlen(u->line);
	if (u->n++ < 4)
		snprintf(u->line + len, sizeof u->line - len, "%s%s (%s)", u->n > 1 ? ", " : "", base + 1, why);
	else if (u->n == 5)
		snprintf(u->line + len, sizeof u->line - len, ", ...");
}

/* Where $DEBUGINFOD_URLS names servers: fetches the debug files of the
 * sampled objects that have no symbols and lines here, before the writer
 * reads any (debuginfod.h), and says in the comments and in one line of
 * `summary` how many came and which did not.  Only record fetches: a
 * profiled program writing its own profile (the library) never touches
 * the network. */
static void fetch_debug_files(const struct cp_profile_part *parts, size_t nparts, struct cp_comments *c,
			      char *summary, size_t len)
{
	struct cp_lines_object *objs;
	size_t n, fetched;
	summary[0] = '\0';
	if (!cp_debuginfod_configured())
		return;
	if (sampled_objects(parts, nparts, &objs, &n) == 0) {
		struct unfetched u = { objs, c, "", 0 };
		size_t wanted = cp_debuginfod_fetch_missing(objs, n, &fetched, unfetched, &u);
		if (wanted) {
			cp_comment(c, "debuginfod=%zu of %zu objects without debug files here fetched", fetched, wanted);
			snprintf(summary, len, "cpuprof: debuginfod: %zu of %zu debug files fetched%s%s", fetched,
				 wanted, u.n ? "; not: " : "", u.line);
		}
	}
	free(objs);
}

/* Writes parts to path with the comments of facts f (and more); prints
 * the warning.  0 or -1. */
static int write_one(const char *path, const char *shown, const struct cp_profile_part *parts, size_t nparts,
		     const struct cp_facts *f, struct cp_comments *c, const struct cp_warning *warning, size_t nprocs)
{
	struct cp_profile_meta meta = {
		.period_ns = f->period_ns,
		.time_nanos = f->wall0_ns,
		.start_mono_ns = (uint64_t)f->mono0_ns,
		.duration_nanos = f->duration_ns,
		.comments = c->list,
		.ncomments = c->n,
		.off_cpu = f->off_cpu == CP_OFF_CPU_ON,
	};
	char err[256] = "", fetched[640];
	fetch_debug_files(parts, nparts, c, fetched, sizeof fetched);
	meta.comments = c->list;
	meta.ncomments = c->n;
	int rc = cp_pprof_write_parts(path, parts, nparts, &meta, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "cpuprof: cannot write %s: %s\n", shown, err[0] ? err : strerror(-rc));
		return -1;
	}
	summarise(c, shown, nprocs);
	if (fetched[0])
		fprintf(stderr, "%s\n", fetched);
	if (warning->text[0])
		fprintf(stderr, "cpuprof: warning: %s: %s\n", shown, warning->text);
	return 0;
}

/* How the tree was taken: as the first image of CMD that published its
 * facts says (or any image's, if none of CMD's did), with nothing counted
 * yet.  Zero if no image published any. */
static void tree_facts(const struct cp_tree *c, pid_t root, struct cp_facts *tree)
{
	memset(tree, 0, sizeof *tree);
	const struct cp_image *first = NULL;
	for (size_t k = 0; k < c->nimages && !first; k++)
		if (c->images[k]->have_facts && c->images[k]->pid == root)
			first = c->images[k];
	for (size_t k = 0; k < c->nimages && !first; k++)
		if (c->images[k]->have_facts)
			first = c->images[k];
	if (!first)
		return;
	*tree = first->facts;
	memset(&tree->cpu_ns, 0, sizeof *tree - offsetof(struct cp_facts, cpu_ns));
	tree->off_cpu = first->facts.off_cpu;
	memcpy(tree->off_cpu_why, first->facts.off_cpu_why, sizeof tree->off_cpu_why);
	tree->kframes = first->facts.kframes;
	memcpy(tree->kframes_why, first->facts.kframes_why, sizeof tree->kframes_why);
	tree->unwind_tables = first->facts.unwind_tables;
	tree->unwind_bytes = first->facts.unwind_bytes;
	tree->unwind_cached = first->facts.unwind_cached;
	memcpy(tree->unwind_rejected, first->facts.unwind_rejected, sizeof tree->unwind_rejected);
	tree->wall0_ns = first->facts.wall0_ns;
	tree->mono0_ns = first->facts.mono0_ns;
}

/* What could not be profiled, by name, one clause each, into *w. */
static void unprofiled_clauses(const struct cp_tree *c, const struct record_run *r, struct cp_warning *w)
{
	w->text[0] = '\0';
	int root_seen = 0;
	for (size_t k = 0; k < c->nimages; k++)
		root_seen |= c->images[k]->pid == r->root;
	if (!root_seen && strcmp(r->mode, "preload") != 0)
		root_seen = 1; /* from outside: its images, if any, were named as not profiled */
	if (!root_seen)
		cp_warning_add(w, "%s was not profiled: %s", r->cmd,
			       strcmp(r->mode, "preload") ? "it ran no program that could be sampled (setuid or setgid "
							   "programs never are)" : why_unprofiled(r->cmd));
	for (size_t k = 0; k < c->nimages; k++) {
		const struct cp_image *m = c->images[k];
		if (m->facts.exec_pending && !m->replaced && m->dead)
			cp_warning_add(w, "process %d (%s) exec'd a program that was not profiled", m->pid,
				       image_name(m));
		if (m->corrupt[0])
			cp_warning_add(w, "process %d (%s): %s, its samples after that are lost", m->pid,
				       image_name(m), m->corrupt);
	}
	unsigned running = 0;
	char pids[128] = "";
	for (size_t k = 0; k < c->nimages; k++) {
		const struct cp_image *m = c->images[k];
		if (is_running(m) && running++ < 4) {
			size_t n = strlen(pids);
			snprintf(pids + n, sizeof pids - n, "%s%d (%.24s)", n ? ", " : "", m->pid, image_name(m));
		}
	}
	if (running && strcmp(r->mode, "attached") != 0 && (!r->window || r->window_last))
		cp_warning_add(w, "%u %s still running when the command ended (%s%s): what %s after that "
			       "is not in the profile", running, running == 1 ? "process was" : "processes were",
			       pids, running > 4 ? ", ..." : "", running == 1 ? "it does" : "they do");
	if (c->no_slot)
		cp_warning_add(w, "%u processes found no room in record's shared memory and were not profiled",
			       c->no_slot);
}

/* How the tree was recorded, in the comments: from outside (the kernel's
 * rings), attached to running processes, or preloaded (and then why not
 * from outside, where that was tried). */
static void record_comments(struct cp_comments *cm, const struct record_run *r)
{
	if (!strcmp(r->mode, "attached")) {
		cp_comment(cm, "record=attached to %s from outside, until %s", r->cmd, r->attached);
		cp_comment(cm, "scheduler_cpu_ns=%lld", (long long)r->scheduler_ns);
	}
	else if (!strcmp(r->mode, "outside"))
		cp_comment(cm, "record=from outside: perf events opened on the command, inherited by its tree");
	else if (r->refusal && r->refusal[0])
		cp_comment(cm, "record=preloaded into each process: not from outside (%s)", r->refusal);
	else
		cp_comment(cm, "record=preloaded into each process");
	if (r->window) {
		cp_comment(cm, "window=%u", r->window);
		cp_comment(cm, "window_ended=%s", r->window_ended);
		char by[96] = "";
		if (r->window_by_events)
			snprintf(by, sizeof by, "; of %zu that ended in it, reaped by another, their events' count",
				 r->window_by_events);
		cp_comment(cm, "window_cpu=%lld ns, the processes' CPU clocks at its end less at its start%s",
			   (long long)r->tree_cpu_ns, by);
	}
}

/* The tree's warning: the judge's, then what was not profiled. */
static void tree_warning(const struct cp_facts *f, const struct cp_warning *unprofiled, struct cp_warning *w)
{
	cp_judge(f, w);
	if (unprofiled && unprofiled->text[0])
		cp_warning_add(w, "%s", unprofiled->text);
}

/* One profile of the whole tree, its samples labelled by process and
 * thread, its comments adding up the tree and describing each process.
 * 0 or -1. */
static int write_merged(const struct cp_tree *c, const char *path, const char *shown,
			const struct record_run *r, const struct cp_warning *unprofiled)
{
	struct cp_facts tree;
	tree_facts(c, r->root, &tree);
	struct cp_profile_part *parts = NULL;
	size_t nparts = 0, cap = 0;
	struct cp_pseudo_sample(*pseudo)[CP_FACTS_PSEUDO] = calloc(c->nimages, sizeof *pseudo);
	struct cp_facts *facts = calloc(c->nimages, sizeof *facts);
	static struct cp_comments cm;
	static struct cp_warning warning;
	cm.n = cm.used = 0;
	int rc = pseudo && facts ? 0 : -1;
	for (size_t k = 0; k < c->nimages && rc == 0; k++) {
		image_facts(c, c->images[k], &facts[k]);
		add_facts(&tree, &facts[k]);
		rc = image_parts(c->images[k], c->kernel, &facts[k], pseudo[k], &parts, &nparts, &cap);
	}
	if (rc < 0) {
		fprintf(stderr, "cpuprof: cannot write %s: out of memory\n", shown);
		goto out;
	}
	/* The kernel's count for the whole tree, where record has one: its
	 * rusage, which has the CPU of every process reaped by record or by
	 * a process whose CPU it has; the others' (still running, or reaped
	 * by one still running) are their images' own counts.  Attached
	 * (-p), the count is the events' over the window, or the
	 * scheduler's. */
	if (r->tree_cpu_ns > 0) {
		tree.cpu_ns = r->tree_cpu_ns;
		if (r->tree_user_ns > 0)
			tree.user_ns = r->tree_user_ns;
		struct by_pid ix = { calloc(c->nimages ? c->nimages : 1, sizeof *ix.v), c->nimages };
		for (size_t k = 0; k < ix.n && ix.v; k++)
			ix.v[k] = c->images[k];
		int user_known = r->tree_user_ns > 0;
		if (ix.v && strcmp(r->mode, "attached") != 0 && !r->window) {
			qsort(ix.v, ix.n, sizeof *ix.v, pid_order);
			for (size_t k = 0; k < c->nimages; k++)
				if (!in_rusage(&ix, c->images[k]->pid, 0)) {
					tree.cpu_ns += facts[k].cpu_ns;
					tree.user_ns += facts[k].user_ns;
					/* Counted from outside: its user time is not known. */
					user_known &= facts[k].user_ns > 0 || facts[k].cpu_ns == 0;
				}
		}
		if (!user_known)
			tree.user_ns = 0;
		free(ix.v);
	}
	off_cpu_absent(&tree, r);
	kframes_absent(&tree, r);
	tree_warning(&tree, unprofiled, &warning);
	cp_facts_comments(&cm, &tree, warning.text);
	record_comments(&cm, r);
	cp_comment(&cm, "processes=%zu", c->nimages);
	for (size_t k = 0; k < c->nimages && k < MAX_PROCESS_COMMENTS; k++) {
		const struct cp_image *m = c->images[k];
		char how[64];
		ended(m, how, sizeof how);
		cp_comment(&cm, "process=%d %s ended=%s cpu_ns=%lld samples=%llu coverage=%.3f engine=%s", m->pid,
			   image_name(m), how, (long long)facts[k].cpu_ns, (unsigned long long)facts[k].samples,
			   cp_facts_coverage(&facts[k]), facts[k].engine[0] ? facts[k].engine : "?");
	}
	if (c->nimages > MAX_PROCESS_COMMENTS)
		cp_comment(&cm, "process=... and %zu more", c->nimages - MAX_PROCESS_COMMENTS);
	rc = write_one(path, shown, parts, nparts, &tree, &cm, &warning, c->nimages);
out:
	free_parts(parts, nparts);
	free(pseudo);
	free(facts);
	return rc;
}

/* The file of image m, and its name for messages, by its place alone (the
 * same every run): CMD's primary image in FILE, the others in FILE.<pid>,
 * or FILE.<pid>.<n> after their process's n-th exec (or for the n-th
 * image of a pid used again).  0, or -1 if out of memory. */
static int image_file(const struct cp_tree *c, size_t k, const struct cp_image *primary, const char *path,
		      const char *shown, char **file, char **name)
{
	const struct cp_image *m = c->images[k];
	/* Its place among the images of its pid, in the order they began:
	 * its exec count, and past it where the pid was used again. */
	unsigned nth = 0;
	for (size_t j = 0; j < k; j++)
		nth += c->images[j]->pid == m->pid;
	*file = *name = NULL;
	int ok;
	if (m == primary)
		ok = (*file = strdup(path)) && (*name = strdup(shown));
	else if (nth)
		ok = asprintf(file, "%s.%d.%u", path, m->pid, nth) >= 0 &&
		     asprintf(name, "%s.%d.%u", shown, m->pid, nth) >= 0;
	else
		ok = asprintf(file, "%s.%d", path, m->pid) >= 0 && asprintf(name, "%s.%d", shown, m->pid) >= 0;
	return ok ? 0 : -1;
}

/* One file per process image that has samples (image_file); what was
 * not profiled is in the warning of CMD's own.  0 or -1. */
static int write_per_process(const struct cp_tree *c, const char *path, const char *shown,
			     const struct record_run *r, const struct cp_warning *unprofiled)
{
	/* CMD's own file holds its last image: the program it ended as (env,
	 * sh -c and nice exec the program that works), whatever sampled the
	 * images before it. */
	const struct cp_image *primary = NULL;
	for (size_t k = 0; k < c->nimages; k++)
		if (c->images[k]->pid == r->root && (!primary || c->images[k]->order > primary->order))
			primary = c->images[k];
	int rc = 0;
	for (size_t k = 0; k < c->nimages; k++) {
		const struct cp_image *m = c->images[k];
		int own = m == primary;
		if (!own && m->samples == 0)
			continue; /* an image that exec'd before it sampled anything */
		struct cp_facts f;
		struct cp_pseudo_sample pseudo[CP_FACTS_PSEUDO];
		struct cp_profile_part *parts = NULL;
		size_t nparts = 0, cap = 0;
		static struct cp_comments cm;
		static struct cp_warning warning;
		char *file, *name, how[64];
		cm.n = cm.used = 0;
		image_facts(c, m, &f);
		off_cpu_absent(&f, r);
		kframes_absent(&f, r);
		tree_warning(&f, own ? unprofiled : NULL, &warning);
		cp_facts_comments(&cm, &f, warning.text);
		record_comments(&cm, r);
		ended(m, how, sizeof how);
		cp_comment(&cm, "process=%d %s ended=%s", m->pid, image_name(m), how);
		if (image_file(c, k, primary, path, shown, &file, &name) < 0 ||
		    image_parts(m, c->kernel, &f, pseudo, &parts, &nparts, &cap) < 0 ||
		    write_one(file, name, parts, nparts, &f, &cm, &warning, 1) < 0)
			rc = -1;
		free_parts(parts, nparts);
		free(file);
		free(name);
	}
	if (unprofiled->text[0] && !primary)
		fprintf(stderr, "cpuprof: warning: %s\n", unprofiled->text);
	return rc;
}

int record_write(const struct cp_tree *all, const char *path, const char *shown, const struct record_run *r)
{
	static struct cp_warning unprofiled;
	/* The images that were profiled; the others are named. */
	struct cp_tree view = { .kernel = all->kernel, .no_slot = all->no_slot };
	view.images = malloc((all->nimages ? all->nimages : 1) * sizeof *view.images);
	if (!view.images) {
		fprintf(stderr, "cpuprof: cannot write %s: out of memory\n", shown);
		return -1;
	}
	for (size_t k = 0; k < all->nimages; k++)
		if (!all->images[k]->unprofiled)
			view.images[view.nimages++] = all->images[k];
	const struct cp_tree *c = &view;
	unprofiled_clauses(c, r, &unprofiled);
	for (size_t k = 0; k < all->nimages; k++) {
		const struct cp_image *m = all->images[k];
		if (!m->unprofiled)
			continue;
		if (m->pid == r->root)
			cp_warning_add(&unprofiled, "%s was not profiled: %s", r->cmd, m->unprofiled);
		else
			cp_warning_add(&unprofiled, "process %d (%s) was not profiled: %s", m->pid, image_name(m),
				       m->unprofiled);
	}
	int rc;
	if (c->nimages == 0) {
		/* Nothing to write, and an empty file would pass for a profile;
		 * an earlier one is not this run's. */
		struct stat st;
		int earlier = stat(path, &st) == 0 && S_ISREG(st.st_mode);
		fprintf(stderr, "cpuprof: no profile written: %s%s%s%s\n",
			unprofiled.text[0] ? unprofiled.text : "no process of the command was profiled",
			earlier ? "; " : "", earlier ? shown : "", earlier ? " is an earlier profile, left as it was" : "");
		rc = -1;
	} else {
		rc = r->per_process ? write_per_process(c, path, shown, r, &unprofiled)
				    : write_merged(c, path, shown, r, &unprofiled);
	}
	free(view.images);
	return rc;
}

struct cp_symbols *record_epoch_symbols(const struct cp_image *m, size_t e, const struct cp_kallsyms *kernel)
{
	return epoch_symbols(m, e, kernel);
}
