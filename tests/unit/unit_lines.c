/*
 * unit_lines.c -- tests the DWARF reader (lines.c) and its child process
 * (lines_child.c) on this very program, built -O2 -g with the library's
 * real code in it: debug files found by build ID and refused when their
 * build ID differs; an object whose DWARF disagrees with its symbols
 * keeping no lines; a child that crashes or hangs costing the lines of the
 * one object it was reading, and a time limit kept; libdw missing; and a
 * fuzzer: bit flips and truncations of .debug_info, .debug_line,
 * .debug_abbrev and .debug_str of a copy of libcpuprof.so never crash the
 * caller nor run past the limit, and a truncated section gives, at every
 * address, either no lines or the lines of the intact file.  The span an
 * answer holds for (lines.h), at every byte of this program: every
 * address inside it has the same answer; the cache answers a second
 * address of a span with no reader (and a child answers it without
 * libdw), and never an address of the next row or inline scope.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../check.h"
#include "base/testhooks.h"
#include "symbolize/debuglink.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

static char tmpdir[64], exe[3000], bid[2 * SYMBOLS_BUILD_ID_MAX + 1];
static unsigned char *img;
static size_t imglen;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The section header of section `name` in the ELF image p. */
static ElfW(Shdr) *section(unsigned char *p, const char *name)
{
	ElfW(Ehdr) *eh = (ElfW(Ehdr) *)p;
	ElfW(Shdr) *sh = (ElfW(Shdr) *)(p + eh->e_shoff);
	const char *names = (const char *)p + sh[eh->e_shstrndx].sh_offset;
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, name))
			return &sh[i];
	return NULL;
}

/* ---- Queries: every function of this program, at its start and middle -- */

static struct cp_lines_query *queries;
static size_t nqueries;

/* Queries at the start and the middle of every function of path. */
static struct cp_lines_query *make_queries(const char *path, size_t *n)
{
	struct cp_symtab t;
	char b[sizeof bid];
	CHECK_EQ(cp_symbols_read_file(path, &t, b), 0);
	struct cp_lines_query *q = malloc(2 * t.n * sizeof *q);
	CHECK(q != NULL, "out of memory");
	*n = 0;
	for (size_t i = 0; i < t.n; i++) {
		q[(*n)++] = (struct cp_lines_query){ 0, t.syms[i].start, t.syms[i].start };
		if (t.syms[i].size > 2)
			q[(*n)++] = (struct cp_lines_query){
				0, t.syms[i].start + t.syms[i].size / 2, t.syms[i].start
			};
	}
	cp_symbols_symtab_free(&t);
	return q;
}

static int frames_equal(const struct cp_lines_chain *a, const struct cp_lines_chain *b)
{
	if (a->n != b->n)
		return 0;
	for (uint32_t k = 0; k < a->n; k++) {
		const struct cp_lines_frame *x = &a->frames[k], *y = &b->frames[k];
		if (x->line != y->line || x->start_line != y->start_line ||
		    strcmp(x->file, y->file) || (!x->name != !y->name) ||
		    (x->name && strcmp(x->name, y->name)) || (!x->linkage != !y->linkage) ||
		    (x->linkage && strcmp(x->linkage, y->linkage)))
			return 0;
	}
	return 1;
}

static size_t with_lines(const struct cp_lines_result *r)
{
	size_t n = 0;
	for (size_t i = 0; i < nqueries; i++)
		n += r->chains[i].n > 0;
	return n;
}

/* The fuzzer's object: libcpuprof.so, real code built -O2 -g. */
static unsigned char *fimg;
static size_t fimglen, nfq;
static struct cp_lines_query *fq;
static struct cp_lines_result fpristine;

/* ---- The tests -------------------------------------------------------- */

static struct cp_lines_result pristine;

/* This program, as is: most addresses have lines, and some an inline
 * chain. */
static void test_self(void)
{
	struct cp_lines_object o = { exe, bid, NULL };
	char global[256];
	CHECK_EQ(cp_lines_resolve(&o, 1, queries, nqueries, 30000, &pristine, global,
				  sizeof global), 0);
	CHECK(!global[0], "global: %s", global);
	size_t n = with_lines(&pristine), inlined = 0;
	for (size_t i = 0; i < nqueries; i++)
		inlined += pristine.chains[i].n > 1;
	printf("this program: %zu of %zu addresses with lines, %zu inlined\n", n, nqueries, inlined);
	CHECK(n * 10 > nqueries * 8, "only %zu of %zu addresses have lines", n, nqueries);
	CHECK(inlined >= 5, "only %zu inline chains", inlined);
	CHECK(pristine.has_dwarf[0], "has_dwarf");
	/* In-process, the same answers. */
	struct cp_lines_dwarf *d;
	char why[256];
	CHECK_EQ(cp_lines_open(exe, bid, &d, why, sizeof why), 0);
	for (size_t i = 0; i < nqueries; i++) {
		struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
		size_t k = 0;
		enum cp_lines_status st = cp_lines_lookup(d, queries[i].addr, queries[i].sym_start, f, &k, NULL);
		struct cp_lines_chain c = { f, st == CP_LINES_OK ? (uint32_t)k : 0 };
		CHECK(frames_equal(&c, &pristine.chains[i]), "address %#llx: child and in-process differ",
		      (unsigned long long)queries[i].addr);
	}
	cp_lines_close(d);
}

/* Debug files: by build ID under the debug root, refused when theirs
 * differs; the object's own file refused when its build ID is not the
 * loaded one. */
static void test_debug_files(void)
{
	char nodebug[128], dir[200], dbg[400], why[512];
	struct cp_lines_dwarf *d;
	/* A copy without .debug_info (renamed: no DWARF any more). */
	unsigned char *p = malloc(imglen);
	memcpy(p, img, imglen);
	ElfW(Shdr) *info = section(p, ".debug_info");
	CHECK(info != NULL, "no .debug_info in this program");
	ElfW(Ehdr) *eh = (ElfW(Ehdr) *)p;
	char *names = (char *)p + ((ElfW(Shdr) *)(p + eh->e_shoff))[eh->e_shstrndx].sh_offset;
	names[info->sh_name + 1] = 'x'; /* .xebug_info */
	snprintf(nodebug, sizeof nodebug, "%s/nodebug", tmpdir);
	write_file(nodebug, p, imglen);
	CHECK_EQ(cp_lines_open(nodebug, bid, &d, why, sizeof why), -ENOENT);
	CHECK(strstr(why, "no DWARF"), "why: %s", why);
	printf("without DWARF: %s\n", why);

	/* Its debug file by build ID. */
	cp_debug_root_dir = tmpdir;
	snprintf(dir, sizeof dir, "%s/.build-id/%.2s", tmpdir, bid);
	snprintf(dbg, sizeof dbg, "%s/.build-id/", tmpdir);
	CHECK(mkdir(dbg, 0700) == 0 && mkdir(dir, 0700) == 0, "mkdir %s", dir);
	snprintf(dbg, sizeof dbg, "%s/%s.debug", dir, bid + 2);
	write_file(dbg, img, imglen);
	CHECK_EQ(cp_lines_open(nodebug, bid, &d, why, sizeof why), 0);
	struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
	size_t n, found = 0;
	for (size_t i = 0; i < nqueries; i++)
		found += cp_lines_lookup(d, queries[i].addr, queries[i].sym_start, f, &n, NULL) == CP_LINES_OK;
	CHECK(found == with_lines(&pristine), "by build ID: %zu addresses with lines, want %zu",
	      found, with_lines(&pristine));
	cp_lines_close(d);

	/* A debug file under that name whose own build ID differs. */
	memcpy(p, img, imglen);
	unsigned char raw[SYMBOLS_BUILD_ID_MAX];
	size_t rawlen = strlen(bid) / 2;
	for (size_t i = 0; i < rawlen; i++)
		sscanf(bid + 2 * i, "%2hhx", &raw[i]);
	unsigned char *desc = memmem(p, imglen, raw, rawlen);
	CHECK(desc != NULL, "no build ID note");
	desc[0] ^= 0xff;
	write_file(dbg, p, imglen);
	CHECK_EQ(cp_lines_open(nodebug, bid, &d, why, sizeof why), -ENOENT);
	CHECK(strstr(why, "another build ID"), "why: %s", why);
	printf("a debug file of another build: %s\n", why);
	unlink(dbg);
	cp_debug_root_dir = "/usr/lib/debug";

	/* The object on disk is not the one loaded. */
	char other[sizeof bid];
	snprintf(other, sizeof other, "%s", bid);
	other[0] = other[0] == '0' ? '1' : '0';
	CHECK_EQ(cp_lines_open(exe, other, &d, why, sizeof why), -ENOENT);
	CHECK(strstr(why, "another build ID than the loaded object"), "why: %s", why);
	CHECK(cp_lines_open("/nonexistent/x", "", &d, why, sizeof why) == -ENOENT &&
		      strstr(why, "No such file"), "why: %s", why);
	CHECK(cp_lines_open("/proc/self/status", "", &d, why, sizeof why) == -ENOEXEC,
	      "why: %s", why);
	free(p);
}

/* DWARF that disagrees with the symbols (here: every symbol said to start
 * one byte later) is not believed at all. */
static void test_mismatch(void)
{
	struct cp_lines_query *q = malloc(nqueries * sizeof *q);
	memcpy(q, queries, nqueries * sizeof *q);
	for (size_t i = 0; i < nqueries; i++)
		q[i].sym_start++;
	struct cp_lines_object o = { exe, bid, NULL };
	struct cp_lines_result r;
	char global[256];
	CHECK_EQ(cp_lines_resolve(&o, 1, q, nqueries, 30000, &r, global, sizeof global), 0);
	CHECK_EQ(with_lines(&r), 0);
	CHECK(r.why[0] && strstr(r.why[0], "disagrees with its symbol table"), "why: %s",
	      r.why[0] ? r.why[0] : "NULL");
	CHECK(!r.has_dwarf[0], "has_dwarf");
	printf("wrong symbols: %s\n", r.why[0]);
	cp_lines_result_free(&r);
	free(q);
}

/* Three objects (this program thrice); the child fails on the middle one. */
static void resolve3(int kind, int timeout_ms, struct cp_lines_result *r)
{
	struct cp_lines_object o[3] = { { exe, bid, NULL }, { exe, bid, NULL }, { exe, bid, NULL } };
	struct cp_lines_query *q = malloc(3 * nqueries * sizeof *q);
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < nqueries; i++) {
			q[k * nqueries + i] = queries[i];
			q[k * nqueries + i].object = k;
		}
	char global[256];
	cp_lines_fault_object = kind ? 1 : -1;
	cp_lines_fault_kind = kind;
	CHECK_EQ(cp_lines_resolve(o, 3, q, 3 * nqueries, timeout_ms, r, global, sizeof global), 0);
	cp_lines_fault_object = -1;
	CHECK(!global[0], "global: %s", global);
	for (size_t k = 0; k < 3; k++) {
		size_t n = 0;
		for (size_t i = 0; i < nqueries; i++)
			n += r->chains[k * nqueries + i].n > 0;
		r->has_dwarf[k] = n > 0; /* reused: "has lines" */
	}
	free(q);
}

static void test_child_failures(void)
{
	struct cp_lines_result r;
	/* A crash costs that object only; the next child goes on. */
	resolve3(1, 30000, &r);
	CHECK(r.has_dwarf[0] && !r.has_dwarf[1] && r.has_dwarf[2], "crash: lines %d %d %d",
	      r.has_dwarf[0], r.has_dwarf[1], r.has_dwarf[2]);
	CHECK(r.why[1] && strstr(r.why[1], "crashed (signal 11)"), "why: %s", r.why[1]);
	printf("crash: %s\n", r.why[1]);
	cp_lines_result_free(&r);

	/* A hang is cut at the limit. */
	double t0 = now_s();
	resolve3(2, 1500, &r);
	double dt = now_s() - t0;
	CHECK(dt > 1.4 && dt < 6, "hang: took %.2f s with a limit of 1.5 s", dt);
	CHECK(r.has_dwarf[0] && !r.has_dwarf[1] && !r.has_dwarf[2], "hang: lines %d %d %d",
	      r.has_dwarf[0], r.has_dwarf[1], r.has_dwarf[2]);
	CHECK(r.why[1] && strstr(r.why[1], "took longer than the 1500 ms allowed"), "why: %s",
	      r.why[1]);
	CHECK(r.why[2] && strstr(r.why[2], "no time was left"), "why: %s", r.why[2]);
	printf("hang: %s; then: %s (%.2f s)\n", r.why[1], r.why[2], dt);
	cp_lines_result_free(&r);

	/* A crash in the middle of an object, after some of its answers have
	 * arrived, takes all of them away.  Its queries come last, after
	 * queries of an object that does not exist (which the reader leaves
	 * out): each must be found by where it is, not by how many were
	 * kept. */
	{
		struct cp_lines_object o[2] = { { exe, bid, NULL }, { exe, bid, NULL } };
		size_t nbogus = nqueries, n = 2 * nqueries + nbogus;
		struct cp_lines_query *q = malloc(n * sizeof *q);
		for (size_t i = 0; i < nbogus; i++) {
			q[i] = queries[i];
			q[i].object = 7; /* no such object */
		}
		for (size_t k = 0; k < 2; k++)
			for (size_t i = 0; i < nqueries; i++) {
				q[nbogus + k * nqueries + i] = queries[i];
				q[nbogus + k * nqueries + i].object = k;
			}
		char global[256];
		cp_lines_fault_object = 1;
		cp_lines_fault_kind = 3;
		CHECK_EQ(cp_lines_resolve(o, 2, q, n, 30000, &r, global, sizeof global), 0);
		cp_lines_fault_object = -1;
		size_t kept[2] = { 0, 0 };
		for (size_t k = 0; k < 2; k++)
			for (size_t i = 0; i < nqueries; i++)
				kept[k] += r.chains[nbogus + k * nqueries + i].n > 0;
		CHECK(kept[0] > 0, "crash mid-object: the object before it lost its lines");
		CHECK(kept[1] == 0, "crash mid-object: %zu answers of the crashed object were kept", kept[1]);
		CHECK(r.why[1] && strstr(r.why[1], "crashed (signal 11)"), "why: %s", r.why[1]);
		printf("crash after a first answer: %zu and %zu addresses with lines; %s\n", kept[0], kept[1], r.why[1]);
		cp_lines_result_free(&r);
		free(q);
	}

	/* No time at all: names only, and saying so. */
	resolve3(0, 0, &r);
	CHECK(!r.has_dwarf[0] && r.why[0] && strstr(r.why[0], "not read"), "why: %s", r.why[0]);
	cp_lines_result_free(&r);
}

/* libdw absent: this program run again (the library loads libdw once per
 * process), told to look for a library that does not exist. */
static int no_libdw_main(void)
{
	cp_lines_libdw_soname = "libdw-absent.so.1";
	struct cp_lines_object o = { exe, "", NULL };
	struct cp_lines_query q = { 0, (uintptr_t)&no_libdw_main, 0 };
	struct cp_lines_result r;
	char global[256];
	int rc = cp_lines_resolve(&o, 1, &q, 1, 30000, &r, global, sizeof global);
	printf("without libdw: rc %d, %u frames: %s\n", rc, rc ? 0 : r.chains[0].n, global);
	if (rc != 0 || r.chains[0].n || !strstr(global, "libdw-absent.so.1 not loaded"))
		return 1;
	cp_lines_result_free(&r);
	return 0;
}

static void test_no_libdw(void)
{
	char cmd[4200];
	const char *emu = getenv("EMU"); /* qemu-user: no binfmt_misc needed */
	snprintf(cmd, sizeof cmd, "%s '%s' --no-libdw", emu ? emu : "", exe);
	int st = system(cmd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "without libdw: status %#x", st);
}

/* Resolves every query about the object at path (this program's build
 * ID) into r, the child crashing on it if `crash`: only the cache can
 * answer then. */
static void resolve_as(const char *path, int crash, struct cp_lines_result *r)
{
	struct cp_lines_object o = { path, bid, NULL };
	char global[256];
	cp_lines_fault_object = crash ? 0 : -1;
	cp_lines_fault_kind = 1;
	CHECK_EQ(cp_lines_resolve(&o, 1, queries, nqueries, 30000, r, global, sizeof global), 0);
	cp_lines_fault_object = -1;
	CHECK(!global[0], "global: %s", global);
}

static void check_pristine(const struct cp_lines_result *r, const char *what)
{
	for (size_t i = 0; i < nqueries; i++)
		CHECK(frames_equal(&r->chains[i], &pristine.chains[i]),
		      "%s: address %#llx differs from the DWARF's answer", what,
		      (unsigned long long)queries[i].addr);
	CHECK(r->has_dwarf[0] && !r->why[0], "%s: has_dwarf %d, why %s", what, r->has_dwarf[0],
	      r->why[0] ? r->why[0] : "NULL");
}

/* ---- Spans ------------------------------------------------------------ */

/* An answer looked up in this process: its status, chain and span. */
struct local {
	enum cp_lines_status st;
	struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
	struct cp_lines_chain chain;
	struct cp_lines_span span;
};

static void local_lookup(struct cp_lines_dwarf *d, uint64_t addr, uint64_t sym_start, struct local *l)
{
	size_t n = 0;
	l->st = cp_lines_lookup(d, addr, sym_start, l->f, &n, &l->span);
	l->chain = (struct cp_lines_chain){ l->f, l->st == CP_LINES_OK ? (uint32_t)n : 0 };
}

static int spans_equal(const struct cp_lines_span *a, const struct cp_lines_span *b)
{
	return a->lo == b->lo && a->hi == b->hi && a->fn == b->fn;
}

/* Every byte of every function of this program, in order (as the child
 * meets sorted queries): each answer's span holds its own address, and
 * every other address inside it has the same answer and the same span, so
 * that a span is never wider than where its answer holds (a row, an
 * inline scope of its neighbours' cut off).  And the spans are not single
 * bytes: most hold a few instructions. */
static void test_spans(void)
{
	struct cp_symtab t;
	char b[sizeof bid], why[256];
	CHECK_EQ(cp_symbols_read_file(exe, &t, b), 0);
	struct cp_lines_dwarf *d;
	CHECK_EQ(cp_lines_open(exe, bid, &d, why, sizeof why), 0);
	static struct local cur, prev;
	size_t addrs = 0, spans = 0, with_lines = 0, scope_edges = 0, row_edges = 0;
	prev.span = (struct cp_lines_span){ 0, 0, 0 };
	for (size_t i = 0; i < t.n; i++) {
		const struct cp_sym *y = &t.syms[i];
		for (uint64_t a = y->start; a < y->start + y->size; a++) {
			local_lookup(d, a, y->start, &cur);
			addrs++;
			if (cur.st != CP_LINES_OK && cur.st != CP_LINES_NONE)
				CHECK(cur.span.hi - cur.span.lo <= 1, "%#llx: status %d holds over %llu bytes",
				      (unsigned long long)a, cur.st,
				      (unsigned long long)(cur.span.hi - cur.span.lo));
			else
				CHECK(cur.span.lo <= a && a < cur.span.hi, "%#llx: outside its span [%#llx, %#llx)",
				      (unsigned long long)a, (unsigned long long)cur.span.lo,
				      (unsigned long long)cur.span.hi);
			if (cur.st == CP_LINES_OK && cur.f[cur.chain.n - 1].name)
				CHECK(cur.span.fn == y->start, "%#llx: span for a function at %#llx, not %#llx",
				      (unsigned long long)a, (unsigned long long)cur.span.fn,
				      (unsigned long long)y->start);
			/* Held by the answer before, as the child takes it: one
			 * that holds for this symbol too. */
			if (prev.span.lo <= a && a < prev.span.hi &&
			    (prev.span.fn == CP_LINES_ANY_FN || prev.span.fn == y->start)) {
				CHECK(cur.st == prev.st && frames_equal(&cur.chain, &prev.chain) &&
					      spans_equal(&cur.span, &prev.span),
				      "%#llx (%s): inside the span [%#llx, %#llx) of the answer %s:%u (%u deep), "
				      "its own is %s:%u (%u deep), [%#llx, %#llx)",
				      (unsigned long long)a, y->name, (unsigned long long)prev.span.lo,
				      (unsigned long long)prev.span.hi, prev.chain.n ? prev.f[0].file : "-",
				      prev.chain.n ? prev.f[0].line : 0, prev.chain.n, cur.chain.n ? cur.f[0].file : "-",
				      cur.chain.n ? cur.f[0].line : 0, cur.chain.n, (unsigned long long)cur.span.lo,
				      (unsigned long long)cur.span.hi);
				continue;
			}
			spans++;
			with_lines += cur.chain.n > 0;
			/* Where one answer's span ends and the next begins, what
			 * changed: the inline chain, or the row's line. */
			if (prev.span.hi == a && prev.chain.n && cur.chain.n) {
				if (prev.chain.n != cur.chain.n)
					scope_edges++;
				else if (prev.f[0].line != cur.f[0].line)
					row_edges++;
			}
			prev = cur;
			prev.chain.frames = prev.f;
		}
	}
	printf("spans: %zu addresses of this program in %zu spans (%zu with lines, %.1f bytes each); "
	       "%zu end where the inline chain changes, %zu where the line does\n",
	       addrs, spans, with_lines, (double)addrs / (double)spans, scope_edges, row_edges);
	CHECK(addrs >= 2 * spans, "spans of %.1f bytes on average: answers are kept for too few addresses",
	      (double)addrs / (double)spans);
	CHECK(scope_edges >= 5 && row_edges >= 20, "too few edges met: %zu, %zu", scope_edges, row_edges);
	cp_lines_close(d);
	cp_symbols_symtab_free(&t);
}

/* A query about this program at an address no answer of r holds for. */
static struct cp_lines_query uncovered(const struct cp_lines_result *r)
{
	for (size_t i = 0; i < nqueries; i++) {
		uint64_t a = r->spans[i].hi;
		size_t k = 0;
		while (k < nqueries && !(r->spans[k].lo <= a && a < r->spans[k].hi))
			k++;
		if (r->spans[i].lo < a && k == nqueries)
			return (struct cp_lines_query){ 0, a, 0 };
	}
	CHECK(0, "every address is inside a span");
	return queries[0];
}

/* The cache (lines_cache.h): what it keeps is what the DWARF said, and
 * it answers with no reader at all (one that would crash), also for the
 * same file by another path; a file changed since, the same build in
 * another file, a damaged or cut cache file, are
 * not believed; a query it does not hold goes to the reader, and keeps
 * the rest. */
static void test_cache(void)
{
	char cache[128], copy[128], moved[128], file[400];
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	snprintf(copy, sizeof copy, "%s/copy", tmpdir);
	snprintf(moved, sizeof moved, "%s/moved", tmpdir);
	snprintf(file, sizeof file, "%s/cpuprof/lines/%s", cache, bid);
	write_file(copy, img, imglen);
	setenv("XDG_CACHE_HOME", cache, 1);
	struct cp_lines_result r;

	resolve_as(copy, 0, &r);
	check_pristine(&r, "read");
	cp_lines_result_free(&r);
	size_t len;
	unsigned char *kept = read_file(file, &len);
	printf("cache: %zu bytes for %zu addresses\n", len, nqueries);
	resolve_as(copy, 1, &r);
	check_pristine(&r, "from the cache");
	cp_lines_result_free(&r);

	/* One address more, outside every answer's span: the reader is
	 * asked (and crashes), the rest stay. */
	struct cp_lines_query *q = malloc((nqueries + 1) * sizeof *q);
	memcpy(q, queries, nqueries * sizeof *q);
	q[nqueries] = uncovered(&pristine);
	struct cp_lines_object o = { copy, bid, NULL };
	char global[256];
	cp_lines_fault_object = 0;
	CHECK_EQ(cp_lines_resolve(&o, 1, q, nqueries + 1, 30000, &r, global, sizeof global), 0);
	cp_lines_fault_object = -1;
	CHECK(with_lines(&r) == with_lines(&pristine) && r.chains[nqueries].n == 0,
	      "a new address: %zu kept answers, want %zu", with_lines(&r), with_lines(&pristine));
	CHECK(r.has_dwarf[0] && r.why[0] && strstr(r.why[0], "crashed"), "why: %s",
	      r.why[0] ? r.why[0] : "NULL");
	printf("a new address, the reader crashing: %s\n", r.why[0]);
	cp_lines_result_free(&r);
	free(q);

	/* The same file by another path (a symlinked directory, as /lib
	 * and /usr/lib under usrmerge): believed. */
	char linked[160], via[200];
	snprintf(linked, sizeof linked, "%s/linked", tmpdir);
	snprintf(via, sizeof via, "%s/copy", linked);
	CHECK(symlink(tmpdir, linked) == 0, "symlink: %s", strerror(errno));
	resolve_as(via, 1, &r);
	check_pristine(&r, "by a symlinked directory");
	cp_lines_result_free(&r);
	unlink(linked);

	/* The same build at another path; the file changed since. */
	write_file(moved, img, imglen);
	resolve_as(moved, 1, &r);
	CHECK_EQ(with_lines(&r), 0);
	cp_lines_result_free(&r);
	struct timespec later[2] = { { 0, UTIME_OMIT }, { time(NULL) + 100, 0 } };
	CHECK(utimensat(AT_FDCWD, copy, later, 0) == 0, "utimensat");
	resolve_as(copy, 1, &r);
	CHECK_EQ(with_lines(&r), 0);
	cp_lines_result_free(&r);

	/* Read again, then the kept file damaged: any byte, or cut short. */
	resolve_as(copy, 0, &r);
	check_pristine(&r, "read again");
	cp_lines_result_free(&r);
	free(kept);
	kept = read_file(file, &len);
	unsigned seed = 7;
	for (int k = 0; k < 60; k++) {
		unsigned char *p = malloc(len);
		memcpy(p, kept, len);
		size_t at = (size_t)rand_r(&seed) % len, cut = len;
		if (k % 3 == 2)
			cut = at;
		else
			p[at] ^= (unsigned char)(1 + rand_r(&seed) % 255);
		write_file(file, p, cut);
		resolve_as(copy, 1, &r);
		CHECK(with_lines(&r) == 0, "a cache file %s at byte %zu was believed",
		      cut < len ? "cut" : "changed", at);
		cp_lines_result_free(&r);
		free(p);
	}
	write_file(file, kept, len);
	resolve_as(copy, 1, &r);
	check_pristine(&r, "restored");
	cp_lines_result_free(&r);
	free(kept);
	unsetenv("XDG_CACHE_HOME");
}

/* Resolves q[0..n) about this program into r, the reader crashing if
 * `crash`; returns how many queries were handed to a reader. */
static uint64_t resolve_q(const struct cp_lines_query *q, size_t n, int crash, struct cp_lines_result *r)
{
	struct cp_lines_object o = { exe, bid, NULL };
	char global[256];
	uint64_t asked = cp_test_lines_asked;
	cp_lines_fault_object = crash ? 0 : -1;
	cp_lines_fault_kind = 1;
	CHECK_EQ(cp_lines_resolve(&o, 1, q, n, 30000, r, global, sizeof global), 0);
	cp_lines_fault_object = -1;
	CHECK(!global[0], "global: %s", global);
	return cp_test_lines_asked - asked;
}

/* Whether r's answer i is the one lines.c gives at q[i] in this process. */
static int as_local(struct cp_lines_dwarf *d, const struct cp_lines_query *q, const struct cp_lines_result *r,
		    size_t i)
{
	static struct local l;
	local_lookup(d, q[i].addr, q[i].sym_start, &l);
	return frames_equal(&r->chains[i], &l.chain);
}

/* Whether addr is inside one of r's spans (of its n answers). */
static int held(const struct cp_lines_result *r, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (r->spans[i].lo <= addr && addr < r->spans[i].hi)
			return 1;
	return 0;
}

/* Makes the second answer of the lines cache file buf[len] start where
 * the first does, and its CRC good again. */
static void overlap_answers(unsigned char *buf, size_t len)
{
	uint32_t nstrs, n, crc;
	uint16_t l;
	size_t p = 60;
	memcpy(&nstrs, buf + p, 4);
	memcpy(&n, buf + p + 4, 4);
	CHECK(n >= 2, "%u answers kept", n);
	p += 8;
	for (uint32_t i = 0; i < nstrs + 2; i++) {
		memcpy(&l, buf + p, 2);
		p += 2 + (l == 0xffff ? 0 : (size_t)l + 1);
	}
	size_t second = p + 25 + (size_t)buf[p + 24] * 20;
	CHECK(second + 8 <= len, "answers past the end");
	memcpy(buf + second, buf + p, 8);
	crc = (uint32_t)crc32(0, buf, (uInt)(len - 4));
	memcpy(buf + len - 4, &crc, 4);
}

/* The cache by span: a second address of a kept answer's span is answered
 * with no reader at all; an address past its end, in the next row or
 * inline scope, is not answered by it; nor is one whose symbol starts
 * elsewhere.  In one batch, the child asks libdw once per span.  A file of
 * the format before is not believed. */
static void test_cache_ranges(void)
{
	char cache[128], file[400], why[256];
	snprintf(cache, sizeof cache, "%s/rcache", tmpdir);
	snprintf(file, sizeof file, "%s/cpuprof/lines/%s", cache, bid);
	setenv("XDG_CACHE_HOME", cache, 1);
	struct cp_lines_dwarf *d;
	CHECK_EQ(cp_lines_open(exe, bid, &d, why, sizeof why), 0);

	/* The function starts, read. */
	struct cp_lines_query *q1 = malloc(nqueries * sizeof *q1), *q2 = malloc((nqueries + 1) * sizeof *q2),
			      *q3 = malloc(nqueries * sizeof *q3);
	size_t n1 = 0, n2 = 0, n3 = 0, scope_edges = 0, row_edges = 0;
	for (size_t i = 0; i < nqueries; i++)
		if (queries[i].addr == queries[i].sym_start)
			q1[n1++] = queries[i];
	struct cp_lines_result r1, r2, r3, r4;
	CHECK_EQ(resolve_q(q1, n1, 0, &r1), n1);

	/* The last address of each span wider than a byte, the reader
	 * crashing if asked: the cache answers every one. */
	for (size_t i = 0; i < n1; i++)
		if (r1.chains[i].n && r1.spans[i].hi - 1 > q1[i].addr)
			q2[n2++] = (struct cp_lines_query){ 0, r1.spans[i].hi - 1, q1[i].sym_start };
	CHECK(n2 >= 20, "only %zu spans wider than a byte", n2);
	CHECK_EQ(resolve_q(q2, n2, 1, &r2), 0);
	for (size_t i = 0; i < n2; i++)
		CHECK(r2.chains[i].n && as_local(d, q2, &r2, i), "%#llx: not answered from the cache as lines.c "
		      "answers it", (unsigned long long)q2[i].addr);
	printf("cache by span: %zu second addresses answered with no reader\n", n2);

	/* The address just past each span, where lines.c gives another
	 * answer (the next row, or another inline scope), held by no kept
	 * span: the reader is asked, and its answer is not the neighbour's.
	 * Asked with no symbol, which every span holds for. */
	for (size_t i = 0; i < n1; i++) {
		static struct local before, at;
		uint64_t a = r1.spans[i].hi;
		if (!r1.chains[i].n || held(&r1, n1, a))
			continue;
		local_lookup(d, a - 1, 0, &before);
		local_lookup(d, a, 0, &at);
		if (!at.chain.n || frames_equal(&before.chain, &at.chain))
			continue;
		scope_edges += before.chain.n != at.chain.n;
		row_edges += before.chain.n == at.chain.n;
		q3[n3++] = (struct cp_lines_query){ 0, a, 0 };
	}
	CHECK(scope_edges >= 1 && row_edges >= 5, "neighbours: %zu in another inline scope, %zu in another row",
	      scope_edges, row_edges);
	CHECK_EQ(resolve_q(q3, n3, 0, &r3), n3);
	for (size_t i = 0; i < n3; i++)
		CHECK(as_local(d, q3, &r3, i), "%#llx: answered as its neighbour below, not as lines.c answers it",
		      (unsigned long long)q3[i].addr);
	printf("neighbours: %zu past a span, %zu of them in another inline scope, asked of the reader\n", n3,
	       scope_edges);

	/* A symbol that starts elsewhere than the function of a kept span:
	 * the span does not hold for it (the reader finds the mismatch). */
	q2[n2] = q2[0];
	q2[n2].sym_start++;
	CHECK_EQ(resolve_q(q2, n2 + 1, 0, &r4), 1);
	CHECK(r4.chains[n2].n == 0 && r4.chains[0].n, "another symbol's start: %u frames", r4.chains[n2].n);
	cp_lines_result_free(&r4);

	/* The format before (version 1): not believed. */
	size_t len;
	unsigned char *kept = read_file(file, &len);
	CHECK(len > 16 && !memcmp(kept, "CPLINES\n", 8), "no lines cache file %s", file);
	uint32_t v1 = 1, crc;
	memcpy(kept + 12, &v1, 4);
	crc = (uint32_t)crc32(0, kept, (uInt)(len - 4));
	memcpy(kept + len - 4, &crc, 4);
	write_file(file, kept, len);
	CHECK_EQ(resolve_q(q2, n2, 1, &r4), n2);
	CHECK(r4.chains[0].n == 0, "a file of version 1 was believed");
	cp_lines_result_free(&r4);
	free(kept);

	/* Every byte of every function in one batch: libdw is asked once a
	 * span, each other answer is the one before it; then all from the
	 * cache. */
	snprintf(cache, sizeof cache, "%s/rcache2", tmpdir);
	snprintf(file, sizeof file, "%s/cpuprof/lines/%s", cache, bid);
	setenv("XDG_CACHE_HOME", cache, 1);
	struct cp_symtab t;
	char b[sizeof bid];
	CHECK_EQ(cp_symbols_read_file(exe, &t, b), 0);
	size_t n5 = 0;
	for (size_t i = 0; i < t.n; i++)
		n5 += t.syms[i].size;
	struct cp_lines_query *q5 = malloc(n5 * sizeof *q5);
	n5 = 0;
	for (size_t i = 0; i < t.n; i++)
		for (uint64_t a = t.syms[i].start; a < t.syms[i].start + t.syms[i].size; a++)
			q5[n5++] = (struct cp_lines_query){ 0, a, t.syms[i].start };
	cp_symbols_symtab_free(&t);
	uint64_t looked = cp_test_lines_looked_up;
	struct cp_lines_result r5;
	CHECK_EQ(resolve_q(q5, n5, 0, &r5), n5);
	looked = cp_test_lines_looked_up - looked;
	size_t lines5 = 0;
	for (size_t i = 0; i < n5; i++) {
		CHECK(as_local(d, q5, &r5, i), "%#llx: the child's answer is not lines.c's",
		      (unsigned long long)q5[i].addr);
		lines5 += r5.chains[i].n > 0;
	}
	printf("one batch of %zu addresses (%zu with lines): libdw asked %llu times\n", n5, lines5,
	       (unsigned long long)looked);
	CHECK(looked > 0 && looked * 4 < n5, "libdw asked %llu times for %zu addresses", (unsigned long long)looked,
	      n5);
	cp_lines_result_free(&r5);
	CHECK_EQ(resolve_q(q5, n5, 1, &r5), 0);
	for (size_t i = 0; i < n5; i++)
		CHECK(as_local(d, q5, &r5, i), "%#llx: the cache's answer is not lines.c's", (unsigned long long)q5[i].addr);
	kept = read_file(file, &len);
	printf("cache file: %zu bytes for the %zu addresses\n", len, n5);
	cp_lines_result_free(&r5);

	/* Its second answer made to start where the first does, the CRC
	 * made good: spans that overlap are not believed. */
	overlap_answers(kept, len);
	write_file(file, kept, len);
	CHECK_EQ(resolve_q(q5, 1000, 1, &r5), 1000);
	CHECK(r5.chains[0].n == 0, "a file whose spans overlap was believed");
	cp_lines_result_free(&r5);
	free(kept);

	/* In the child's batch, a symbol that starts elsewhere than the
	 * function of the answer before: its span does not hold for it (here
	 * the first 2,000 bytes, and 20 of them again with a symbol start one
	 * byte on; without a cache, which would keep nothing of an object
	 * with a mismatch). */
	unsetenv("XDG_CACHE_HOME");
	size_t n6 = 2000, wrong = 0;
	struct cp_lines_query *q6 = malloc((n6 + 20) * sizeof *q6);
	memcpy(q6, q5, n6 * sizeof *q6);
	for (size_t i = 1; i < n6 && wrong < 20; i++)
		if (q5[i].addr == q5[i - 1].addr + 1 && q5[i].sym_start == q5[i - 1].sym_start && i % 50 == 0) {
			q6[n6 + wrong] = q5[i];
			q6[n6 + wrong++].sym_start++;
		}
	CHECK_EQ(resolve_q(q6, n6 + wrong, 0, &r5), n6 + wrong);
	for (size_t i = 0; i < n6 + wrong; i++)
		CHECK(i < n6 ? as_local(d, q6, &r5, i) : r5.chains[i].n == 0,
		      "%#llx, a symbol at %#llx: %u frames", (unsigned long long)q6[i].addr,
		      (unsigned long long)q6[i].sym_start, r5.chains[i].n);
	cp_lines_result_free(&r5);
	free(q6);

	cp_lines_result_free(&r1);
	cp_lines_result_free(&r2);
	cp_lines_result_free(&r3);
	free(q1);
	free(q2);
	free(q3);
	free(q5);
	cp_lines_close(d);
	unsetenv("XDG_CACHE_HOME");
}

/* Mutations of one debug section of a copy of libcpuprof.so. */
static void fuzz_section(const char *name, int rounds, unsigned *seed)
{
	ElfW(Shdr) *sh = section(fimg, name);
	CHECK(sh != NULL && sh->sh_size > 64, "section %s", name);
	size_t idx = (size_t)(sh - (ElfW(Shdr) *)(fimg + ((ElfW(Ehdr) *)fimg)->e_shoff));
	char path[128];
	snprintf(path, sizeof path, "%s/fuzz", tmpdir);
	unsigned char *p = malloc(fimglen);
	size_t crashed = 0, rejected = 0, same = 0, none = 0, differ = 0, tdiffer = 0;
	double worst = 0;
	for (int round = 0; round < rounds; round++) {
		memcpy(p, fimg, fimglen);
		ElfW(Shdr) *s = (ElfW(Shdr) *)(p + ((ElfW(Ehdr) *)p)->e_shoff) + idx;
		int truncate = round % 3 == 0;
		if (truncate) {
			/* The section cut short, at a random length. */
			s->sh_size = (uint64_t)rand_r(seed) % s->sh_size;
		} else {
			int flips = 1 + rand_r(seed) % 8;
			for (int k = 0; k < flips; k++)
				p[s->sh_offset + (uint64_t)rand_r(seed) % s->sh_size] ^=
					(unsigned char)(1u << (rand_r(seed) % 8));
		}
		write_file(path, p, fimglen);
		struct cp_lines_object o = { path, "", NULL };
		struct cp_lines_result r;
		char global[256];
		double t0 = now_s();
		CHECK_EQ(cp_lines_resolve(&o, 1, fq, nfq, 20000, &r, global, sizeof global), 0);
		double dt = now_s() - t0;
		worst = dt > worst ? dt : worst;
		CHECK(dt < 25, "%s round %d: %.1f s", name, round, dt);
		crashed += r.why[0] && strstr(r.why[0], "crashed") != NULL;
		rejected += !r.has_dwarf[0];
		for (size_t i = 0; i < nfq; i++) {
			if (!r.chains[i].n)
				none++;
			else if (frames_equal(&r.chains[i], &fpristine.chains[i]))
				same++;
			else if (truncate)
				tdiffer++;
			else
				differ++;
			if (truncate && r.chains[i].n && !frames_equal(&r.chains[i], &fpristine.chains[i]))
				CHECK(0, "%s cut to %llu bytes: address %#llx has other lines than the intact "
				      "file's (%s:%u, not %s:%u)", name, (unsigned long long)s->sh_size,
				      (unsigned long long)fq[i].addr, r.chains[i].frames[0].file,
				      r.chains[i].frames[0].line,
				      fpristine.chains[i].n ? fpristine.chains[i].frames[0].file : "-",
				      fpristine.chains[i].n ? fpristine.chains[i].frames[0].line : 0);
		}
		cp_lines_result_free(&r);
	}
	printf("%s, %d mutations: reader crashed %zu times, object without lines %zu times; "
	       "answers: %zu as intact, %zu none, %zu other (all from bit flips); slowest %.2f s\n",
	       name, rounds, crashed, rejected, same, none, differ + tdiffer, worst);
	free(p);
}

static void cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0, "readlink");
	exe[n] = '\0';
	if (argc == 2 && !strcmp(argv[1], "--no-libdw"))
		return no_libdw_main();
	char why[256];
	if (cp_lines_libdw(why, sizeof why) != 0)
		SKIP("%s", why);
	/* No cache but test_cache's: every other test reads the DWARF. */
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	snprintf(tmpdir, sizeof tmpdir, "/tmp/unit_lines.XXXXXX");
	CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp");
	atexit(cleanup);
	struct cp_symtab t;
	CHECK_EQ(cp_symbols_read_file(exe, &t, bid), 0);
	cp_symbols_symtab_free(&t);
	CHECK(strlen(bid) >= 16, "build ID");
	img = read_file(exe, &imglen);
	queries = make_queries(exe, &nqueries);

	double t0 = now_s();
	test_self();
	test_spans();
	test_debug_files();
	test_mismatch();
	test_child_failures();
	test_no_libdw();
	test_cache();
	test_cache_ranges();
	printf("checks: %.2f s\n", now_s() - t0);
	t0 = now_s();
	char lib[256];
	snprintf(lib, sizeof lib, "%s/libcpuprof.so", getenv("B") ? getenv("B") : "build");
	fimg = read_file(lib, &fimglen);
	fq = make_queries(lib, &nfq);
	struct cp_lines_object o = { lib, "", NULL };
	CHECK_EQ(cp_lines_resolve(&o, 1, fq, nfq, 30000, &fpristine, why, sizeof why), 0);
	size_t fl = 0;
	for (size_t i = 0; i < nfq; i++)
		fl += fpristine.chains[i].n > 0;
	printf("fuzzing %s: %zu of %zu addresses with lines\n", lib, fl, nfq);
	/* All but libiberty's demangler, linked in without DWARF: about a
	 * fifth of the library's functions. */
	CHECK(fl * 10 > nfq * 6, "%s: only %zu of %zu addresses with lines", lib, fl, nfq);
	unsigned seed = 20261201;
	const char *sections[] = { ".debug_info", ".debug_line", ".debug_abbrev", ".debug_str" };
	for (size_t i = 0; i < 4; i++)
		fuzz_section(sections[i], 150, &seed);
	printf("fuzz: %.2f s\n", now_s() - t0);
	cp_lines_result_free(&pristine);
	cp_lines_result_free(&fpristine);
	free(fq);
	free(fimg);
	free(queries);
	free(img);
	printf("ok\n");
	return 0;
}
