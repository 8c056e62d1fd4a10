/*
 * unit_pprof.c -- tests the aggregated profile (stacktab.c), in-process
 * symbolization (symbols.c) and the pprof writer (pprof_write.c, protobuf.c)
 * end to end: a profile is built by hand from PCs inside this program and
 * libc, written with cp_pprof_write() and read back with `go tool pprof`,
 * which must show our function names without symbolizing anything itself.
 * Truncated and corrupted ELF files must parse to "no symbols" without a
 * crash, and allocation failures (injected by interposing malloc) must
 * leave a stack table unchanged and no file behind; a table the writer
 * may spend is freed before the lines child is forked.  Skips (77) if Go is
 * not installed, after the tests that do not need it.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../check.h"
#include "profile/pprof_write.h"
#include "profile/stacktab.h"
#include "symbolize/demangle.h"
#include "symbolize/symbols.h"

/* ---- Allocation-failure injection ------------------------------------ */

/* Interposing malloc, calloc and realloc here makes every allocation of
 * the library (and of libc on its behalf) pass through alloc_fails().
 * While alloc_seq >= 0 allocations are counted and the one numbered
 * fail_at fails. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static long alloc_seq = -1, fail_at = -1;
/* While alloc_watch is set, the largest array grown (realloc). */
static int alloc_watch;
static size_t alloc_max;

static int alloc_fails(void)
{
	if (alloc_seq < 0 || alloc_seq++ != fail_at)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return alloc_fails() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	return alloc_fails() ? NULL : __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (alloc_watch && n > alloc_max)
		alloc_max = n;
	return alloc_fails() ? NULL : __libc_realloc(p, n);
}

/* Starts counting allocations; the one numbered k (from 0) will fail. */
static void fail_arm(long k)
{
	fail_at = k;
	alloc_seq = 0;
}

/* Stops injecting; returns how many allocations were counted. */
static long fail_disarm(void)
{
	long n = alloc_seq;
	alloc_seq = -1;
	fail_at = -1;
	return n;
}

/* ---- Functions whose addresses go into the test profiles ------------- */

static volatile int sink;

__attribute__((noinline, used)) void fn_alpha(int n)
{
	for (int i = 0; i < n; i++)
		sink += i * 3 + (sink >> 2);
}

__attribute__((noinline, used)) void fn_beta(int n)
{
	for (int i = 0; i < n; i++) {
		fn_alpha(i);
		sink ^= i;
	}
}

__attribute__((noinline, used)) void fn_gamma(int n)
{
	for (int i = 0; i < n; i++) {
		fn_beta(i);
		sink -= i * 7;
	}
}

#define A(f, off) ((uintptr_t)(void *)(f) + (off))

/* ---- Helpers ---------------------------------------------------------- */

static char tmpdir[64];
static char exe[4096];

/* Runs cmd through the shell and returns its standard output (malloc'd);
 * the exit status goes to *status. */
static char *run(const char *cmd, int *status)
{
	FILE *f = popen(cmd, "r");
	CHECK(f != NULL, "popen %s: %s", cmd, strerror(errno));
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	CHECK(out != NULL, "out of memory");
	size_t r;
	while ((r = fread(out + len, 1, cap - len - 1, f)) > 0) {
		len += r;
		if (cap - len - 1 == 0) {
			cap *= 2;
			out = realloc(out, cap);
			CHECK(out != NULL, "out of memory");
		}
	}
	out[len] = '\0';
	*status = pclose(f);
	return out;
}

/* Number of entries in dir other than . and .. */
static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	CHECK(d != NULL, "opendir %s", dir);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Reads a whole gzip file; returns the uncompressed size, -1 if bad. */
static long gunzip_size(const char *path)
{
	gzFile g = gzopen(path, "rb");
	if (!g)
		return -1;
	char buf[1 << 15];
	long total = 0;
	int r;
	while ((r = gzread(g, buf, sizeof buf)) > 0)
		total += r;
	int bad = r < 0;
	gzclose(g);
	return bad ? -1 : total;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 1 if t holds exactly this stack, with these totals. */
static int has_stack(const struct cp_stacktab *t, const uintptr_t *pcs,
		     uint32_t n, uint32_t flags, uint64_t count, uint64_t ns)
{
	for (size_t i = 0; i < t->len; i++) {
		const struct cp_stack *s = t->items[i];
		static uintptr_t got[2048];
		if (s->n != n || s->flags != flags || n > 2048)
			continue;
		cp_stack_pcs(s, got);
		if (n == 0 || memcmp(got, pcs, n * sizeof *pcs) == 0)
			return s->count == count && s->ns == ns;
	}
	return 0;
}

/* ---- stacktab ---------------------------------------------------------- */

static void test_stacktab(void)
{
	struct cp_stacktab t;
	uintptr_t a[] = { 0x1000, 0x2000, 0x3000 };
	uintptr_t b[] = { 0x1000, 0x3000, 0x2000 };

	cp_stacktab_init(&t);
	CHECK_EQ(cp_stacktab_add(&t, a, 3, 0, 1, 10), 0);
	CHECK_EQ(cp_stacktab_add(&t, a, 3, 0, 2, 20), 0);
	CHECK_EQ(t.len, 1); /* duplicates merge */
	CHECK(has_stack(&t, a, 3, 0, 3, 30), "merged totals");
	CHECK_EQ(cp_stacktab_add(&t, a, 3, CP_STACK_TRUNCATED, 1, 5), 0);
	CHECK_EQ(t.len, 2); /* different flags do not */
	CHECK_EQ(cp_stacktab_add(&t, b, 3, 0, 1, 1), 0);
	CHECK_EQ(cp_stacktab_add(&t, a, 2, 0, 1, 1), 0);
	CHECK_EQ(cp_stacktab_add(&t, NULL, 0, 0, 4, 4), 0);
	CHECK_EQ(cp_stacktab_add(&t, NULL, 0, 0, 1, 1), 0);
	CHECK_EQ(t.len, 5);
	CHECK(has_stack(&t, NULL, 0, 0, 5, 5), "empty stack");
	CHECK_EQ(t.total_count, 3 + 1 + 1 + 1 + 5);
	CHECK_EQ(t.total_ns, 30 + 5 + 1 + 1 + 5);
	uintptr_t first[3];
	cp_stack_pcs(t.items[0], first);
	CHECK(t.items[0]->n == 3 && first[2] == 0x3000,
	      "insertion order");

	/* Growth keeps every entry findable. */
	for (uintptr_t i = 0; i < 5000; i++) {
		uintptr_t s[2] = { i, i * 7 };
		CHECK_EQ(cp_stacktab_add(&t, s, 2, 0, 1, 1), 0);
	}
	for (uintptr_t i = 0; i < 5000; i += 3) {
		uintptr_t s[2] = { i, i * 7 };
		CHECK_EQ(cp_stacktab_add(&t, s, 2, 0, 1, 1), 0);
	}
	CHECK_EQ(t.len, 5005);
	for (uintptr_t i = 0; i < 5000; i++) {
		uintptr_t s[2] = { i, i * 7 };
		CHECK(has_stack(&t, s, 2, 0, 1 + (i % 3 == 0), 1 + (i % 3 == 0)),
		      "stack %zu after growth", (size_t)i);
	}

	cp_stacktab_clear(&t);
	CHECK(t.len == 0 && t.total_count == 0 && t.total_ns == 0, "clear");
	CHECK_EQ(cp_stacktab_add(&t, a, 3, 0, 1, 10), 0);
	CHECK(t.len == 1 && has_stack(&t, a, 3, 0, 1, 10), "reuse after clear");

	/* Stacks are kept as differences: any address, near or far, up or
	 * down, comes back as it went in, and a stack that differs in one
	 * frame is another. */
	uintptr_t far[] = { 0, UINTPTR_MAX, 1, (uintptr_t)1 << 63, 0x7fffffffffff, (uintptr_t)0xffffffff81000000ull,
			    0x401000, 0x400fff, 0 };
	uintptr_t near[sizeof far / sizeof far[0]];
	memcpy(near, far, sizeof far);
	near[5]++;
	CHECK_EQ(cp_stacktab_add(&t, far, 9, 0, 1, 1), 0);
	CHECK_EQ(cp_stacktab_add(&t, near, 9, 0, 1, 2), 0);
	CHECK(t.len == 3 && has_stack(&t, far, 9, 0, 1, 1) && has_stack(&t, near, 9, 0, 1, 2), "far addresses");
	/* A stack bigger than a block of stacks (4 KiB first): a block of
	 * its own, and the stacks after it still kept. */
	static uintptr_t deep[2000];
	for (size_t i = 0; i < 2000; i++)
		deep[i] = (uintptr_t)(i & 1 ? 0x7f0000000000ull : 0x400000) + i;
	CHECK_EQ(cp_stacktab_add(&t, deep, 2000, 0, 1, 3), 0);
	CHECK_EQ(cp_stacktab_add(&t, deep + 1, 1999, 0, 1, 4), 0);
	CHECK_EQ(cp_stacktab_add(&t, far, 9, 0, 1, 1), 0);
	CHECK(t.len == 5 && has_stack(&t, deep, 2000, 0, 1, 3) && has_stack(&t, deep + 1, 1999, 0, 1, 4) &&
		      has_stack(&t, far, 9, 0, 2, 2),
	      "deep stacks");
	cp_stacktab_free(&t);
}

/* An allocation failure in cp_stacktab_add leaves the table as it was, at
 * the point where the items array and the index must both grow: each of
 * the two may fail, on a fresh table each time.  The new stack itself is
 * no malloc: it goes into the block of stacks being filled, which has
 * room (issue 32: a malloc per stack cost 16 bytes and more each). */
static void test_stacktab_nomem(void)
{
	struct cp_stacktab t;
	uintptr_t fresh[3] = { 7, 8, 9 };
	int failures = 0;
	for (long k = 0;; k++) {
		cp_stacktab_init(&t);
		for (uintptr_t i = 0; i < 64; i++)
			CHECK_EQ(cp_stacktab_add(&t, &i, 1, 0, 1, 2), 0);
		CHECK_EQ(t.len, t.cap); /* the next new stack grows all */
		fail_arm(k);
		int rc = cp_stacktab_add(&t, fresh, 3, 0, 5, 6);
		fail_disarm();
		if (rc == 0)
			break;
		CHECK_EQ(rc, -ENOMEM);
		failures++;
		CHECK(t.len == 64 && t.total_count == 64 && t.total_ns == 128,
		      "table changed by a failed add (k=%ld)", k);
		for (uintptr_t i = 0; i < 64; i++)
			CHECK(has_stack(&t, &i, 1, 0, 1, 2), "lost stack %zu",
			      (size_t)i);
		CHECK(!has_stack(&t, fresh, 3, 0, 5, 6), "half-added stack");
		/* And the table still works. */
		CHECK_EQ(cp_stacktab_add(&t, fresh, 3, 0, 5, 6), 0);
		CHECK(t.len == 65 && has_stack(&t, fresh, 3, 0, 5, 6),
		      "add after a failure");
		cp_stacktab_free(&t);
	}
	CHECK(failures == 2, "expected 2 allocations, %d failed", failures);
	CHECK(t.len == 65 && has_stack(&t, fresh, 3, 0, 5, 6), "added");
	for (uintptr_t i = 0; i < 64; i++)
		CHECK(has_stack(&t, &i, 1, 0, 1, 2), "stack %zu after grow",
		      (size_t)i);
	/* Adding to an existing stack allocates nothing. */
	fail_arm(0);
	int rc = cp_stacktab_add(&t, fresh, 3, 0, 1, 1);
	CHECK_EQ(fail_disarm(), 0);
	CHECK_EQ(rc, 0);
	cp_stacktab_free(&t);
}

/* ---- symbols ------------------------------------------------------------ */

/* The lookup rule, on a hand-made table. */
static void test_symtab_lookup(void)
{
	struct cp_sym syms[] = {
		{ 0x1000, 0x10, "a" },
		{ 0x1020, 0x20, "b" },
		{ 0x1100, 0x100, "c" },
		{ 0x1110, 0x10, "nested" },
	};
	struct cp_symtab t = { syms, 4, NULL };
	const struct cp_sym *s;
#define NAME(addr) ((s = cp_symbols_symtab_lookup(&t, addr)) ? s->name : "(none)")
	CHECK(!strcmp(NAME(0xfff), "(none)"), "below all: %s", s->name);
	CHECK(!strcmp(NAME(0x1000), "a"), "start of a");
	CHECK(!strcmp(NAME(0x100f), "a"), "end of a");
	CHECK(!strcmp(NAME(0x1010), "(none)"), "gap after a: %s", s->name);
	CHECK(!strcmp(NAME(0x1030), "b"), "b");
	CHECK(!strcmp(NAME(0x1040), "(none)"), "past b: %s", s->name);
	CHECK(!strcmp(NAME(0x1115), "nested"), "nested");
	CHECK(!strcmp(NAME(0x1150), "c"), "c around nested");
	CHECK(!strcmp(NAME(0x1200), "(none)"), "past c");
#undef NAME
	t.n = 0;
	CHECK(cp_symbols_symtab_lookup(&t, 0x1000) == NULL, "empty table");
}

/* Malformed ELF files give an error or no symbols, never a crash. */
static void test_symbols_malformed(void)
{
	struct cp_symtab t;
	char path[128], bid[2 * SYMBOLS_BUILD_ID_MAX + 1];
	size_t len;
	unsigned char *img = read_file("/proc/self/exe", &len);

	/* The intact image reads, with our functions in it. */
	CHECK_EQ(cp_symbols_read_image(img, len, &t, bid), 0);
	int found = 0;
	for (size_t i = 0; i < t.n; i++)
		found += !strcmp(t.syms[i].name, "fn_alpha");
	CHECK(found == 1, "fn_alpha in our own image (%d)", found);
	CHECK(strlen(bid) == 40, "build ID of our image: \"%s\"", bid);
	cp_symbols_symtab_free(&t);

	/* Truncated copies, through files (pread) and memory. */
	snprintf(path, sizeof path, "%s/trunc.elf", tmpdir);
	size_t cuts[] = { 0, 1, 4, 16, 63, 64, 65, 200, 1000, 4096,
			  len / 3, len / 2, len - 4096, len - 100, len - 1 };
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
		write_file(path, img, cuts[i]);
		int rc = cp_symbols_read_file(path, &t, bid);
		CHECK(rc == -ENOEXEC || (rc == 0 && t.n == 0) ||
			      (rc == 0 && cuts[i] > len / 2),
		      "truncated at %zu: rc %d, %zu symbols", cuts[i], rc, t.n);
		cp_symbols_symtab_free(&t);
		rc = cp_symbols_read_image(img, cuts[i], &t, NULL);
		CHECK(rc == -ENOEXEC || rc == 0, "rc %d", rc);
		cp_symbols_symtab_free(&t);
	}

	/* An ELF header followed by random bytes. */
	unsigned char junk[8192];
	srand(12345);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof junk; i++)
			junk[i] = (unsigned char)rand();
		memcpy(junk, img, 16 + (round % 2) * 48); /* ident, or all */
		int rc = cp_symbols_read_image(junk, sizeof junk, &t, bid);
		CHECK(rc == -ENOEXEC || rc == 0, "rc %d", rc);
		cp_symbols_symtab_free(&t);
	}
	write_file(path, junk, sizeof junk);
	int rc = cp_symbols_read_file(path, &t, NULL);
	CHECK(rc == -ENOEXEC || rc == 0, "junk file: rc %d", rc);
	cp_symbols_symtab_free(&t);

	/* Random corruption of the header, program and section headers and
	 * the symbol tables of a real image. */
	unsigned char *bad = malloc(len);
	CHECK(bad != NULL, "out of memory");
	for (int round = 0; round < 2000; round++) {
		memcpy(bad, img, len);
		int nflips = 1 + rand() % 8;
		for (int f = 0; f < nflips; f++) {
			size_t at;
			switch (rand() % 3) {
			case 0: at = (size_t)rand() % 64; break;     /* ehdr */
			case 1: at = 64 + (size_t)rand() % 4096; break; /* phdrs.. */
			default: at = len - 1 - (size_t)rand() % (len < 8192 ? len : 8192);
			}
			bad[at] = (unsigned char)rand();
		}
		rc = cp_symbols_read_image(bad, len, &t, bid);
		CHECK(rc == -ENOEXEC || rc == 0, "corrupt: rc %d", rc);
		for (size_t i = 0; i < t.n; i++)
			CHECK(strlen(t.syms[i].name) > 0, "empty name");
		cp_symbols_symtab_free(&t);
	}
	free(bad);

	/* Not an ELF file, no file, a directory. */
	write_file(path, "#!/bin/sh\necho hello\n", 21);
	CHECK_EQ(cp_symbols_read_file(path, &t, NULL), -ENOEXEC);
	snprintf(path, sizeof path, "%s/absent", tmpdir);
	CHECK_EQ(cp_symbols_read_file(path, &t, NULL), -ENOENT);
	CHECK_EQ(cp_symbols_read_file(tmpdir, &t, NULL), -ENOEXEC);
	free(img);
}

/* The build ID of file `path` according to readelf, or "" if unknown. */
static void readelf_build_id(const char *path, char *out, size_t outlen)
{
	char cmd[4200];
	int st;
	out[0] = '\0';
	snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
	char *text = run(cmd, &st);
	const char *p = strstr(text, "Build ID: ");
	if (p)
		sscanf(p + 10, "%127[0-9a-f]", out);
	(void)outlen;
	free(text);
}

static const struct cp_object *object_named(const struct cp_symbols *s,
					    const char *path)
{
	for (size_t i = 0; i < s->nobjs; i++)
		if (!strcmp(s->objs[i].path, path))
			return &s->objs[i];
	return NULL;
}

static void test_symbols(void)
{
	struct cp_symbols *s = cp_symbols_load();
	CHECK(s != NULL, "cp_symbols_load");
	uintptr_t start = 0;

	const char *name = cp_symbols_name_for(s, A(fn_alpha, 4), &start);
	CHECK(name && !strcmp(name, "fn_alpha"), "fn_alpha+4 is %s",
	      name ? name : "NULL");
	CHECK(start == A(fn_alpha, 0), "start of fn_alpha");
	name = cp_symbols_name_for(s, A(fn_beta, 0), NULL);
	CHECK(name && !strcmp(name, "fn_beta"), "fn_beta is %s",
	      name ? name : "NULL");
	name = cp_symbols_name_for(s, A(test_symbols, 1), NULL);
	CHECK(name && !strcmp(name, "test_symbols"), "static function: %s",
	      name ? name : "NULL");

	const struct cp_segment *g = cp_symbols_segment_for(s, A(fn_alpha, 4));
	CHECK(g != NULL, "segment of fn_alpha");
	CHECK(!strcmp(g->obj->path, exe), "path %s, want %s", g->obj->path,
	      exe);
	CHECK(g->start <= A(fn_alpha, 4) && A(fn_alpha, 4) < g->limit,
	      "segment bounds");
	CHECK(g->start % 4096 == 0 && g->file_offset % 4096 == 0,
	      "page-aligned segment");
	char bid[128];
	readelf_build_id(exe, bid, sizeof bid);
	if (bid[0])
		CHECK(!strcmp(bid, g->obj->build_id), "build ID %s, readelf %s",
		      g->obj->build_id, bid);
	else
		CHECK(strlen(g->obj->build_id) >= 16, "build ID \"%s\"",
		      g->obj->build_id);

	void *m = dlsym(RTLD_DEFAULT, "malloc");
	CHECK(m != NULL, "dlsym malloc");
	/* Our own malloc interposes libc's: ask for libc's by its alias. */
	void *lm = dlsym(RTLD_NEXT, "malloc");
	CHECK(lm != NULL, "dlsym RTLD_NEXT malloc");
	name = cp_symbols_name_for(s, (uintptr_t)lm + 3, NULL);
	CHECK(name && strstr(name, "malloc"), "libc malloc+3 is %s",
	      name ? name : "NULL");
	g = cp_symbols_segment_for(s, (uintptr_t)lm);
	CHECK(g && strstr(g->obj->path, "libc.so"), "libc segment %s",
	      g ? g->obj->path : "NULL");
	CHECK(g->obj->build_id[0], "libc has a build ID");

	CHECK(cp_symbols_segment_for(s, 0x10) == NULL, "no object at 0x10");
	CHECK(cp_symbols_name_for(s, 0x10, NULL) == NULL, "no name at 0x10");
	int stackvar;
	CHECK(cp_symbols_segment_for(s, (uintptr_t)&stackvar) == NULL,
	      "the stack is not code");

	/* A symbol without a size (_init, crtstuff's frame_dummy) ends at
	 * the next symbol or its section's end: _init, alone in .init, does
	 * not swallow the PLT that follows. */
	const struct cp_object *me = cp_symbols_segment_for(s, A(fn_alpha, 0))->obj;
	const struct cp_symtab *mine = cp_symbols_object_symtab(s, me);
	for (size_t i = 0; i < mine->n; i++) {
		const struct cp_sym *sym = &mine->syms[i];
		CHECK(sym->size > 0, "%s has no size", sym->name);
		CHECK(i + 1 == mine->n ||
			      sym->start < mine->syms[i + 1].start,
		      "unsorted at %s", sym->name);
		if (strcmp(sym->name, "_init") != 0)
			continue;
		CHECK(sym->size < 0x100, "_init of size %zu", (size_t)sym->size);
		name = cp_symbols_name_for(s, me->bias + sym->start + sym->size + 0x10,
					NULL);
		CHECK(!name || strcmp(name, "_init"), "the PLT is _init");
	}

	/* The vDSO is parsed from memory. */
	if (getauxval(AT_SYSINFO_EHDR)) {
		const struct cp_object *v = object_named(s, "[vdso]");
		CHECK(v != NULL, "no [vdso] object");
		const struct cp_symtab *vt = cp_symbols_object_symtab(s, v);
		CHECK(vt->n > 0, "no vDSO symbols");
		CHECK(v->build_id[0], "no vDSO build ID");
		const struct cp_sym *sym = &vt->syms[0];
		name = cp_symbols_name_for(s, v->bias + sym->start, NULL);
		CHECK(name && !strcmp(name, sym->name), "vDSO %s is %s",
		      sym->name, name ? name : "NULL");
	}

	/* Sorted, non-overlapping segments. */
	for (size_t i = 1; i < s->nsegs; i++)
		CHECK(s->segs[i - 1].limit <= s->segs[i].start,
		      "segments %zu and %zu overlap", i - 1, i);
	cp_symbols_free(s);
}

/* Demangling with the demangler built in (libiberty's), whatever this
 * process links: C++, and Rust's legacy (hash dropped) and v0 manglings,
 * as `addr2line -C` prints them. */
static void test_demangle(void)
{
	static const struct {
		const char *mangled, *want;
	} cases[] = {
		{ "_ZN3foo3barEi", "foo::bar(int)" },
		{ "_ZNK3app5CacheINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEE4sizeEv",
		  "app::Cache<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >::size() const" },
		{ "_ZN5names3hot6engine5Mixer5churn17h14ca46aeefb662e3E", "names::hot::engine::Mixer::churn" },
		{ "_ZN70_$LT$names..hot..engine..Mixer$u20$as$u20$names..hot..engine..Step$GT$4step17ha1c0fcbf40887a05E",
		  "<names::hot::engine::Mixer as names::hot::engine::Step>::step" },
		{ "_RNvMNtNtCsbZShwAlgmsH_5names3hot6engineNtB2_5Mixer5churn", "<names::hot::engine::Mixer>::churn" },
		{ "_RNvXs_NtNtCsbZShwAlgmsH_5names3hot6engineNtB4_5MixerNtB4_4Step4step",
		  "<names::hot::engine::Mixer as names::hot::engine::Step>::step" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *d = cp_demangle(cases[i].mangled);
		CHECK(d && !strcmp(d, cases[i].want), "%s demangled to %s, want %s", cases[i].mangled,
		      d ? d : "NULL", cases[i].want);
		free(d);
	}
	CHECK(cp_demangle("fn_alpha") == NULL, "plain C name");
	CHECK(cp_demangle("main") == NULL, "main");
	CHECK(cp_demangle("_Znot a name") == NULL, "bad mangled");
	CHECK(cp_demangle("") == NULL, "empty name");
}

/* ---- cp_pprof_write through go tool pprof --------------------------------- */

struct raw_loc {
	unsigned long long addr;
	int mapped;
	char name[256];
};

struct raw {
	char *text;
	struct raw_loc locs[64];
	int nlocs;
};

/* The -raw output's Location id -> (address, name), for our small
 * profile. */
static void parse_locations(struct raw *r)
{
	char *p = strstr(r->text, "\nLocations\n");
	CHECK(p != NULL, "no Locations in:\n%s", r->text);
	p += 11;
	int id;
	char rest[1024];
	while (sscanf(p, " %d: %1023[^\n]", &id, rest) == 2) {
		CHECK(id > 0 && id < 64, "location id %d", id);
		struct raw_loc *l = &r->locs[id];
		/* "<addr> [M=<id>] <name> <file>:<line> s=<n>"; names may
		 * hold spaces, file:line and s= do not. */
		char *q = rest, *e;
		l->addr = strtoull(q, &q, 16);
		q += strspn(q, " ");
		l->mapped = !strncmp(q, "M=", 2);
		if (l->mapped)
			q += strcspn(q, " ") + 1;
		for (int k = 0; k < 2 && (e = strrchr(q, ' ')); k++)
			*e = '\0'; /* drop " s=<n>", then " <file>:<line>" */
		snprintf(l->name, sizeof l->name, "%s", q);
		if (id >= r->nlocs)
			r->nlocs = id + 1;
		p = strchr(p + 1, '\n');
		if (!p || !strncmp(p, "\nMappings", 9))
			break;
	}
}

/* Finds the sample with value ns and returns its frames' names joined
 * with " ; ", leaf first, into out. */
static int sample_frames(const struct raw *r, long long ns, char *out,
			 size_t outlen)
{
	const char *p = strstr(r->text, "samples/count cpu/nanoseconds\n");
	CHECK(p != NULL, "no Samples in -raw output");
	p = strchr(p, '\n') + 1;
	long long c, v;
	int off;
	while (sscanf(p, " %lld %lld:%n", &c, &v, &off) == 2) {
		const char *end = strchr(p, '\n');
		CHECK(end != NULL, "unterminated line");
		if (v == ns) {
			char line[1024];
			snprintf(line, sizeof line, "%.*s", (int)(end - p - off),
				 p + off);
			const char *q = line;
			out[0] = '\0';
			int id, n;
			while (sscanf(q, " %d%n", &id, &n) == 1) {
				CHECK(id > 0 && id < r->nlocs, "bad id %d", id);
				if (out[0])
					strncat(out, " ; ", outlen - strlen(out) - 1);
				strncat(out, r->locs[id].name,
					outlen - strlen(out) - 1);
				q += n;
			}
			return 1;
		}
		p = end + 1;
	}
	return 0;
}

static void test_pprof(int have_cxx)
{
	struct cp_stacktab t;
	char path[128], cmd[512], err[256], want[4400], got[2048];
	int st;
	cp_stacktab_init(&t);

	/* ns values are distinct per stack so the samples can be told apart. */
	uintptr_t s1[] = { A(fn_alpha, 4), A(fn_beta, 9), A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, s1, 3, 0, 2, 2000000), 0);
	CHECK_EQ(cp_stacktab_add(&t, s1, 3, 0, 1, 1000000), 0); /* merges */
	uintptr_t s2[] = { A(fn_beta, 2), A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, s2, 2, 0, 2, 2000001), 0);
	uintptr_t s3[] = { A(fn_alpha, 6), A(fn_beta, 9) };
	CHECK_EQ(cp_stacktab_add(&t, s3, 2, CP_STACK_TRUNCATED, 1, 1000002), 0);
	uintptr_t s4[] = { 0x10, 0x21 }; /* in no object */
	CHECK_EQ(cp_stacktab_add(&t, s4, 2, 0, 4, 4000003), 0);
	uintptr_t s5[] = { (uintptr_t)dlsym(RTLD_NEXT, "malloc") + 3,
			   A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, s5, 2, 0, 5, 5000004), 0);
	CHECK_EQ(cp_stacktab_add(&t, NULL, 0, 0, 9, 9000005), 0); /* no PC */
	/* pcs[1] from the link register: kept when it is a call site in
	 * another function, dropped when it is in the leaf's own function
	 * (stale), is no code, or the leaf's function is unknown. */
	uintptr_t l1[] = { A(fn_alpha, 6), A(fn_beta, 9), A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, l1, 3, CP_STACK_LINK_REG, 1, 10000010), 0);
	uintptr_t l2[] = { A(fn_beta, 2), A(fn_beta, 9) };
	CHECK_EQ(cp_stacktab_add(&t, l2, 2, CP_STACK_LINK_REG, 1, 11000011), 0);
	uintptr_t l3[] = { A(fn_alpha, 4), (uintptr_t)&sink, A(fn_beta, 9) };
	CHECK_EQ(cp_stacktab_add(&t, l3, 3, CP_STACK_LINK_REG, 1, 12000012), 0);
	uintptr_t l4[] = { 0x10, A(fn_beta, 9) };
	CHECK_EQ(cp_stacktab_add(&t, l4, 2, CP_STACK_LINK_REG, 1, 13000013), 0);
	uintptr_t l5[] = { A(fn_alpha, 4), A(fn_beta, 9) }; /* lr only */
	CHECK_EQ(cp_stacktab_add(&t, l5, 2, CP_STACK_LINK_REG | CP_STACK_TRUNCATED, 1, 14000014), 0);

	/* An address in our text but in no symbol: the gap after a sized
	 * symbol (alignment padding) gets "<binary>+0x<file offset>". */
	struct cp_symbols *syms = cp_symbols_load();
	CHECK(syms != NULL, "cp_symbols_load");
	const struct cp_segment *seg = cp_symbols_segment_for(syms, A(fn_alpha, 0));
	CHECK(seg != NULL, "our segment");
	uintptr_t gap = 0;
	const struct cp_symtab *ours = cp_symbols_object_symtab(syms, seg->obj);
	for (size_t i = 0; i + 1 < ours->n && !gap; i++) {
		uintptr_t end = seg->obj->bias + ours->syms[i].start +
				ours->syms[i].size;
		if (ours->syms[i].size &&
		    end < seg->obj->bias + ours->syms[i + 1].start &&
		    cp_symbols_segment_for(syms, end) == seg &&
		    !cp_symbols_name_for(syms, end, NULL))
			gap = end;
	}
	char gapname[256] = "";
	printf("unsymbolized gap in our text: %s; libstdc++: %s\n",
	       gap ? "found" : "none", have_cxx ? "loaded" : "absent");
	if (gap) {
		uintptr_t s6[] = { gap };
		CHECK_EQ(cp_stacktab_add(&t, s6, 1, 0, 6, 6000006), 0);
		snprintf(gapname, sizeof gapname, "%s+0x%llx",
			 strrchr(exe, '/') + 1,
			 (unsigned long long)(gap - seg->start +
					      seg->file_offset));
	}
	if (have_cxx) {
		void *f = dlsym(RTLD_DEFAULT, "_ZNSt9exceptionD1Ev");
		CHECK(f != NULL, "std::exception::~exception");
		uintptr_t s7[] = { (uintptr_t)f + 1 };
		CHECK_EQ(cp_stacktab_add(&t, s7, 1, 0, 8, 8000008), 0);
	}
	char bid[sizeof seg->obj->build_id];
	memcpy(bid, seg->obj->build_id, sizeof bid);
	cp_symbols_free(syms);
	/* Functions whose symbols carry versions ("versioned@VERS_1",
	 * "versioned@@VERS_2"), as libc's do. */
	char vlib[200];
	snprintf(vlib, sizeof vlib, "%s/tests/libversioned.so", getenv("B") ? getenv("B") : "build");
	void *vh = dlopen(vlib, RTLD_NOW);
	CHECK(vh != NULL, "dlopen %s: %s", vlib, dlerror());
	int (*const *keep)(int) = dlsym(vh, "keep_versioned");
	CHECK(keep != NULL, "keep_versioned");
	uintptr_t s8[] = { (uintptr_t)keep[0] + 4, A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, s8, 2, 0, 1, 15000015), 0);
	uintptr_t s9[] = { (uintptr_t)keep[1] + 4, A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, s9, 2, 0, 1, 16000016), 0);

	const char *comments[] = { "cpuprof test: first comment",
				   "second comment, with spaces" };
	/* Pseudo-samples: one with samples, one with CPU only, one empty
	 * (not written). */
	const struct cp_pseudo_sample pseudo[] = {
		{ "[lost]", 7, 7000007 },
		{ "[unsampled]", 0, 21000021 },
		{ "[nothing]", 0, 0 },
	};
	struct cp_profile_meta meta = {
		.period_ns = 1000000,
		.time_nanos = 1700000000123456789LL,
		.duration_nanos = 2500000000LL,
		.pseudo = pseudo,
		.npseudo = 3,
		.comments = comments,
		.ncomments = 2,
	};
	snprintf(path, sizeof path, "%s/small.pb.gz", tmpdir);
	CHECK_EQ(cp_pprof_write(path, &t, &meta, err, sizeof err), 0);
	CHECK_EQ(count_files(tmpdir), 1); /* no temporary left */
	CHECK(gunzip_size(path) > 0, "not gzip");

	/* Replacing an existing file works too, and keeps its permissions. */
	CHECK_EQ(chmod(path, 0751), 0);
	CHECK_EQ(cp_pprof_write(path, &t, &meta, err, sizeof err), 0);
	CHECK_EQ(count_files(tmpdir), 1);
	struct stat sb;
	CHECK_EQ(stat(path, &sb), 0);
	CHECK((sb.st_mode & 07777) == 0751, "the replaced file's mode is %o, was 751", (unsigned)(sb.st_mode & 07777));

	snprintf(cmd, sizeof cmd, "go tool pprof -raw -symbolize=none '%s' 2>&1",
		 path);
	struct raw r = { .text = run(cmd, &st) };
	CHECK(st == 0, "go tool pprof -raw failed:\n%s", r.text);
	parse_locations(&r);

	long long count, ns;
	long nsamples;
	pprof_raw_totals(r.text, &count, &ns, &nsamples);
	CHECK(count == (long long)(t.total_count + 7),
	      "count %lld, want %llu", count,
	      (unsigned long long)(t.total_count + 7));
	CHECK(ns == (long long)(t.total_ns + 7000007 + 21000021), "ns %lld, want %llu",
	      ns, (unsigned long long)(t.total_ns + 7000007 + 21000021));
	CHECK_EQ(nsamples, t.len + 2);
	CHECK(!strstr(r.text, "[nothing]"), "an empty pseudo-sample was written");

	struct {
		long long ns;
		const char *frames;
	} wants[] = {
		{ 3000000, "fn_alpha ; fn_beta ; fn_gamma" },
		{ 2000001, "fn_beta ; fn_gamma" },
		{ 1000002, "fn_alpha ; fn_beta ; [truncated]" },
		{ 4000003, "0x10 ; 0x20" },
		{ 7000007, "[lost]" },
		{ 21000021, "[unsampled]" },
		{ 9000005, "[no stack]" },
		{ 6000006, gapname },
		{ 8000008, "std::exception::~exception()" },
		{ 10000010, "fn_alpha ; fn_beta ; fn_gamma" },
		{ 11000011, "fn_beta" },
		{ 12000012, "fn_alpha ; fn_beta" },
		{ 13000013, "0x10" },
		{ 14000014, "fn_alpha ; fn_beta ; [truncated]" },
		{ 15000015, "versioned ; fn_gamma" },
		{ 16000016, "versioned ; fn_gamma" },
	};
	for (size_t i = 0; i < sizeof wants / sizeof *wants; i++) {
		if ((wants[i].ns == 6000006 && !gap) ||
		    (wants[i].ns == 8000008 && !have_cxx))
			continue;
		CHECK(sample_frames(&r, wants[i].ns, got, sizeof got),
		      "no sample %lld in:\n%s", wants[i].ns, r.text);
		CHECK(!strcmp(got, wants[i].frames), "sample %lld: \"%s\", want \"%s\"",
		      wants[i].ns, got, wants[i].frames);
	}
	CHECK(sample_frames(&r, 5000004, got, sizeof got), "malloc sample");
	CHECK(strstr(got, "malloc") && strstr(got, " ; fn_gamma"),
	      "malloc sample: %s", got);

	/* Names without symbol versions, system names too; C++ names
	 * demangled, the mangled symbol kept as the system name; no
	 * Function's file is an object's path: sources or nothing. */
	CHECK(!strstr(r.text, "@VERS_") && !strstr(r.text, "@GLIBC"), "a symbol version in:\n%s",
	      r.text);
	if (have_cxx)
		CHECK(strstr(r.text, "std::exception::~exception() ") &&
			      strstr(r.text, "(_ZNSt9exceptionD"),
		      "std::exception::~exception() without its mangled system name:\n%s", r.text);
	{
		const char *maps = strstr(r.text, "\nMappings\n");
		CHECK(maps != NULL, "no Mappings");
		char obj[4200];
		for (const char *m = maps; (m = strchr(m + 1, '/')) && m[-1] == ' ';) {
			size_t len = strcspn(m, " \n");
			snprintf(obj, sizeof obj, " %.*s:", (int)len, m);
			const char *hit = strstr(r.text, obj);
			CHECK(!hit || hit > maps, "a Function's file is the object %s", obj);
			m += len;
		}
	}
	CHECK(strstr(r.text, "fn_alpha ") && strstr(r.text, "unit_pprof.c:"),
	      "fn_alpha without its source file:\n%s", r.text);

	/* Addresses: the leaf as is, callers moved back into the call. */
	for (int i = 1; i < r.nlocs; i++) {
		const struct raw_loc *l = &r.locs[i];
		if (!strcmp(l->name, "fn_beta") && l->addr != A(fn_beta, 2))
			CHECK(l->addr == A(fn_beta, 8), "fn_beta at %llx", l->addr);
		if (!strcmp(l->name, "fn_gamma"))
			CHECK(l->addr == A(fn_gamma, 12), "fn_gamma at %llx", l->addr);
		if (!strcmp(l->name, "fn_alpha"))
			CHECK(l->addr == A(fn_alpha, 4) || l->addr == A(fn_alpha, 6),
			      "fn_alpha at %llx", l->addr);
		if (!strcmp(l->name, "fn_alpha") || !strcmp(l->name, "fn_beta"))
			CHECK(l->mapped, "%s without a mapping", l->name);
		if (l->name[0] == '[')
			CHECK(!l->mapped, "%s with a mapping", l->name);
	}

	/* The mapping of this binary, with its build ID. */
	CHECK(bid[0], "our build ID");
	snprintf(want, sizeof want, "%s %s [FN]", exe, bid);
	CHECK(strstr(r.text, want), "no mapping \"%s\" in:\n%s", want, r.text);
	CHECK(strstr(r.text, "PeriodType: cpu nanoseconds"), "period type");
	CHECK(strstr(r.text, "Period: 1000000\n"), "period");
	CHECK(strstr(r.text, "Duration: 2.5s"), "duration");
	free(r.text);

	snprintf(cmd, sizeof cmd, "go tool pprof -comments '%s' 2>&1", path);
	char *text = run(cmd, &st);
	CHECK(st == 0, "go tool pprof -comments failed:\n%s", text);
	CHECK(strstr(text, "cpuprof test: first comment\n"
			   "second comment, with spaces\n"),
	      "comments:\n%s", text);
	free(text);

	snprintf(cmd, sizeof cmd,
		 "go tool pprof -traces -symbolize=none '%s' 2>&1", path);
	text = run(cmd, &st);
	CHECK(st == 0, "go tool pprof -traces failed:\n%s", text);
	CHECK(strstr(text, "[truncated]") && strstr(text, "[lost]"),
	      "-traces:\n%s", text);
	free(text);

	/* Errors: a directory that does not exist. */
	snprintf(path, sizeof path, "%s/no/such/dir/p.pb.gz", tmpdir);
	err[0] = '\0';
	CHECK_EQ(cp_pprof_write(path, &t, &meta, err, sizeof err), -ENOENT);
	CHECK(strstr(err, "no/such/dir"), "error message \"%s\"", err);
	cp_stacktab_free(&t);
}

/* cp_pprof_write under allocation failures: -ENOMEM (or success), never a
 * crash, never a temporary file left behind. */
static void test_pprof_nomem(void)
{
	struct cp_stacktab t;
	char path[128], err[256];
	cp_stacktab_init(&t);
	uintptr_t s1[] = { A(fn_alpha, 4), A(fn_beta, 9), A(fn_gamma, 13) };
	CHECK_EQ(cp_stacktab_add(&t, s1, 3, CP_STACK_TRUNCATED, 1, 1), 0);
	CHECK_EQ(cp_stacktab_add(&t, s1 + 1, 2, 0, 1, 1), 0);
	const char *c[] = { "x" };
	const struct cp_pseudo_sample lost = { "[lost]", 1, 1 };
	struct cp_profile_meta meta = { .period_ns = 1, .pseudo = &lost, .npseudo = 1,
					.comments = c, .ncomments = 1 };
	snprintf(path, sizeof path, "%s/nomem.pb.gz", tmpdir);

	fail_arm(-1);
	CHECK_EQ(cp_pprof_write(path, &t, &meta, err, sizeof err), 0);
	long total = fail_disarm();
	CHECK(total > 10, "only %ld allocations?", total);
	unlink(path);

	int failed = 0;
	for (long k = 0; k < total; k += k < 64 ? 1 : 1 + total / 97) {
		fail_arm(k);
		int rc = cp_pprof_write(path, &t, &meta, err, sizeof err);
		fail_disarm();
		CHECK(rc == 0 || rc == -ENOMEM, "k=%ld: rc %d (%s)", k, rc, err);
		if (rc == 0) {
			CHECK(gunzip_size(path) > 0, "k=%ld: bad file", k);
			unlink(path);
		} else {
			failed++;
			CHECK(strstr(err, "memory"), "k=%ld: message \"%s\"", k, err);
		}
		CHECK_EQ(count_files(tmpdir), 0);
	}
	CHECK(failed > 0, "no injected failure was reported");
	cp_stacktab_free(&t);
}

/* 100,000 distinct stacks of depth 20: fast enough, readable, and never
 * whole in the writer's memory. */
static void test_pprof_big(int have_go)
{
	struct cp_stacktab t;
	char path[128], err[256], cmd[512];
	cp_stacktab_init(&t);
	void (*fns[])(int) = { fn_alpha, fn_beta, fn_gamma };
	for (uint32_t i = 0; i < 100000; i++) {
		uintptr_t pcs[20];
		pcs[0] = A(fn_alpha, i & 31);
		pcs[1] = A(fn_beta, 1 + ((i >> 5) & 31));
		pcs[2] = A(fn_gamma, 1 + ((i >> 10) & 127));
		for (int k = 3; k < 20; k++)
			pcs[k] = A(fns[k % 3], 1 + k);
		CHECK_EQ(cp_stacktab_add(&t, pcs, 20, 0, 1 + i % 3, 1000000), 0);
	}
	CHECK_EQ(t.len, 100000);
	snprintf(path, sizeof path, "%s/big.pb.gz", tmpdir);
	double t0 = now_s();
	alloc_max = 0;
	alloc_watch = 1;
	int rc = cp_pprof_write(path, &t, &(struct cp_profile_meta){ .period_ns = 1000000 },
			     err, sizeof err);
	alloc_watch = 0;
	double dt = now_s() - t0;
	CHECK(rc == 0, "cp_pprof_write: %s", err);
	printf("wrote 100000 stacks of depth 20 in %.3f s, its largest array %zu bytes\n", dt, alloc_max);
	CHECK(dt < 5, "writing took %.3f s", dt);
	/* The encoder compresses what it holds into the file every
	 * CP_PB_SPILL bytes: its buffer, the largest array it grows, stays
	 * within 512 KiB (issue 32: with 1 MiB, 2 MiB of the program's peak). */
	CHECK(alloc_max <= 512 * 1024, "the writer grew an array to %zu bytes", alloc_max);
	CHECK(gunzip_size(path) > 100000 * 20, "short profile");

	if (have_go) {
		snprintf(cmd, sizeof cmd,
			 "go tool pprof -raw -symbolize=none '%s' 2>&1", path);
		int st;
		char *text = run(cmd, &st);
		CHECK(st == 0, "go tool pprof -raw failed: %.2000s", text);
		long long count, ns;
		long nsamples;
		pprof_raw_totals(text, &count, &ns, &nsamples);
		CHECK_EQ(nsamples, 100000);
		CHECK_EQ(count, t.total_count);
		CHECK_EQ(ns, t.total_ns);
		free(text);
	}
	unlink(path);
	cp_stacktab_free(&t);
}

/* The thread label is asked of the part once per thread, however many
 * stacks the thread has: asked once per stack, each time a file opened in
 * /proc (the library's own_thread_name), it was most of the time a
 * profile of 125,000 stacks took to write (issue 32).  A count, not a
 * time: it cannot flake on a loaded machine. */
static int name_calls;

static const char *count_name(const void *arg, uint32_t tid)
{
	static char buf[32];
	(void)arg;
	name_calls++;
	snprintf(buf, sizeof buf, "worker-%u", (unsigned)tid);
	return tid == 3 ? "" : buf;
}

static void test_pprof_thread_names(void)
{
	struct cp_stacktab t;
	char path[128], err[256];
	cp_stacktab_init(&t);
	for (uint32_t i = 0; i < 3000; i++) {
		uintptr_t pcs[2] = { A(fn_alpha, i & 31), A(fn_beta, 1 + ((i >> 5) & 63)) };
		CHECK_EQ(cp_stacktab_add_tid(&t, 1 + i % 3, pcs, 2, 0, 1, 1000000), 0);
	}
	CHECK(t.len > 1000, "%zu stacks", t.len);
	struct cp_profile_part part = { .syms = cp_symbols_load(), .tab = &t, .pid = 42, .process = "prog",
					.thread_name = count_name };
	CHECK(part.syms != NULL, "cp_symbols_load");
	snprintf(path, sizeof path, "%s/names.pb.gz", tmpdir);
	name_calls = 0;
	int rc = cp_pprof_write_parts(path, &part, 1, &(struct cp_profile_meta){ .period_ns = 1000000 }, err,
				      sizeof err);
	CHECK(rc == 0, "cp_pprof_write_parts: %s", err);
	CHECK(name_calls == 3, "the thread names were asked %d times for 3 threads", name_calls);
	/* And the names are in the profile, but the empty one. */
	static char text[1 << 20];
	gzFile g = gzopen(path, "rb");
	int n = g ? gzread(g, text, sizeof text - 1) : -1;
	if (g)
		gzclose(g);
	CHECK(n > 0, "cannot read %s", path);
	CHECK(memmem(text, (size_t)n, "worker-1", 8) && memmem(text, (size_t)n, "worker-2", 8) &&
	      !memmem(text, (size_t)n, "worker-3", 8), "the thread names in the profile");
	unlink(path);
	cp_symbols_free((struct cp_symbols *)part.syms);
	cp_stacktab_free(&t);
}

/* fork(), interposed: the writer's lines child notes whether the table
 * watched was already freed when it was forked. */
static const struct cp_stacktab *fork_watch;
static int forks, forks_spent;

pid_t fork(void)
{
	static pid_t (*real)(void);
	if (!real)
		real = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	if (fork_watch) {
		forks++;
		forks_spent += !fork_watch->len && !fork_watch->items && !fork_watch->blocks;
	}
	return real();
}

/* A table given to the writer to spend is freed once its stacks are
 * encoded, before the lines child is forked, which would otherwise be
 * given its pages (issue 32: 125,000 stacks, 20 MiB of the child's peak);
 * a table not given is kept whole.  Each write asks a fresh lines cache,
 * so that the child is forked. */
static void test_pprof_spend(void)
{
	struct cp_stacktab t;
	char path[128], err[256], cache[128], cmd[200];
	const char *was = getenv("XDG_CACHE_HOME");
	char *saved = was ? strdup(was) : NULL;
	for (int spend = 0; spend < 2; spend++) {
		cp_stacktab_init(&t);
		for (uint32_t i = 0; i < 500; i++) {
			uintptr_t pcs[2] = { A(fn_alpha, i & 31), A(fn_beta, 1 + (i >> 5)) };
			CHECK_EQ(cp_stacktab_add(&t, pcs, 2, 0, 1, 1000000), 0);
		}
		snprintf(cache, sizeof cache, "%s/cache%d", tmpdir, spend);
		setenv("XDG_CACHE_HOME", cache, 1);
		struct cp_profile_part part = { .syms = cp_symbols_load(), .tab = &t, .spend = spend ? &t : NULL };
		CHECK(part.syms != NULL, "cp_symbols_load");
		snprintf(path, sizeof path, "%s/spend.pb.gz", tmpdir);
		forks = forks_spent = 0;
		fork_watch = &t;
		int rc = cp_pprof_write_parts(path, &part, 1, &(struct cp_profile_meta){ .period_ns = 1000000 }, err,
					      sizeof err);
		fork_watch = NULL;
		CHECK(rc == 0, "cp_pprof_write_parts: %s", err);
		CHECK(forks == 1, "%d lines children", forks);
		if (spend)
			CHECK(forks_spent == 1 && t.len == 0, "the table not spent before the lines child");
		else
			CHECK(forks_spent == 0 && t.len == 500 && t.total_count == 500, "a table kept was spent");
		static char text[1 << 20];
		gzFile g = gzopen(path, "rb");
		int n = g ? gzread(g, text, sizeof text - 1) : -1;
		if (g)
			gzclose(g);
		CHECK(n > 0 && memmem(text, (size_t)n, "fn_beta", 7), "%s: no fn_beta", path);
		unlink(path);
		cp_symbols_free((struct cp_symbols *)part.syms);
		cp_stacktab_free(&t);
		snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
		CHECK(system(cmd) == 0, "%s", cmd);
	}
	if (saved)
		setenv("XDG_CACHE_HOME", saved, 1);
	else
		unsetenv("XDG_CACHE_HOME");
	free(saved);
}

static char bindir[100];

/* Removes the temporary directories, also when a check fails. */
/* Off-CPU stacks (CP_STACK_OFF_CPU): kept apart from the CPU totals; with
 * meta.off_cpu the profile's sample types are samples, cpu, off_cpu and
 * wall, each off-CPU stack a Sample of off_cpu and wall alone (no count:
 * measured, not sampled), waiting to run led by [waiting to run], and
 * wall the default; without it the off-CPU stacks are left out and the
 * profile is the CPU profile it always was. */
static void test_pprof_off_cpu(void)
{
	struct cp_stacktab t;
	uintptr_t a[] = { A(fn_alpha, 4), A(fn_beta, 4), A(fn_gamma, 4) };
	cp_stacktab_init(&t);
	CHECK_EQ(cp_stacktab_add(&t, a, 3, 0, 2, 20), 0);
	CHECK_EQ(cp_stacktab_add(&t, a, 3, CP_STACK_OFF_CPU, 1, 100), 0);
	CHECK_EQ(cp_stacktab_add(&t, a + 1, 2, CP_STACK_OFF_CPU | CP_STACK_RUNNABLE, 2, 50), 0);
	CHECK_EQ(cp_stacktab_add(&t, NULL, 0, CP_STACK_OFF_CPU | CP_STACK_BEFORE, 1, 7), 0);
	CHECK(t.total_count == 2 && t.total_ns == 20, "CPU totals %llu %llu", (unsigned long long)t.total_count,
	      (unsigned long long)t.total_ns);
	CHECK(t.total_off_count == 4 && t.total_off_ns == 157 && t.total_runnable_ns == 50, "off-CPU totals");
	for (int off = 1; off >= 0; off--) {
		char path[128], cmd[512], err[256];
		snprintf(path, sizeof path, "%s/off%d.pb.gz", tmpdir, off);
		struct cp_profile_meta meta = { .period_ns = 1000000, .off_cpu = off };
		CHECK_EQ(cp_pprof_write(path, &t, &meta, err, sizeof err), 0);
		int st;
		snprintf(cmd, sizeof cmd, "go tool pprof -raw -symbolize=none '%s' 2>&1", path);
		char *text = run(cmd, &st);
		CHECK(st == 0, "go tool pprof -raw: %s", text);
		/* (pprof marks the default type [dflt].) */
		const char *types = off ? "samples/count cpu/nanoseconds off_cpu/nanoseconds wall/nanoseconds[dflt]\n"
					: "samples/count cpu/nanoseconds\n";
		const char *p = strstr(text, types);
		CHECK(p != NULL, "off_cpu %d: sample types: %s", off, text);
		long long sum[4] = { 0, 0, 0, 0 };
		int nsamples = 0;
		for (p = strchr(p, '\n') + 1;; nsamples++) {
			char *e;
			long long v[4] = { 0, 0, 0, 0 };
			int k = 0;
			for (; k < (off ? 4 : 2); k++) {
				v[k] = strtoll(p, &e, 10);
				if (e == p)
					break;
				p = e;
			}
			if (k < (off ? 4 : 2) || *p != ':')
				break;
			CHECK(!off || v[3] == v[1] + v[2], "a Sample's wall %lld is not cpu %lld + off_cpu %lld", v[3], v[1],
			      v[2]);
			for (k = 0; k < 4; k++)
				sum[k] += v[k];
			p = strchr(p, '\n') + 1;
		}
		CHECK(sum[0] == 2 && sum[1] == 20, "off_cpu %d: CPU %lld samples, %lld ns", off, sum[0], sum[1]);
		CHECK(sum[2] == (off ? 157 : 0) && sum[3] == (off ? 177 : 0), "off_cpu %d: off-CPU %lld, wall %lld", off,
		      sum[2], sum[3]);
		/* (pprof shows the CPU and off-CPU Samples of one stack as one.) */
		CHECK(nsamples == (off ? 3 : 1), "off_cpu %d: %d Samples", off, nsamples);
		CHECK(!off == !strstr(text, "[waiting to run]") &&
			      !off == !strstr(text, "[off-CPU: since before the profile started]"),
		      "off_cpu %d: the pseudo-frames of off-CPU time", off);
		free(text);
		snprintf(cmd, sizeof cmd, "go tool pprof -top '%s' 2>&1", path);
		text = run(cmd, &st);
		CHECK(st == 0 && strstr(text, off ? "Type: wall" : "Type: cpu"), "off_cpu %d: pprof's default: %s", off,
		      text);
		free(text);
	}
	cp_stacktab_free(&t);
}

static void cleanup(void)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", tmpdir, bindir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/unit_pprof.XXXXXX");
	CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(bindir, sizeof bindir, "%s.bin", tmpdir);
	atexit(cleanup);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0, "readlink /proc/self/exe");
	exe[n] = '\0';
	int have_cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) != NULL;

	double t0 = now_s();
	test_stacktab();
	test_stacktab_nomem();
	test_symtab_lookup();
	test_symbols_malformed();
	{
		char cmd[200];
		snprintf(cmd, sizeof cmd, "rm -f %s/*", tmpdir);
		CHECK(system(cmd) == 0, "%s", cmd);
	}
	test_symbols();
	test_demangle();
	printf("stacktab, symbols: %.2f s\n", now_s() - t0);
	t0 = now_s();
	test_pprof_nomem();
	printf("allocation failures: %.2f s\n", now_s() - t0);

	/* go tool pprof must use our names: no binaries to look at, and no
	 * symbolization of its own. */
	CHECK(mkdir(bindir, 0700) == 0, "mkdir %s", bindir);
	setenv("PPROF_BINARY_PATH", bindir, 1);
	setenv("PPROF_TMPDIR", bindir, 1);
	if (!getenv("HOME"))
		setenv("HOME", bindir, 1);
	int have_go = system("go version >/dev/null 2>&1") == 0;

	t0 = now_s();
	test_pprof_big(have_go);
	test_pprof_thread_names();
	test_pprof_spend();
	printf("100k stacks: %.2f s\n", now_s() - t0);
	if (!have_go)
		SKIP("go not installed (stacktab and symbols tests passed)");
	t0 = now_s();
	test_pprof(have_cxx);
	test_pprof_off_cpu();
	printf("go tool pprof: %.2f s\n", now_s() - t0);
	printf("ok\n");
	return 0;
}
