/*
 * unit_symtab_cache.c -- the symbol table cache (symbolize/symtab_cache.h).
 * A table kept is read back the same, symbol for symbol, also for the
 * same file by another path.  It is not believed for another file with
 * the same build ID (a copy), nor once its file changed (mtime), nor when the kept table is not
 * one a build gives (starts out of order, a name outside the names) though
 * its CRC holds.  And the symbolizer uses it: a snapshot of this process
 * names printf from the kept table of libc (a name changed in the kept
 * file shows).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "../check.h"
#include "symbolize/symbols.h"
#include "symbolize/symtab_cache.h"

static int same(const struct cp_symtab *a, const struct cp_symtab *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->syms[i].start != b->syms[i].start || a->syms[i].size != b->syms[i].size ||
		    strcmp(a->syms[i].name, b->syms[i].name))
			return 0;
	return 1;
}

/* Is the table kept for bid believed for the file at path? */
static int believed(const char *bid, const char *path)
{
	struct cp_symtab t = { 0 };
	int ok = cp_symtab_cache_load(bid, path, &t) == 0;
	cp_symbols_symtab_free(&t);
	return ok;
}

int main(void)
{
	Dl_info info;
	CHECK(dladdr((void *)printf, &info) && info.dli_fname, "dladdr(printf)");
	char dir[] = "/tmp/cpuprof-test-XXXXXX", copy[600], other[600], file[600], cmd[700];
	CHECK(mkdtemp(dir), "mkdtemp");
	setenv("XDG_CACHE_HOME", dir, 1);
	snprintf(copy, sizeof copy, "%s/libc-copy.so", dir);
	snprintf(other, sizeof other, "%s/libc-other.so", dir);
	size_t len;
	unsigned char *img = read_file(info.dli_fname, &len);
	write_file(copy, img, len);
	write_file(other, img, len);
	free(img);

	struct cp_symtab t0, t = { 0 };
	char bid[2 * SYMBOLS_BUILD_ID_MAX + 1];
	CHECK_EQ(cp_symbols_read_file(copy, &t0, bid), 0);
	if (!bid[0])
		SKIP("%s has no build ID", info.dli_fname);
	CHECK(t0.n > 100, "libc: %zu symbols", t0.n);
	snprintf(file, sizeof file, "%s/cpuprof/symbols/%s", dir, bid);

	/* Kept, read back the same. */
	CHECK(!believed(bid, copy), "a table from an empty cache");
	cp_symtab_cache_save(bid, copy, &t0);
	CHECK_EQ(cp_symtab_cache_load(bid, copy, &t), 0);
	CHECK(same(&t, &t0), "the table read back differs (%zu and %zu symbols)", t.n, t0.n);
	cp_symbols_symtab_free(&t);
	printf("libc: %zu symbols kept\n", t0.n);

	/* The same file by another path (a symlinked directory, as /lib and
	 * /usr/lib under usrmerge): believed.  Another file with the same
	 * build ID; the file changed since: not. */
	char linked[600], via[700];
	snprintf(linked, sizeof linked, "%s/linked", dir);
	snprintf(via, sizeof via, "%s/libc-copy.so", linked);
	CHECK(symlink(dir, linked) == 0, "symlink");
	CHECK(believed(bid, via), "not believed for the same file by another path");
	unlink(linked);
	CHECK(!believed(bid, other), "believed for another file with the same build ID");
	struct timespec later[2] = { { 0, UTIME_OMIT }, { time(NULL) + 100, 0 } };
	CHECK(utimensat(AT_FDCWD, copy, later, 0) == 0, "utimensat");
	CHECK(!believed(bid, copy), "believed for a file changed since");
	cp_symtab_cache_save(bid, copy, &t0);
	CHECK(believed(bid, copy), "kept again");

	/* Not what a build gives, the CRC made good: the second symbol's
	 * start before the first's; the first name's offset past the names.
	 * The entries (u64 start, size, name) follow the path and its NUL. */
	unsigned char *kept = read_file(file, &len);
	unsigned char *p = memmem(kept, len, copy, strlen(copy) + 1);
	CHECK(p != NULL, "the path is not in %s", file);
	size_t entries = (size_t)(p - kept) + strlen(copy) + 1;
	uint64_t v = 0;
	forge_cache_file(file, entries + 24, &v, 8);
	CHECK(!believed(bid, copy), "believed with its starts out of order");
	write_file(file, kept, len);
	v = len;
	forge_cache_file(file, entries + 16, &v, 8);
	CHECK(!believed(bid, copy), "believed with a name outside its names");
	write_file(file, kept, len);
	CHECK(believed(bid, copy), "restored");
	free(kept);
	cp_symbols_symtab_free(&t0);

	/* The symbolizer: libc's table is kept at the first snapshot and
	 * read back at the next.  Its printf renamed in the kept file (the
	 * same length, the CRC made good) names printf in the next. */
	struct cp_symbols *s = cp_symbols_load();
	uintptr_t start;
	const char *name = s ? cp_symbols_name_for(s, (uintptr_t)printf, &start) : NULL;
	CHECK(name != NULL, "printf has no name");
	char was[256], now[256];
	snprintf(was, sizeof was, "%s", name);
	cp_symbols_free(s);
	/* Which file was kept: the debug file's or libc's own, either way the
	 * one file in the cache's directory for libc's build ID. */
	kept = read_file(file, &len);
	char key[sizeof was + 2];
	key[0] = '\0';
	snprintf(key + 1, sizeof key - 1, "%s", was);
	p = memmem(kept, len, key, strlen(was) + 2);
	CHECK(p != NULL, "%s is not among the kept names", was);
	char up[sizeof was];
	for (size_t i = 0; was[i]; i++)
		up[i] = was[i] >= 'a' && was[i] <= 'z' ? (char)(was[i] - 32) : was[i];
	forge_cache_file(file, (size_t)(p - kept) + 1, up, strlen(was));
	free(kept);
	s = cp_symbols_load();
	name = s ? cp_symbols_name_for(s, (uintptr_t)printf, &start) : NULL;
	snprintf(now, sizeof now, "%s", name ? name : "(none)");
	cp_symbols_free(s);
	printf("printf: %s, then from the kept table %s\n", was, now);
	CHECK(strncmp(now, up, strlen(was)) == 0 && strlen(now) == strlen(was),
	      "the next snapshot did not read the kept table: %s", now);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
