/*
 * unit_jit.c -- JIT names (symbolize/jit.h) on files made by hand.  A perf
 * map: names with spaces, 0x or not, a malformed line skipped, a last line
 * without its newline skipped (it may be cut mid-write), one older than its process (another's, that had
 * its PID) not read; for every address the entry read last wins, over
 * whole and partial overlaps, and a dump read after a map wins over it.  A
 * jitdump: loads with their debug info lines (a file name "\xff" is the
 * one before, one that is not text is none), a move, a debug info record
 * of other code not taken; a dump cut anywhere keeps what came whole
 * before the cut and never reads past it; a bad magic, a code size beyond
 * its record, a header of absurd size each say so; a malformed debug info
 * record after a good one lets the good one's lines go once, not twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "symbolize/jit.h"

static char dir[] = "/tmp/unit_jit.XXXXXX";

static const char *at(const char *name)
{
	static char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void make_file(const char *name, const void *data, size_t n)
{
	FILE *f = fopen(at(name), "wb");
	CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0, "write %s", name);
}

static const char *name_at(const struct cp_jit *j, uint64_t pc)
{
	const struct cp_jit_sym *s = cp_jit_lookup(j, pc);
	return s ? cp_jit_name(j, s) : NULL;
}

#define NAMED(j, pc, want)                                                                        \
	do {                                                                                      \
		const char *got_ = name_at(j, pc);                                                \
		CHECK(got_ && !strcmp(got_, want), "0x%llx: %s, not %s", (unsigned long long)(pc), \
		      got_ ? got_ : "(none)", want);                                              \
	} while (0)
#define UNNAMED(j, pc) CHECK(!name_at(j, pc), "0x%llx: named %s", (unsigned long long)(pc), name_at(j, pc))

static char why[256];

static void test_map(void)
{
	static const char map[] = "1000 100 first\n"
				  "0x2000 0x10 with spaces (in) it\n"
				  "not a line\n"
				  "3000 zz bad size\n"
				  "1080 10 later inside\n"  /* splits "first" */
				  "10f0 20 later across\n"  /* overlaps its end */
				  "5000 0 empty\n"
				  "9000 8 last, no newline: cut mid-write?";
	make_file("perf-1.map", map, sizeof map - 1);
	struct cp_jit j = { 0 };
	CHECK_EQ(cp_jit_read_map(&j, AT_FDCWD, at("perf-1.map"), why, sizeof why), 5);
	CHECK_EQ(cp_jit_finish(&j), 0);
	NAMED(&j, 0x1000, "first");
	NAMED(&j, 0x107f, "first");
	NAMED(&j, 0x1080, "later inside");
	NAMED(&j, 0x108f, "later inside");
	NAMED(&j, 0x1090, "first");
	NAMED(&j, 0x10ef, "first");
	NAMED(&j, 0x10f0, "later across");
	NAMED(&j, 0x110f, "later across");
	UNNAMED(&j, 0x1110);
	UNNAMED(&j, 0xfff);
	NAMED(&j, 0x2000, "with spaces (in) it");
	UNNAMED(&j, 0x3000);
	UNNAMED(&j, 0x5000);
	UNNAMED(&j, 0x9000); /* its name may be cut short */
	free(j.syms);
	free(j.str);
	free(j.lines);
	struct cp_jit k = { 0 };
	CHECK(cp_jit_read_map(&k, AT_FDCWD, at("none.map"), why, sizeof why) < 0, "a missing map read");
	free(k.syms);
	/* A map older than its process is another's (the same PID, before). */
	struct cp_jit old = { .not_before_ns = cp_jit_not_before(getpid()) + 4000000000ll };
	CHECK(old.not_before_ns > 4000000000ll, "no start time of this process");
	CHECK_EQ(cp_jit_read_map(&old, AT_FDCWD, at("perf-1.map"), why, sizeof why), -ESTALE);
	struct cp_jit fresh = { .not_before_ns = cp_jit_not_before(getpid()) };
	CHECK_EQ(cp_jit_read_map(&fresh, AT_FDCWD, at("perf-1.map"), why, sizeof why), 5);
	free(fresh.syms);
	free(fresh.str);
	/* A map that is a link (anyone may put one in a shared /tmp) is not
	 * followed: it could lead to any file of root's. */
	char target[256];
	snprintf(target, sizeof target, "%s", at("perf-1.map"));
	CHECK(symlink(target, at("perf-2.map")) == 0, "symlink");
	struct cp_jit linked = { 0 };
	CHECK_EQ(cp_jit_read_map(&linked, AT_FDCWD, at("perf-2.map"), why, sizeof why), -ELOOP);
	free(linked.syms);
}

/* A jitdump being built. */
struct dump {
	uint8_t b[8192];
	size_t n;
};

static void put(struct dump *d, const void *p, size_t n)
{
	CHECK(d->n + n <= sizeof d->b, "dump too big");
	memcpy(d->b + d->n, p, n);
	d->n += n;
}

static void put32(struct dump *d, uint32_t v) { put(d, &v, 4); }
static void put64(struct dump *d, uint64_t v) { put(d, &v, 8); }

static void header(struct dump *d)
{
	d->n = 0;
	uint32_t h[6] = { 0x4A695444, 1, 40, 62, 0, 1 };
	put(d, h, sizeof h);
	put64(d, 0);
	put64(d, 0);
}

static void load(struct dump *d, uint64_t addr, uint64_t size, const char *name)
{
	size_t ln = strlen(name) + 1;
	put32(d, 0);
	put32(d, (uint32_t)(16 + 40 + ln + size));
	put64(d, 0);
	put32(d, 1);
	put32(d, 1);
	put64(d, addr);
	put64(d, addr);
	put64(d, size);
	put64(d, 0);
	put(d, name, ln);
	for (uint64_t i = 0; i < size; i++)
		put(d, "\x90", 1);
}

struct entry {
	uint64_t addr;
	int32_t line;
	const char *file;
};

static void debug_info(struct dump *d, uint64_t addr, const struct entry *e, size_t n)
{
	uint32_t size = 32;
	for (size_t i = 0; i < n; i++)
		size += 16 + (uint32_t)strlen(e[i].file) + 1;
	put32(d, 2);
	put32(d, size);
	put64(d, 0);
	put64(d, addr);
	put64(d, n);
	for (size_t i = 0; i < n; i++) {
		put64(d, e[i].addr);
		put32(d, (uint32_t)e[i].line);
		put32(d, 0);
		put(d, e[i].file, strlen(e[i].file) + 1);
	}
}

static void move(struct dump *d, uint64_t from, uint64_t to, uint64_t size)
{
	put32(d, 1);
	put32(d, 16 + 48);
	put64(d, 0);
	put32(d, 1);
	put32(d, 1);
	put64(d, to);
	put64(d, from);
	put64(d, to);
	put64(d, size);
	put64(d, 0);
}

static uint32_t line_at(const struct cp_jit *j, uint64_t pc, const char **file)
{
	const struct cp_jit_sym *s = cp_jit_lookup(j, pc);
	CHECK(s, "0x%llx: no code", (unsigned long long)pc);
	return cp_jit_line_of(j, s, pc, file);
}

static void test_dump(void)
{
	struct dump d;
	header(&d);
	const struct entry e[] = { { 0x4000, 10, "a.js" }, { 0x4010, 12, "\xff" }, { 0x4020, 7, "b.js" } };
	debug_info(&d, 0x4000, e, 3);
	size_t load_at = d.n;
	load(&d, 0x4000, 0x40, "fn_a");
	size_t a_end = d.n;
	const struct entry other[] = { { 0x7000, 99, "x.js" } };
	debug_info(&d, 0x7000, other, 1); /* of code that never loads */
	load(&d, 0x6000, 0x10, "fn_b");
	const struct entry bad[] = { { 0x8000, 5, "H\xb4\x02" } };
	debug_info(&d, 0x8000, bad, 1);
	load(&d, 0x8000, 0x10, "fn_c");
	move(&d, 0x6000, 0x6100, 0x10);
	size_t whole = d.n;
	make_file("jit-1.dump", d.b, d.n);
	struct cp_jit j = { 0 };
	CHECK_EQ(cp_jit_read_map(&j, AT_FDCWD, at("perf-1.map"), why, sizeof why), 5);
	CHECK_EQ(cp_jit_read_dump(&j, AT_FDCWD, at("jit-1.dump"), why, sizeof why), 3);
	CHECK_EQ(cp_jit_finish(&j), 0);
	const char *file;
	NAMED(&j, 0x4000, "fn_a");
	CHECK_EQ(line_at(&j, 0x4000, &file), 10);
	CHECK(!strcmp(file, "a.js"), "%s", file);
	CHECK_EQ(line_at(&j, 0x4015, &file), 12);
	CHECK(!strcmp(file, "a.js"), "\\xff is the file before: %s", file);
	CHECK_EQ(line_at(&j, 0x403f, &file), 7);
	CHECK(!strcmp(file, "b.js"), "%s", file);
	NAMED(&j, 0x6000, "fn_b");
	CHECK_EQ(line_at(&j, 0x6000, &file), 0);
	NAMED(&j, 0x6100, "fn_b");
	CHECK_EQ(line_at(&j, 0x8000, &file), 5);
	CHECK(!file[0], "a file name that is no text: %s", file);
	/* The map read before: the dump wins where both name code, the map
	 * names the rest. */
	NAMED(&j, 0x1000, "first");
	free(j.syms);
	free(j.str);
	free(j.lines);

	/* Cut anywhere: what came whole before the cut, never a crash. */
	for (size_t cut = 0; cut < whole; cut++) {
		make_file("cut.dump", d.b, cut);
		struct cp_jit c = { 0 };
		long n = cp_jit_read_dump(&c, AT_FDCWD, at("cut.dump"), why, sizeof why);
		CHECK(n <= 3, "cut at %zu: %ld loads", cut, n);
		CHECK_EQ(cp_jit_finish(&c), 0);
		if (cut >= a_end)
			NAMED(&c, 0x4000, "fn_a");
		else
			UNNAMED(&c, 0x4000);
		free(c.syms);
		free(c.str);
		free(c.lines);
	}

	/* Malformed: each says so. */
	struct { const char *what; size_t off; uint32_t v; } bad_cases[] = {
		{ "not a jitdump", 0, 0x12345678 },
		{ "a jitdump header of", 8, 1u << 30 },
		{ "code of", load_at + 16 + 24, 0x7fffffff },
	};
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		struct dump x = d;
		memcpy(x.b + bad_cases[i].off, &bad_cases[i].v, 4);
		make_file("bad.dump", x.b, x.n);
		struct cp_jit c = { 0 };
		why[0] = '\0';
		long n = cp_jit_read_dump(&c, AT_FDCWD, at("bad.dump"), why, sizeof why);
		CHECK(n < 0 && strstr(why, bad_cases[i].what), "%s: %ld, %s", bad_cases[i].what, n, why);
		free(c.syms);
		free(c.str);
		free(c.lines);
	}

	/* A debug info record, then a malformed one: the lines of the first
	 * are let go once, not twice (the count wrapped below zero, and a
	 * second read of the same j wrote far past its table). */
	for (int cut = 0; cut < 2; cut++) {
		struct dump x;
		header(&x);
		debug_info(&x, 0x4000, e, 3);
		if (cut) {
			/* Two whole entries of three: some lines appended. */
			debug_info(&x, 0x4000, e, 3);
			uint64_t more = 5;
			memcpy(x.b + x.n - (16 + 5 + 16 + 2 + 16 + 5) - 8, &more, 8);
		} else {
			put32(&x, 2); /* a debug info record too short for its header */
			put32(&x, 16 + 8);
			put64(&x, 0);
			put64(&x, 0x4000);
		}
		load(&x, 0x4000, 0x40, "fn_a");
		make_file("bad.dump", x.b, x.n);
		struct cp_jit c = { 0 };
		why[0] = '\0';
		CHECK(cp_jit_read_dump(&c, AT_FDCWD, at("bad.dump"), why, sizeof why) < 0 &&
			      strstr(why, "malformed debug info"),
		      "%d: %s", cut, why);
		CHECK_EQ(c.nlines, 0);
		CHECK(cp_jit_read_dump(&c, AT_FDCWD, at("bad.dump"), why, sizeof why) < 0, "again");
		CHECK_EQ(c.nlines, 0);
		CHECK_EQ(cp_jit_finish(&c), 0);
		free(c.syms);
		free(c.str);
		free(c.lines);
	}
}

/* A map or dump owned by neither the process's user nor root is not read
 * (anyone may write /tmp/perf-PID.map before the PID is the profiled
 * one's): as root, a file given to another user. */
static void test_owner(void)
{
	uid_t me;
	CHECK_EQ(cp_jit_owner(getpid(), &me), 0);
	CHECK(me == geteuid(), "owner %u", (unsigned)me);
	if (geteuid() != 0) {
		fprintf(stderr, "unit_jit: not root: files of another owner not tried\n");
		return;
	}
	/* Another process's user, as /proc tells it. */
	pid_t parent = getppid();
	uid_t theirs;
	CHECK_EQ(cp_jit_owner(parent, &theirs), 0);
	static const char map[] = "1000 10 mine\n";
	make_file("owned.map", map, sizeof map - 1);
	struct dump d;
	header(&d);
	load(&d, 0x4000, 0x10, "fn_a");
	make_file("jit-2.dump", d.b, d.n);
	for (int k = 0; k < 2; k++) {
		const char *f = k ? "jit-2.dump" : "owned.map";
		CHECK(chown(at(f), 4242, 4242) == 0, "chown %s", f);
		for (uid_t owner = 0; owner < 2; owner++) {
			struct cp_jit j = { .owner_known = 1, .owner = owner ? 4242 : 4343 };
			why[0] = '\0';
			long n = k ? cp_jit_read_dump(&j, AT_FDCWD, at(f), why, sizeof why)
				   : cp_jit_read_map(&j, AT_FDCWD, at(f), why, sizeof why);
			if (owner)
				CHECK_EQ(n, 1);
			else
				CHECK(n == -EPERM && strstr(why, "owned by uid 4242"), "%s: %ld, %s", f, n, why);
			free(j.syms);
			free(j.str);
		}
		/* Root's files are anyone's. */
		CHECK(chown(at(f), 0, 0) == 0, "chown %s", f);
		struct cp_jit j = { .owner_known = 1, .owner = 4343 };
		CHECK_EQ(k ? cp_jit_read_dump(&j, AT_FDCWD, at(f), why, sizeof why)
			   : cp_jit_read_map(&j, AT_FDCWD, at(f), why, sizeof why),
			 1);
		free(j.syms);
		free(j.str);
	}
}

/* What is anonymous memory, one list for record, the library's regions
 * and the writer's Mappings. */
static void test_anon(void)
{
	static const char *anon[] = { "", "//anon", "[anon:v8 code]", "[anon_shmem:x]", "/memfd:jit (deleted)" };
	static const char *not_anon[] = { "/usr/bin/node", "[vdso]", "[heap]", "/tmp/jit-1.dump", "anon" };
	for (size_t i = 0; i < sizeof anon / sizeof anon[0]; i++)
		CHECK(cp_jit_is_anon_path(anon[i]), "'%s' is anonymous", anon[i]);
	for (size_t i = 0; i < sizeof not_anon / sizeof not_anon[0]; i++)
		CHECK(!cp_jit_is_anon_path(not_anon[i]), "'%s' is not anonymous", not_anon[i]);
}

int main(void)
{
	CHECK(mkdtemp(dir), "mkdtemp");
	test_map();
	test_dump();
	test_owner();
	test_anon();
	for (const char *f = "perf-1.map\0perf-2.map\0jit-1.dump\0cut.dump\0bad.dump\0owned.map\0jit-2.dump\0"; *f; f += strlen(f) + 1)
		unlink(at(f));
	rmdir(dir);
	return 0;
}
