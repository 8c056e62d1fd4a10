/*
 * unit_lines_memory.c -- what reading the C library's DWARF costs in
 * memory (issue 32): the lines child opens libc's debug file with libdw and
 * looks up the few functions of it a profile has; on Debian its DWARF is
 * zlib-compressed, and libdw inflates every section it knows at the open.
 * The peak resident set this adds (VmHWM after, less VmRSS before, libdw
 * already loaded; each case in a child of its own, its peak reset by
 * /proc/self/clear_refs),
 * 16 functions across libc looked up, in three cases:
 *  - no inflated copies (CPUPROF_INFLATED_CACHE=0): under LIMIT_KIB,
 *    14 MiB: 13.2 here, where reading the file mapped, with its location
 *    lists inflated too, took 17.7 (14.5 since the pages of a mapped file
 *    are given back once read);
 *  - the first open, which inflates the file and keeps its copy: under
 *    LIMIT_FIRST_KIB, 16 MiB: 14.3 here (the image inflated in the heap,
 *    then read from the copy kept; read from the heap, 18.9);
 *  - the next, which maps that copy: under LIMIT_COPY_KIB, 9 MiB: 5.4
 *    here, where it was 12.8 while the pages libdw had read of the mapped
 *    copy (all of .debug_info, to index the units) stayed resident; they
 *    are given back as it goes.
 * Skipped where libc has no debug file (Debian: libc6-dbg), and under
 * qemu-user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "symbolize/debuglink.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

/* Generous: between what is measured now and what it was. */
#define LIMIT_KIB (14 * 1024)
#define LIMIT_FIRST_KIB (16 * 1024)
#define LIMIT_COPY_KIB (9 * 1024)

static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	size_t kl = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL, "/proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The path of the C library this program runs with. */
static void libc_path(char *out, size_t len)
{
	char line[4096];
	out[0] = '\0';
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof line, f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so.6")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(out, len, "%s", p);
			break;
		}
	}
	fclose(f);
	CHECK(out[0], "no libc.so.6 in /proc/self/maps");
}

/* Resets the peak resident set (VmHWM) to the resident set now. */
static void reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	CHECK(f != NULL, "/proc/self/clear_refs: %s", strerror(errno));
	CHECK(fputs("5", f) >= 0 && fclose(f) == 0, "/proc/self/clear_refs: %s", strerror(errno));
}

/* Opens libc's DWARF as the lines child does and looks up 16 functions
 * across it: the peak resident set it added, in KiB. */
static long lookups(const char *libc, const char *bid, const struct cp_symtab *t, const char *what)
{
	char why[512];
	reset_peak();
	long before = status_kib("VmRSS");
	struct cp_lines_dwarf *d;
	int rc = cp_lines_open(libc, bid, &d, why, sizeof why);
	if (rc == -ENOENT)
		SKIP("no DWARF for %s (libc6-dbg): %s", libc, why);
	CHECK_EQ(rc, 0);
	size_t found = 0, asked = 0;
	for (size_t i = 0; i < t->n; i += t->n / 16 + 1, asked++) {
		struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
		size_t n;
		found += cp_lines_lookup(d, t->syms[i].start, t->syms[i].start, f, &n, NULL) == CP_LINES_OK;
	}
	long added = status_kib("VmHWM") - before;
	cp_lines_close(d);
	printf("%s, %s: %zu of %zu functions with lines; peak +%ld KiB\n", libc, what, found, asked, added);
	CHECK(found * 2 > asked, "only %zu of %zu of libc's functions have lines", found, asked);
	return added;
}

/* lookups() in a child of its own, so that no case finds the heap the one
 * before left (freed, still resident): CPUPROF_INFLATED_CACHE as given
 * (NULL: unset). */
static long in_child(const char *libc, const char *bid, const struct cp_symtab *t, const char *what,
		     const char *inflated)
{
	int p[2];
	CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		if (inflated)
			setenv("CPUPROF_INFLATED_CACHE", inflated, 1);
		else
			unsetenv("CPUPROF_INFLATED_CACHE");
		long v = lookups(libc, bid, t, what);
		fflush(stdout);
		_exit(write(p[1], &v, sizeof v) == sizeof v ? 0 : 1);
	}
	close(p[1]);
	long v = -1;
	ssize_t n = read(p[0], &v, sizeof v);
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		exit(77); /* the child said why it skipped */
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && n == sizeof v, "the %s case failed (status %d)", what, st);
	return v;
}

int main(void)
{
	char libc[4096], bid[2 * SYMBOLS_BUILD_ID_MAX + 1], why[512], dir[] = "/tmp/unit_lines_memory.XXXXXX";
	const char *emu = getenv("EMU");
	if (emu && *emu)
		SKIP("under qemu-user the resident set is the emulator's, its translations in it");
	libc_path(libc, sizeof libc);
	if (cp_lines_libdw(why, sizeof why) != 0)
		SKIP("%s", why);
	struct cp_symtab t;
	CHECK_EQ(cp_symbols_read_file(libc, &t, bid), 0);
	cp_debug_root_dir = "/usr/lib/debug";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	setenv("XDG_CACHE_HOME", dir, 1);

	long none = in_child(libc, bid, &t, "no copies", "0");
	CHECK(none < LIMIT_KIB, "reading libc's DWARF added %ld KiB to the peak resident set (limit %d)", none,
	      LIMIT_KIB);
	long first = in_child(libc, bid, &t, "its copy made", NULL);
	CHECK(first < LIMIT_FIRST_KIB, "making libc's inflated copy added %ld KiB to the peak (limit %d)", first,
	      LIMIT_FIRST_KIB);
	long copy = in_child(libc, bid, &t, "its copy mapped", NULL);
	CHECK(copy < LIMIT_COPY_KIB, "reading libc's inflated copy added %ld KiB to the peak (limit %d)", copy,
	      LIMIT_COPY_KIB);
	char cmd[sizeof dir + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	cp_symbols_symtab_free(&t);
	return 0;
}
