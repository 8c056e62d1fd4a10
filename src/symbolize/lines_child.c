/*
 * lines_child.c -- answers a batch of line lookups (lines.h) in a child
 * process.  libdw runs on files we do not control, inside a program we
 * must not break: a crash or an endless loop on a corrupt, truncated or
 * hostile debug file would take the program with it, and libdw's caches
 * for a large object would stay in its heap.  So the caller loads libdw
 * (dlopen, in the caller, where the loader's lock is safe to take), then
 * forks; the child looks up every address and streams the chains back
 * through a pipe, object by object; the parent reads them under a
 * deadline.  A child that dies or overruns is killed; the object it was
 * reading keeps no lines, the reason says why, and a new child goes on
 * with the next object.  The child's memory is returned to the system when
 * it exits.
 *
 * The child is a copy of the profiled program: it first makes itself
 * harmless to it.  Every signal goes back to its default action (the
 * program's handlers never run in it; the asynchronous ones are blocked),
 * its standard streams go to /dev/null (libdw's out-of-memory path prints
 * before it exits), it dies with its parent, its address space is capped
 * and the OOM killer is told to choose it first.  It leaves with the
 * exit_group system call: no atexit handler, no stdio buffer of the
 * program's is flushed twice, and no interposer of cpuprof's (_exit would
 * write a profile) runs.  Its signal calls and the parent's wait for it
 * go to the C library's own functions (src/base/libc.h), never to the
 * program-facing ones that share their names in libcpuprof.so.
 * fork() rather than a raw clone so that the C library (and any malloc
 * that registers fork handlers) leaves the allocator usable in the child.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/libc.h"
#include "base/testhooks.h"
#include "lines.h"
#include "lines_cache.h"
#include "unpack.h"

/* Records from child to parent, in the machine's byte order:
 *   'S' u32 id, u16 len, bytes   a string; ids 0 (NULL) and 1 ("") are fixed
 *   'B' u32 object               the child starts on an object
 *   'R' u32 position, u8 status, u8 n, u64 lo, u64 hi, u64 fn,
 *       n x (u32 name, linkage, file, line, start_line)
 *                                the answer to one query, and the
 *                                addresses it holds for (lines.h)
 *   'O' u32 object, u8 opened, u32 n_mismatch, u32 n_looked_up, u16 len,
 *       bytes, u16 len, bytes    the object is done: whether its DWARF
 *                                was read, how many of its queries libdw
 *                                was asked (the others were inside the
 *                                span of the answer before), its trouble
 *                                (or why not) and the file its DWARF
 *                                came from
 *   'E'                          all done */

/* ---- The child ---------------------------------------------------------- */

struct out {
	int fd;
	unsigned char buf[1 << 16];
	size_t len;
	/* Strings already sent: pointer -> id (open addressing). */
	const char **keys;
	uint32_t *ids;
	size_t cap, n;
	uint32_t next_id;
};

static void out_flush(struct out *o)
{
	size_t off = 0;
	while (off < o->len) {
		ssize_t w = write(o->fd, o->buf + off, o->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			cp_real_exit(3); /* the parent is gone */
		off += (size_t)w;
	}
	o->len = 0;
}

static void out_bytes(struct out *o, const void *p, size_t n)
{
	if (o->len + n > sizeof o->buf)
		out_flush(o);
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void out_u8(struct out *o, uint8_t v) { out_bytes(o, &v, 1); }
static void out_u16(struct out *o, uint16_t v) { out_bytes(o, &v, 2); }
static void out_u32(struct out *o, uint32_t v) { out_bytes(o, &v, 4); }

/* The id of string s, sending it first if new.  Strings longer than 4095
 * bytes are cut there. */
static uint32_t out_str(struct out *o, const char *s)
{
	if (!s)
		return 0;
	if (!*s)
		return 1;
	if ((o->n + 1) * 2 > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 4096;
		const char **keys = calloc(cap, sizeof *keys);
		uint32_t *ids = malloc(cap * sizeof *ids);
		if (!keys || !ids)
			cp_real_exit(4);
		for (size_t i = 0; i < o->cap; i++) {
			if (!o->keys[i])
				continue;
			size_t j = ((uintptr_t)o->keys[i] >> 3) * 0x9e3779b97f4a7c15ull >> 20 & (cap - 1);
			while (keys[j])
				j = (j + 1) & (cap - 1);
			keys[j] = o->keys[i];
			ids[j] = o->ids[i];
		}
		free(o->keys);
		free(o->ids);
		o->keys = keys;
		o->ids = ids;
		o->cap = cap;
	}
	size_t j = ((uintptr_t)s >> 3) * 0x9e3779b97f4a7c15ull >> 20 & (o->cap - 1);
	for (; o->keys[j]; j = (j + 1) & (o->cap - 1))
		if (o->keys[j] == s)
			return o->ids[j];
	size_t len = strnlen(s, 4095);
	uint32_t id = o->next_id++;
	o->keys[j] = s;
	o->ids[j] = id;
	o->n++;
	out_u8(o, 'S');
	out_u32(o, id);
	out_u16(o, (uint16_t)len);
	out_bytes(o, s, len);
	return id;
}

/* Forgets the strings sent (their storage is about to be freed: the same
 * addresses may hold other strings next); their ids stay taken. */
static void out_forget(struct out *o)
{
	if (o->keys)
		memset(o->keys, 0, o->cap * sizeof *o->keys);
	o->n = 0;
}

static void out_done(struct out *o, size_t obj, int opened, uint32_t mismatch, uint32_t looked,
		     const char *why, const char *source)
{
	size_t len = why ? strnlen(why, 1000) : 0;
	out_u8(o, 'O');
	out_u32(o, (uint32_t)obj);
	out_u8(o, (uint8_t)opened);
	out_u32(o, mismatch);
	out_u32(o, looked);
	out_u16(o, (uint16_t)len);
	out_bytes(o, why, len);
	len = source ? strnlen(source, 4096) : 0;
	out_u16(o, (uint16_t)len);
	out_bytes(o, source, len);
}

/* Registered last in the child, so run first by exit(): libdw exits
 * (error(EXIT_FAILURE, ...)) when an allocation fails, and the program's
 * own exit handlers must not run in its copy. */
static void child_exit_now(void)
{
	cp_real_exit(6);
}

/* Makes this fresh child harmless to the program it was forked from. */
static void child_setup(pid_t parent)
{
	if (atexit(child_exit_now) != 0)
		cp_real_exit(6);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			cp_real_sigaction(s, &dfl, NULL);
	sigset_t all;
	sigfillset(&all);
	const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
	for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
		sigdelset(&all, faults[i]);
	cp_real_sigmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		cp_real_exit(5);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		for (int fd = 0; fd < 3; fd++)
			dup2(null, fd);
		if (null > 2)
			close(null);
	}
	int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (adj >= 0) {
		if (write(adj, "1000", 4) < 0) {
			/* not allowed: the cap below still holds */
		}
		close(adj);
	}
	/* Room for the debug files' mappings and libdw's tables, not for a
	 * runaway allocation. */
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long pages = 0;
	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	if (pages && sizeof(void *) == 8) {
		struct rlimit rl;
		rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) +
					    ((rlim_t)16 << 30);
		setrlimit(RLIMIT_AS, &rl);
	}
}

/* An answer as sent: its status, span and frames, their strings as the
 * ids sent. */
struct sent {
	uint8_t st, n;
	struct cp_lines_span span;
	uint32_t v[CP_LINES_MAX_DEPTH][5]; /* name, linkage, file, line, start_line */
};

/* Whether the answer before, a, holds for query x too: x inside its span,
 * for a symbol it holds for, and a an answer of the DWARF's (not one of a
 * malformed unit or of a symbol that does not match). */
static int sent_holds(const struct sent *a, const struct cp_lines_query *x)
{
	return (a->st == CP_LINES_OK || a->st == CP_LINES_NONE) && a->span.lo <= x->addr &&
	       x->addr < a->span.hi &&
	       (a->span.fn == CP_LINES_ANY_FN || !x->sym_start || x->sym_start == a->span.fn);
}

static void out_answer(struct out *o, size_t pos, const struct sent *a)
{
	out_u8(o, 'R');
	out_u32(o, (uint32_t)pos);
	out_u8(o, a->st);
	out_u8(o, a->n);
	out_bytes(o, &a->span.lo, 8);
	out_bytes(o, &a->span.hi, 8);
	out_bytes(o, &a->span.fn, 8);
	out_bytes(o, a->v, (size_t)a->n * sizeof a->v[0]);
}

/* The child's work: the queries at order[from..nq), object by object. */
static void child_run(int fd, const struct cp_lines_object *objs,
		      const struct cp_lines_query *q, const size_t *order,
		      size_t from, size_t nq)
{
	static struct out o;
	static struct sent a;
	o.fd = fd;
	o.next_id = 2;
	struct cp_lines_dwarf *d = NULL;
	size_t cur = SIZE_MAX;
	uint32_t mismatch = 0, looked = 0;
	int opened = 0;
	char why[512];
	for (size_t pos = from; pos <= nq; pos++) {
		size_t obj = pos < nq ? q[order[pos]].object : SIZE_MAX;
		if (obj != cur) {
			if (cur != SIZE_MAX) {
				out_done(&o, cur, opened, mismatch, looked,
					 opened ? cp_lines_trouble(d) : why,
					 opened ? cp_lines_source(d) : NULL);
				cp_lines_close(d);
				d = NULL;
				out_forget(&o);
			}
			if (pos == nq)
				break;
			cur = obj;
			mismatch = looked = 0;
			a.st = CP_LINES_BAD; /* nothing to take the next answer from */
			out_u8(&o, 'B');
			out_u32(&o, (uint32_t)obj);
			out_flush(&o); /* the parent must know, should we die */
			if ((int)obj == cp_lines_fault_object && cp_lines_fault_kind == 1)
				raise(SIGSEGV);
			while ((int)obj == cp_lines_fault_object && cp_lines_fault_kind == 2)
				pause();
			why[0] = '\0';
			opened = cp_lines_open(objs[obj].file ? objs[obj].file : objs[obj].path, objs[obj].build_id, &d,
					       why, sizeof why) == 0;
		}
		if (!opened)
			continue;
		/* Queries come by address: one inside the span of the answer
		 * before (the same row of the same inline scope) has its
		 * answer without libdw. */
		const struct cp_lines_query *x = &q[order[pos]];
		if (!sent_holds(&a, x)) {
			struct cp_lines_frame fr[CP_LINES_MAX_DEPTH];
			size_t n = 0;
			enum cp_lines_status st = cp_lines_lookup(d, x->addr, x->sym_start, fr, &n, &a.span);
			looked++;
			mismatch += st == CP_LINES_MISMATCH;
			a.st = (uint8_t)st;
			a.n = (uint8_t)n;
			for (size_t k = 0; k < n; k++) {
				a.v[k][0] = out_str(&o, fr[k].name);
				a.v[k][1] = out_str(&o, fr[k].linkage);
				a.v[k][2] = out_str(&o, fr[k].file);
				a.v[k][3] = fr[k].line;
				a.v[k][4] = fr[k].start_line;
			}
		}
		out_answer(&o, pos, &a);
		if ((int)obj == cp_lines_fault_object && cp_lines_fault_kind == 3 && a.st == 0 && a.n) {
			/* The parent has an answer with lines, then the crash. */
			out_flush(&o);
			raise(SIGSEGV);
		}
	}
	out_u8(&o, 'E');
	out_flush(&o);
}

/* ---- The parent --------------------------------------------------------- */

/* Storage for the answers: blocks that are freed together. */
struct block {
	struct block *next;
	size_t used, size;
	max_align_t data[];
};

static void *arena_alloc(void **mem, size_t n)
{
	struct block *b = *mem;
	n = (n + 15) & ~(size_t)15;
	if (!b || b->size - b->used < n) {
		size_t size = n > (1u << 20) ? n : (1u << 20);
		struct block *nb = malloc(sizeof *nb + size);
		if (!nb)
			return NULL;
		nb->next = b;
		nb->used = 0;
		nb->size = size;
		*mem = b = nb;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

static void arena_free(void *mem)
{
	for (struct block *b = mem, *next; b; b = next) {
		next = b->next;
		free(b);
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What one child said. */
struct run {
	unsigned char *buf;
	size_t len, cap;
	int eof, timed_out;
	int status; /* from waitpid, -1 if unknown */
};

/* Reads the child's output from fd until it closes the pipe or the
 * deadline passes. */
static int read_child(int fd, struct run *r, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			r->timed_out = 1;
			return 0;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int k = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			continue;
		if (cp_array_grow((void **)&r->buf, &r->cap, r->len + (1 << 16), 1, 1 << 16))
			return -ENOMEM;
		ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			r->eof = 1;
			return 0;
		}
		r->len += (size_t)n;
	}
}

/* Parser state over one child's output. */
struct parse {
	const unsigned char *p, *end;
	char **strs; /* id -> string (arena) */
	size_t nstrs, capstrs;
	int ended;
	size_t begun;    /* object started and not finished, or SIZE_MAX */
	int failed;      /* ENOMEM */
};

static int take(struct parse *ps, void *v, size_t n)
{
	if ((size_t)(ps->end - ps->p) < n)
		return 0;
	memcpy(v, ps->p, n);
	ps->p += n;
	return 1;
}

static const char *str_of(const struct parse *ps, uint32_t id)
{
	if (id == 0)
		return NULL;
	if (id == 1 || id >= ps->nstrs || !ps->strs[id])
		return "";
	return ps->strs[id];
}

/* Per-object outcome while the children run. */
struct objstate {
	int done, opened;
	uint32_t mismatch, queries, answered;
	uint32_t kept;  /* queries answered by the cache */
	char *why;      /* malloc'd */
	char *source;   /* malloc'd: the file the child read its DWARF from */
};

/* How reading one record of a child's output went. */
enum rec { REC_OK, REC_PARTIAL, REC_FAILED /* out of memory */ };

/* 'S': string `id` of the run, its text into the result's arena. */
static enum rec parse_string(struct parse *ps, struct cp_lines_result *res)
{
	uint32_t id;
	uint16_t len;
	if (!take(ps, &id, 4) || !take(ps, &len, 2) || (size_t)(ps->end - ps->p) < len)
		return REC_PARTIAL;
	if (id < 2 || id > (1u << 30) ||
	    cp_array_grow((void **)&ps->strs, &ps->capstrs, (size_t)id + 1, sizeof *ps->strs, 1024))
		return REC_FAILED;
	while (ps->nstrs <= id)
		ps->strs[ps->nstrs++] = NULL;
	char *s = arena_alloc(&res->mem, (size_t)len + 1);
	if (!s)
		return REC_FAILED;
	memcpy(s, ps->p, len);
	s[len] = '\0';
	ps->p += len;
	ps->strs[id] = s;
	return REC_OK;
}

/* 'R': the answer to the query at position `pos` of `order`: a status and
 * its inline chain, innermost first, of strings said before. */
static enum rec parse_answer(struct parse *ps, const struct cp_lines_query *q, const size_t *order, size_t nq,
			     struct cp_lines_result *res, struct objstate *os)
{
	uint32_t pos;
	uint8_t st, n;
	struct cp_lines_span span;
	if (!take(ps, &pos, 4) || !take(ps, &st, 1) || !take(ps, &n, 1) || !take(ps, &span.lo, 8) ||
	    !take(ps, &span.hi, 8) || !take(ps, &span.fn, 8) || (size_t)(ps->end - ps->p) < (size_t)n * 20)
		return REC_PARTIAL;
	if (pos >= nq || n > CP_LINES_MAX_DEPTH) {
		ps->p += (size_t)n * 20;
		return REC_OK;
	}
	size_t qi = order[pos];
	/* Believed only around the query's own address. */
	if ((st == CP_LINES_OK || st == CP_LINES_NONE) && span.lo <= q[qi].addr && q[qi].addr < span.hi)
		res->spans[qi] = span;
	struct cp_lines_frame *f = n ? arena_alloc(&res->mem, n * sizeof *f) : NULL;
	if (n && !f)
		return REC_FAILED;
	for (uint8_t k = 0; k < n; k++) {
		uint32_t v[5];
		memcpy(v, ps->p, sizeof v);
		ps->p += sizeof v;
		f[k].name = str_of(ps, v[0]);
		f[k].linkage = str_of(ps, v[1]);
		f[k].file = str_of(ps, v[2]);
		if (!f[k].file)
			f[k].file = "";
		f[k].line = v[3];
		f[k].start_line = v[4];
	}
	if (st == 0 && n) {
		res->chains[qi].frames = f;
		res->chains[qi].n = n;
		os[q[qi].object].answered++;
	}
	return REC_OK;
}

/* 'O': an object is done: whether it opened, how many of its queries'
 * symbols did not match, why it had no lines and the file it read. */
static enum rec parse_object(struct parse *ps, struct objstate *os, size_t nobjs)
{
	uint32_t obj, mismatch, looked;
	uint8_t opened;
	uint16_t len, slen;
	if (!take(ps, &obj, 4) || !take(ps, &opened, 1) || !take(ps, &mismatch, 4) || !take(ps, &looked, 4) ||
	    !take(ps, &len, 2) ||
	    (size_t)(ps->end - ps->p) < (size_t)len + 2)
		return REC_PARTIAL;
	memcpy(&slen, ps->p + len, 2);
	if ((size_t)(ps->end - ps->p) < (size_t)len + 2 + slen)
		return REC_PARTIAL;
	if (obj < nobjs) {
		struct objstate *o = &os[obj];
		o->done = 1;
		o->opened = opened;
		o->mismatch = mismatch;
		cp_test_count(cp_test_lines_looked_up, looked);
		free(o->why);
		o->why = len ? strndup((const char *)ps->p, len) : NULL;
		free(o->source);
		o->source = slen ? strndup((const char *)ps->p + len + 2, slen) : NULL;
	}
	ps->p += (size_t)len + 2 + slen;
	ps->begun = SIZE_MAX;
	return REC_OK;
}

/* Applies one child's records to the result.  Stops at the first
 * incomplete record (the child died while writing it). */
static void parse_run(struct parse *ps, const struct cp_lines_query *q,
		      const size_t *order, size_t nq, struct cp_lines_result *res,
		      struct objstate *os, size_t nobjs)
{
	ps->begun = SIZE_MAX;
	for (;;) {
		const unsigned char *rec = ps->p;
		uint8_t tag;
		uint32_t obj;
		enum rec r;
		if (!take(ps, &tag, 1))
			return;
		if (tag == 'S') {
			r = parse_string(ps, res);
		} else if (tag == 'B') {
			/* An object begun (and not finished if the child dies). */
			r = take(ps, &obj, 4) ? REC_OK : REC_PARTIAL;
			if (r == REC_OK)
				ps->begun = obj < nobjs ? obj : SIZE_MAX;
		} else if (tag == 'R') {
			r = parse_answer(ps, q, order, nq, res, os);
		} else if (tag == 'O') {
			r = parse_object(ps, os, nobjs);
		} else {
			if (tag == 'E')
				ps->ended = 1;
			return; /* the end, or not ours: stop believing it */
		}
		if (r == REC_FAILED) {
			ps->failed = 1;
			return;
		}
		if (r == REC_PARTIAL) {
			ps->p = rec;
			return;
		}
	}
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct cp_lines_query *q = arg;
	const struct cp_lines_query *x = &q[*(const size_t *)a], *y = &q[*(const size_t *)b];
	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Replaces *dst with a new formatted string (NULL if out of memory). */
__attribute__((format(printf, 2, 3)))
static void set_why(char **dst, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	free(*dst);
	*dst = s;
}

/* Runs one child on order[from..nq); its output into r. */
static int run_child(const struct cp_lines_object *objs, const struct cp_lines_query *q,
		     const size_t *order, size_t from, size_t nq, int64_t deadline,
		     struct run *r)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int rc = -errno;
		close(p[0]);
		close(p[1]);
		return rc;
	}
	if (pid == 0) {
		close(p[0]);
		child_setup(parent);
		child_run(p[1], objs, q, order, from, nq);
		cp_real_exit(0);
	}
	close(p[1]);
	int rc = read_child(p[0], r, deadline);
	close(p[0]);
	if (rc != 0 || r->timed_out)
		kill(pid, SIGKILL);
	r->status = -1;
	int st;
	pid_t w;
	while ((w = cp_real_wait4(pid, &st, 0, NULL)) < 0 && errno == EINTR)
		;
	if (w == pid)
		r->status = st;
	/* else the program's own SIGCHLD handler reaped it: unknown */
	return rc;
}

/* The object whose reader crashed or ran out of time (r) while on it
 * loses every answer it had; the reason says which. */
static void lose_object(struct objstate *os, size_t bad, const struct run *r, int timeout_ms,
			const struct cp_lines_query *q, const size_t *order, size_t nq, struct cp_lines_result *out)
{
	char how[64];
	if (r->timed_out)
		snprintf(how, sizeof how, "took longer than the %d ms allowed", timeout_ms);
	else if (r->status >= 0 && WIFSIGNALED(r->status))
		snprintf(how, sizeof how, "crashed (signal %d)", WTERMSIG(r->status));
	else
		snprintf(how, sizeof how, "stopped unexpectedly");
	set_why(&os[bad].why, "not read: the DWARF reader %s on it", how);
	os[bad].done = 1;
	os[bad].opened = 0;
	for (size_t k = 0; k < nq; k++)
		if (q[order[k]].object == bad) {
			out->chains[order[k]] = (struct cp_lines_chain){ NULL, 0 };
			out->spans[order[k]] = (struct cp_lines_span){ 0, 0, 0 };
		}
}

/* Answers the queries order[0..nq) with children, each starting after the
 * last object the one before it finished or gave up on, 8 at most.  0,
 * -ENOMEM, or 1 if no child could run at all (the reason in global). */
static int read_with_children(const struct cp_lines_object *objs, size_t nobjs, const struct cp_lines_query *q,
			      const size_t *order, size_t nq, int timeout_ms, struct cp_lines_result *out,
			      struct objstate *os, struct parse *ps, char *global, size_t glen)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t from = 0;
	cp_test_count(cp_test_lines_asked, nq);
	for (int children = 0; from < nq && children < 8; children++) {
		struct run r = { 0 };
		int err = run_child(objs, q, order, from, nq, deadline, &r);
		if (err == -ENOMEM && !r.buf)
			return err;
		if (err != 0 && r.len == 0) {
			snprintf(global, glen, "could not run the DWARF reader: %s", strerror(-err));
			free(r.buf);
			return 1;
		}
		ps->p = r.buf;
		ps->end = r.buf + r.len;
		ps->ended = 0;
		ps->nstrs = 0;
		parse_run(ps, q, order, nq, out, os, nobjs);
		free(r.buf);
		if (ps->failed)
			return -ENOMEM;
		if (ps->ended)
			return 0;
		/* It died or ran out of time on ps->begun: that object loses
		 * the lines it had, and the next child starts after it. */
		size_t bad = ps->begun;
		if (bad != SIZE_MAX)
			lose_object(os, bad, &r, timeout_ms, q, order, nq, out);
		while (from < nq && os[q[order[from]].object].done)
			from++;
		if (r.timed_out || bad == SIZE_MAX) {
			for (size_t i = from; i < nq; i++) {
				struct objstate *o = &os[q[order[i]].object];
				if (!o->done) {
					o->done = 1;
					set_why(&o->why, r.timed_out ? "not read: no time was left" :
							 "not read: the DWARF reader stopped unexpectedly");
				}
			}
			return 0;
		}
	}
	return 0;
}

/* Each object's verdict into out: objects whose DWARF disagrees with their
 * symbols keep no lines (more than one address in ten means a wrong or
 * corrupt debug file, and its other answers are not to be trusted
 * either), and each says why it has none or lacks some. */
static void judge_objects(struct objstate *os, size_t nobjs, const struct cp_lines_query *q, const size_t *order,
			  size_t nq, struct cp_lines_result *out)
{
	for (size_t i = 0; i < nobjs; i++) {
		struct objstate *o = &os[i];
		if (!o->queries)
			continue;
		if (o->opened && o->mismatch * 10 > o->queries) {
			set_why(&o->why, "its DWARF disagrees with its symbol table at %u of %u "
				"addresses (a wrong or corrupt debug file): no lines used",
				o->mismatch, o->queries);
			o->opened = 0;
			o->kept = 0;
			for (size_t k = 0; k < nq; k++)
				if (q[order[k]].object == i) {
					out->chains[order[k]] = (struct cp_lines_chain){ NULL, 0 };
					out->spans[order[k]] = (struct cp_lines_span){ 0, 0, 0 };
				}
		}
		/* Answers kept from an earlier reading are of the same DWARF. */
		int read = o->opened || o->kept;
		out->has_dwarf[i] = (unsigned char)read;
		if (read) {
			/* Addresses in no unit (PLT stubs, start-up code built
			 * without -g) are normal; trouble in a unit is not. */
			if (o->why && o->answered < o->queries)
				set_why(&out->why[i], "%u of %u addresses without lines: %s",
					o->queries - o->answered, o->queries, o->why);
		} else {
			out->why[i] = o->why ? o->why : strdup("not read");
			o->why = NULL;
		}
	}
}

/* Answers order[0..nq) from the cache where it can, order by object:
 * misses into miss[], the number returned; *kept counts the hits. */
static size_t answer_kept(const struct cp_lines_object *objs, const struct cp_lines_query *q,
			  const size_t *order, size_t nq, struct cp_lines_result *out,
			  struct objstate *os, size_t *miss, size_t *kept)
{
	size_t nmiss = 0;
	*kept = 0;
	for (size_t k = 0; k < nq; k++) {
		const struct cp_lines_query *x = &q[order[k]];
		struct objstate *o = &os[x->object];
		if (k == 0 || x->object != q[order[k - 1]].object)
			out->cached[x->object] = cp_lines_cache_load(objs[x->object].path,
								     objs[x->object].build_id);
		struct cp_lines_chain ch;
		if (cp_lines_cache_find(out->cached[x->object], x->addr, x->sym_start, &ch, &out->spans[order[k]])) {
			out->chains[order[k]] = ch;
			o->kept++;
			o->answered += ch.n > 0;
			++*kept;
		} else {
			miss[nmiss++] = order[k];
		}
	}
	return nmiss;
}

/* Keeps what the children answered about each object whose reading met
 * no trouble; miss[0..n) is ordered by object. */
static void keep_answers(const struct cp_lines_object *objs, const struct cp_lines_query *q,
			 const size_t *miss, size_t n, const struct cp_lines_result *out,
			 const struct objstate *os)
{
	for (size_t from = 0, to; from < n; from = to) {
		size_t obj = q[miss[from]].object;
		for (to = from + 1; to < n && q[miss[to]].object == obj; to++)
			;
		const struct objstate *o = &os[obj];
		if (o->opened && !o->why && !o->mismatch && o->source)
			cp_lines_cache_save(objs[obj].path, objs[obj].build_id, o->source, out->cached[obj],
					    out->chains, out->spans, miss + from, to - from);
	}
}

int cp_lines_resolve(const struct cp_lines_object *objs, size_t nobjs,
		     const struct cp_lines_query *q, size_t nq, int timeout_ms,
		     struct cp_lines_result *out, char *global, size_t glen)
{
	memset(out, 0, sizeof *out);
	if (global && glen)
		global[0] = '\0';
	/* At least 256 of each: blocks of a size that changes with every
	 * call would settle in the allocator's per-thread caches (see
	 * pprof_write.c). */
	size_t mq = nq > 256 ? nq : 256, mo = nobjs > 256 ? nobjs : 256;
	out->chains = calloc(mq, sizeof *out->chains);
	out->spans = calloc(mq, sizeof *out->spans);
	out->why = calloc(mo, sizeof *out->why);
	out->has_dwarf = calloc(mo * 8, 1); /* 2 KiB at least, likewise */
	out->cached = calloc(mo, sizeof *out->cached);
	struct objstate *os = calloc(mo, sizeof *os);
	size_t *order = malloc(mq * sizeof *order), *miss = malloc(mq * sizeof *miss);
	struct parse ps;
	memset(&ps, 0, sizeof ps);
	out->nobjs = nobjs;
	int rc = 0;
	if (!out->chains || !out->spans || !out->why || !out->has_dwarf || !out->cached || !os || !order || !miss) {
		rc = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < nq; i++) {
		order[i] = i;
		if (q[i].object < nobjs)
			os[q[i].object].queries++;
	}
	qsort_r(order, nq, sizeof *order, order_cmp, (void *)q);
	while (nq && q[order[nq - 1]].object >= nobjs)
		nq--; /* queries of no object (sorted last): no lines */
	size_t kept, nmiss = answer_kept(objs, q, order, nq, out, os, miss, &kept);
	/* libdw is loaded at the first write that has something to look up
	 * that the cache does not hold: a profile with no address (an empty
	 * program's) costs no libdw, which with its own libraries is a
	 * millisecond to load.  libzstd with it, for the children that meet
	 * zstd-compressed DWARF (unpack.h): loaded here, before the fork, as
	 * libdw is (a child of a threaded program must not take the loader's
	 * lock that another thread may have held at the fork). */
	int r = 0;
	if (nmiss) {
		r = cp_lines_libdw(global, glen) != 0 ? 1 : 0;
		if (r == 0) {
			cp_unpack_prepare();
			r = read_with_children(objs, nobjs, q, miss, nmiss, timeout_ms, out, os, &ps, global, glen);
		}
	}
	if (r < 0) {
		rc = r;
		goto done;
	}
	if (r == 1) {
		if (!kept)
			goto done;
		/* The cache answered some: the reason is the other objects'. */
		for (size_t i = 0; i < nobjs; i++)
			if (os[i].kept < os[i].queries)
				set_why(&os[i].why, "not read: %s", global);
		global[0] = '\0';
	} else {
		keep_answers(objs, q, miss, nmiss, out, os);
	}
	judge_objects(os, nobjs, q, order, nq, out);
done:
	if (os)
		for (size_t i = 0; i < nobjs; i++) {
			free(os[i].why);
			free(os[i].source);
		}
	free(os);
	free(order);
	free(miss);
	free(ps.strs);
	if (rc != 0)
		cp_lines_result_free(out);
	return rc;
}

void cp_lines_result_free(struct cp_lines_result *r)
{
	if (r->why)
		for (size_t i = 0; i < r->nobjs; i++)
			free(r->why[i]);
	free(r->why);
	if (r->cached)
		for (size_t i = 0; i < r->nobjs; i++)
			cp_lines_cache_free(r->cached[i]);
	free(r->cached);
	free(r->chains);
	free(r->spans);
	free(r->has_dwarf);
	arena_free(r->mem);
	memset(r, 0, sizeof *r);
}
