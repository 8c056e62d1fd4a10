/*
 * unit_debugcopy.c -- inflated copies of debug files on disk
 * (debugcopy.c), on a copy of this very program whose DWARF objcopy
 * compressed with zlib, read through the DWARF reader (lines.c) as a
 * profile reads it: the first open inflates and leaves a copy, the next
 * maps it and inflates nothing, with the same answers as the
 * uncompressed program at every function; a copy cut short, one whose
 * section header table changed, and one of the file before it changed
 * are not used (the answers still right) and made again; with
 * CPUPROF_INFLATED_CACHE=0 no copy is read nor made, nor one larger than
 * the cap (CPUPROF_INFLATED_CACHE=NK); a zlib section that does not
 * inflate leaves no copy and the reader's answer as without copies; and the cap evicts the least recently used copies, never the
 * one just written, and temporary files a writer left an hour ago.
 * Needs objcopy.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "base/testhooks.h"
#include "symbolize/debugcopy.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

static char tmpdir[64], exe[3000], z[200], dir[300], bid[2 * SYMBOLS_BUILD_ID_MAX + 1];

/* Every function of this program, at its start and its middle. */
static struct cp_lines_query *queries;
static size_t nqueries;

struct answer {
	enum cp_lines_status st;
	size_t n;
	char text[1024];
};
static struct answer *want;

static void cleanup(void)
{
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

static void make_queries(void)
{
	struct cp_symtab t;
	CHECK_EQ(cp_symbols_read_file(exe, &t, bid), 0);
	queries = malloc(2 * t.n * sizeof *queries);
	CHECK(queries != NULL, "out of memory");
	for (size_t i = 0; i < t.n; i++) {
		queries[nqueries++] = (struct cp_lines_query){ 0, t.syms[i].start, t.syms[i].start };
		if (t.syms[i].size > 2)
			queries[nqueries++] =
				(struct cp_lines_query){ 0, t.syms[i].start + t.syms[i].size / 2, t.syms[i].start };
	}
	cp_symbols_symtab_free(&t);
}

/* The answers of the file at path at every query, into a[]. */
static void answers(const char *path, struct answer *a)
{
	struct cp_lines_dwarf *d;
	char why[512];
	CHECK(cp_lines_open(path, bid, &d, why, sizeof why) == 0, "%s: %s", path, why);
	for (size_t i = 0; i < nqueries; i++) {
		struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
		a[i].n = 0;
		a[i].st = cp_lines_lookup(d, queries[i].addr, queries[i].sym_start, f, &a[i].n, NULL);
		size_t off = 0;
		a[i].text[0] = '\0';
		for (size_t k = 0; a[i].st == CP_LINES_OK && k < a[i].n && off < sizeof a[i].text; k++) {
			int w = snprintf(a[i].text + off, sizeof a[i].text - off, "%s %s:%u:%u;",
					 f[k].name ? f[k].name : "?", f[k].file, f[k].line, f[k].start_line);
			off += w > 0 ? (size_t)w : 0;
		}
	}
	cp_lines_close(d);
}

/* z's answers are this program's; returns how many times the reader
 * inflated to give them. */
static uint64_t check_answers(const char *what)
{
	struct answer *a = malloc(nqueries * sizeof *a);
	CHECK(a != NULL, "out of memory");
	uint64_t before = cp_test_inflated;
	answers(z, a);
	size_t with = 0;
	for (size_t i = 0; i < nqueries; i++) {
		CHECK(a[i].st == want[i].st && a[i].n == want[i].n && !strcmp(a[i].text, want[i].text),
		      "%s: address %#llx: %s, not %s", what, (unsigned long long)queries[i].addr, a[i].text,
		      want[i].text);
		with += a[i].n > 0;
	}
	CHECK(with * 10 > nqueries * 8, "%s: only %zu of %zu addresses have lines", what, with, nqueries);
	free(a);
	return cp_test_inflated - before;
}

/* The copy's path (the only file in dir) into out; 0 if there is none. */
static int copy_path(char *out, size_t len)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null", dir);
	FILE *p = popen(cmd, "r");
	char name[300] = "";
	int n = 0;
	while (p && fgets(name + 0, sizeof name, p))
		n++;
	if (p)
		pclose(p);
	CHECK(n <= 1, "%d copies in %s", n, dir);
	if (n == 0)
		return 0;
	name[strcspn(name, "\n")] = '\0';
	snprintf(out, len, "%s/%s", dir, name);
	return 1;
}

static off_t size_of(const char *path)
{
	struct stat st;
	CHECK(stat(path, &st) == 0, "stat %s", path);
	return st.st_size;
}

/* Made at the first open, used at the next. */
static void test_made_and_used(void)
{
	char copy[600];
	CHECK(!copy_path(copy, sizeof copy), "a copy before any open");
	CHECK_EQ(check_answers("first open"), 1);
	CHECK(copy_path(copy, sizeof copy), "no copy after the first open");
	const char *name = strrchr(copy, '/') + 1;
	CHECK(!strncmp(name, bid, strlen(bid)) && name[strlen(bid)] == '-', "copy named %s", name);
	struct stat st, zst;
	CHECK(stat(copy, &st) == 0 && stat(z, &zst) == 0, "stat");
	CHECK((st.st_mode & 0777) == 0600, "mode %o", (unsigned)(st.st_mode & 0777));
	CHECK(st.st_size > zst.st_size, "the copy (%lld bytes) is not inflated (%lld)", (long long)st.st_size,
	      (long long)zst.st_size);
	/* Back-date it: the next use must move its time on. */
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	CHECK(utimensat(AT_FDCWD, copy, old, 0) == 0, "utimensat");
	CHECK_EQ(check_answers("second open"), 0);
	CHECK(stat(copy, &st) == 0 && st.st_mtime > 1000000000, "a use does not mark the copy used");
	printf("made at the first open (%lld bytes, %lld on disk), used at the second\n", (long long)st.st_size,
	       (long long)st.st_blocks * 512);
}

/* A sound copy that cannot be mapped now (all of the table's maps held)
 * is answered from memory and left as it is: not deleted, not written
 * again. */
static void test_maps_full(void)
{
	enum { HELD = 64 }; /* debugcopy.c's MAX_MAPS */
	char copy[600];
	CHECK(copy_path(copy, sizeof copy), "no copy");
	struct stat before, after, zst;
	int fd = open(z, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fstat(fd, &zst) == 0 && stat(copy, &before) == 0, "open %s", z);
	void *held[HELD];
	size_t size;
	for (int i = 0; i < HELD; i++)
		CHECK_EQ(cp_debugcopy_get(fd, &zst, &held[i], &size), 1);
	void *one;
	CHECK_EQ(cp_debugcopy_get(fd, &zst, &one, &size), -1);
	CHECK_EQ(check_answers("all maps held"), 0); /* libdw inflates, as without copies: nothing of ours */
	CHECK(stat(copy, &after) == 0, "the copy was deleted when it could not be mapped");
	CHECK(after.st_ino == before.st_ino, "the copy was written again when it could not be mapped");
	for (int i = 0; i < HELD; i++)
		cp_debugcopy_release(held[i]);
	close(fd);
	CHECK_EQ(check_answers("maps let go"), 0);
	printf("all maps held: answered from memory, the copy left as it was\n");
}

/* The offset in the file at path of its section header `name`, the
 * header in *out. */
static off_t section_at(const char *path, const char *name, ElfW(Shdr) *out)
{
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "open %s", path);
	ElfW(Ehdr) eh;
	CHECK(pread(fd, &eh, sizeof eh, 0) == sizeof eh, "read");
	ElfW(Shdr) *sh = malloc(eh.e_shnum * sizeof *sh), names;
	CHECK(sh && pread(fd, sh, eh.e_shnum * sizeof *sh, (off_t)eh.e_shoff) == (ssize_t)(eh.e_shnum * sizeof *sh),
	      "read");
	names = sh[eh.e_shstrndx];
	char *str = malloc(names.sh_size);
	CHECK(str && pread(fd, str, names.sh_size, (off_t)names.sh_offset) == (ssize_t)names.sh_size, "read");
	size_t k = 0;
	for (size_t i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_name < names.sh_size && !strcmp(str + sh[i].sh_name, name))
			k = i;
	CHECK(k > 0, "no %s in %s", name, path);
	*out = sh[k];
	close(fd);
	free(sh);
	free(str);
	return (off_t)(eh.e_shoff + k * sizeof *sh);
}

static void poke(const char *path, off_t at, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, p, n, at) == (ssize_t)n, "write %s", path);
	close(fd);
}

/* Damaged, of another build or of the file before it changed: not used,
 * made again. */
static void test_refused(void)
{
	char copy[600];
	CHECK(copy_path(copy, sizeof copy), "no copy");
	off_t full = size_of(copy);

	CHECK(truncate(copy, full - 100) == 0, "truncate");
	CHECK_EQ(check_answers("copy cut short"), 1);
	CHECK(copy_path(copy, sizeof copy) && size_of(copy) == full, "the copy cut short was not made again");

	/* .debug_info's offset moved by 256 bytes, inside the file: libdw
	 * would read its DIEs from the wrong place. */
	ElfW(Shdr) sh;
	off_t at = section_at(copy, ".debug_info", &sh);
	sh.sh_offset += 256;
	poke(copy, at, &sh, sizeof sh);
	CHECK_EQ(check_answers("section header changed"), 1);
	CHECK_EQ(check_answers("made again"), 0);

	/* Its build ID changed (the headers as they were): the copy of
	 * another build. */
	CHECK(copy_path(copy, sizeof copy), "no copy");
	section_at(copy, ".note.gnu.build-id", &sh);
	unsigned char last;
	int fd = open(copy, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, &last, 1, (off_t)(sh.sh_offset + sh.sh_size - 1)) == 1, "read");
	close(fd);
	last ^= 0x5a;
	poke(copy, (off_t)(sh.sh_offset + sh.sh_size - 1), &last, 1);
	CHECK_EQ(check_answers("build ID changed"), 1);
	CHECK_EQ(check_answers("made again"), 0);

	/* The file changed (its modification time): a copy of the old one is
	 * another file's. */
	struct timespec t[2] = { { 0, UTIME_OMIT }, { 1100000000, 0 } };
	CHECK(utimensat(AT_FDCWD, z, t, 0) == 0, "utimensat");
	CHECK_EQ(check_answers("the file changed"), 1);
	CHECK_EQ(check_answers("the file changed, again"), 0);
	printf("a copy cut short, with a section header or its build ID changed, or of the file before it "
	       "changed: not used, made again\n");
}

/* CPUPROF_INFLATED_CACHE: 0 turns the copies off, and none is made larger
 * than the cap. */
static void test_off(void)
{
	char copy[600];
	CHECK(copy_path(copy, sizeof copy), "no copy");
	off_t full = size_of(copy);
	setenv("CPUPROF_INFLATED_CACHE", "0", 1);
	CHECK_EQ(check_answers("copies off"), 0); /* libdw inflates, as before */
	CHECK(unlink(copy) == 0, "unlink");
	CHECK_EQ(check_answers("copies off, none there"), 0);
	CHECK(!copy_path(copy, sizeof copy), "a copy made with copies off");
	char cap[32];
	snprintf(cap, sizeof cap, "%lldK", (long long)(full >> 10) - 1); /* a KiB short of it at least */
	setenv("CPUPROF_INFLATED_CACHE", cap, 1);
	CHECK_EQ(check_answers("copy larger than the cap"), 0);
	CHECK(!copy_path(copy, sizeof copy), "a copy larger than the cap made");
	unsetenv("CPUPROF_INFLATED_CACHE");
	printf("CPUPROF_INFLATED_CACHE=0: no copy read nor made; none larger than the cap (%s)\n", cap);
}

/* A zlib section that does not inflate: no copy, and the reader says
 * what it says without copies (libdw's judgement, not ours). */
static void test_corrupt_zlib(void)
{
	char bad[300], copy[600], cmd[700], why[512] = "", why0[512] = "";
	snprintf(bad, sizeof bad, "%s/bad", tmpdir);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", z, bad);
	CHECK(system(cmd) == 0, "cp");
	ElfW(Shdr) sh;
	section_at(bad, ".debug_info", &sh);
	static unsigned char junk[256];
	memset(junk, 0xa5, sizeof junk);
	poke(bad, (off_t)(sh.sh_offset + sh.sh_size / 2), junk, sizeof junk);
	snprintf(cmd, sizeof cmd, "rm -f '%s'/*", dir);
	CHECK(system(cmd) == 0, "rm");
	struct cp_lines_dwarf *d = NULL;
	setenv("CPUPROF_INFLATED_CACHE", "0", 1);
	int rc0 = cp_lines_open(bad, bid, &d, why0, sizeof why0);
	cp_lines_close(d);
	unsetenv("CPUPROF_INFLATED_CACHE");
	d = NULL;
	int rc = cp_lines_open(bad, bid, &d, why, sizeof why);
	cp_lines_close(d);
	CHECK(rc == rc0 && !strcmp(why, why0), "%d (%s), not %d (%s) as without copies", rc, why, rc0, why0);
	CHECK(!copy_path(copy, sizeof copy), "a copy of a file whose zlib section does not inflate");
	printf("a zlib section that does not inflate: no copy, the reader's answer as without copies (%d%s%s)\n",
	       rc, why[0] ? ": " : "", why);
}

static void filler(const char *name, size_t mib, time_t when)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	CHECK(f, "create %s", path);
	static char block[1 << 20];
	memset(block, 'x', sizeof block);
	for (size_t i = 0; i < mib; i++)
		CHECK(fwrite(block, 1, sizeof block, f) == sizeof block, "write");
	CHECK(fclose(f) == 0, "close");
	struct timespec t[2] = { { when, 0 }, { when, 0 } };
	CHECK(utimensat(AT_FDCWD, path, t, 0) == 0, "utimensat");
}

static int exists(const char *name)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The cap: the least recently used out first. */
static void test_cap(void)
{
	char copy[600], cmd[700];
	snprintf(cmd, sizeof cmd, "rm -f '%s'/*", dir);
	CHECK(system(cmd) == 0, "rm");
	time_t now = time(NULL);
	filler("a", 1, now - 300);
	filler("b", 1, now - 200);
	filler("c", 1, now - 100);
	filler(".old.1.1", 1, now - 7200);
	filler(".new.1.1", 1, now);
	cp_debugcopy_trim(dir, (5 << 20) / 2, NULL);
	CHECK(!exists("a") && exists("b") && exists("c"), "2.5 MiB of 3: a (oldest) not the one evicted");
	CHECK(!exists(".old.1.1") && exists(".new.1.1"), "temporary files: the old kept or the new removed");
	cp_debugcopy_trim(dir, 1 << 20, "b");
	CHECK(exists("b") && !exists("c"), "the copy kept was evicted, or the other not");
	snprintf(cmd, sizeof cmd, "rm -f '%s'/* '%s'/.new.1.1", dir, dir);
	CHECK(system(cmd) == 0, "rm");

	/* A copy written evicts an older one over the cap, never itself. */
	CHECK_EQ(check_answers("before the cap"), 1);
	CHECK(copy_path(copy, sizeof copy), "no copy");
	struct stat st;
	CHECK(stat(copy, &st) == 0, "stat");
	long long kib = ((long long)st.st_size >> 10) + 1024;
	CHECK(unlink(copy) == 0, "unlink");
	filler("old", 2, now - 100);
	char cap[32];
	snprintf(cap, sizeof cap, "%lldK", kib);
	setenv("CPUPROF_INFLATED_CACHE", cap, 1);
	CHECK_EQ(check_answers("a copy over the cap"), 1);
	unsetenv("CPUPROF_INFLATED_CACHE");
	CHECK(!exists("old"), "the cap (%s) did not evict the older copy", cap);
	CHECK(copy_path(copy, sizeof copy), "the new copy was evicted");
	printf("the cap evicts the least recently used, never the copy just made, and old temporary files\n");
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0, "readlink");
	exe[n] = '\0';
	char why[256];
	if (cp_lines_libdw(why, sizeof why) != 0)
		SKIP("%s", why);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/unit_debugcopy.XXXXXX");
	CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp");
	atexit(cleanup);
	char cache[200], cmd[8000];
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	setenv("XDG_CACHE_HOME", cache, 1);
	unsetenv("CPUPROF_INFLATED_CACHE");
	snprintf(dir, sizeof dir, "%s/cpuprof/inflated", cache);
	snprintf(z, sizeof z, "%s/z", tmpdir);
	snprintf(cmd, sizeof cmd, "objcopy --compress-debug-sections=zlib '%s' '%s' 2>/dev/null", exe, z);
	if (system(cmd) != 0)
		SKIP("objcopy cannot compress debug sections");
	make_queries();
	CHECK(strlen(bid) >= 16, "build ID");
	want = malloc(nqueries * sizeof *want);
	CHECK(want != NULL, "out of memory");
	uint64_t before = cp_test_inflated;
	answers(exe, want); /* uncompressed: nothing to inflate, no copy */
	CHECK_EQ(cp_test_inflated - before, 0);
	test_made_and_used();
	test_maps_full();
	test_refused();
	test_off();
	test_corrupt_zlib();
	test_cap();
	return 0;
}
