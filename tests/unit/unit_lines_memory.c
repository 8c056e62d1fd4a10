/*
 * unit_lines_memory.c -- what reading the C library's DWARF costs in
 * memory (issue 32): the lines child opens libc's debug file with libdw and
 * looks up the few functions of it a profile has; on Debian its DWARF is
 * zlib-compressed, and libdw inflates every section it knows at the open.
 * The peak resident set this adds (VmHWM after, less VmRSS before, libdw
 * already loaded), 16 functions across libc looked up, must stay under
 * LIMIT_KIB, 15.5 MiB: 12.7 MiB here, where reading the file mapped, with
 * its location lists inflated too, took 17.7.  Skipped where libc has no
 * debug file (Debian: libc6-dbg), and under qemu-user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "symbolize/debuglink.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

/* Generous: between what is measured now and what it was. */
#define LIMIT_KIB (31 * 512)

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

int main(void)
{
	char libc[4096], bid[2 * SYMBOLS_BUILD_ID_MAX + 1], why[512];
	const char *emu = getenv("EMU");
	if (emu && *emu)
		SKIP("under qemu-user the resident set is the emulator's, its translations in it");
	libc_path(libc, sizeof libc);
	if (cp_lines_libdw(why, sizeof why) != 0)
		SKIP("%s", why);
	struct cp_symtab t;
	CHECK_EQ(cp_symbols_read_file(libc, &t, bid), 0);
	cp_debug_root_dir = "/usr/lib/debug";

	long before = status_kib("VmRSS");
	struct cp_lines_dwarf *d;
	int rc = cp_lines_open(libc, bid, &d, why, sizeof why);
	if (rc == -ENOENT)
		SKIP("no DWARF for %s (libc6-dbg): %s", libc, why);
	CHECK_EQ(rc, 0);
	/* A profile's few addresses in libc: 16 functions across it. */
	size_t found = 0, asked = 0;
	for (size_t i = 0; i < t.n; i += t.n / 16 + 1, asked++) {
		struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
		size_t n;
		found += cp_lines_lookup(d, t.syms[i].start, t.syms[i].start, f, &n, NULL) == CP_LINES_OK;
	}
	long added = status_kib("VmHWM") - before;
	cp_lines_close(d);
	printf("%s: %zu of %zu functions with lines; peak +%ld KiB (limit %d)\n", libc, found, asked, added,
	       LIMIT_KIB);
	CHECK(found * 2 > asked, "only %zu of %zu of libc's functions have lines", found, asked);
	CHECK(added < LIMIT_KIB, "reading libc's DWARF added %ld KiB to the peak resident set (limit %d)", added,
	      LIMIT_KIB);
	cp_symbols_symtab_free(&t);
	return 0;
}
