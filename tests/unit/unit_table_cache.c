/*
 * unit_table_cache.c -- the unwind table cache (unwind/table_cache.h).
 * libc's table, built once, is kept; read back, it is the same table byte
 * for byte.  A kept table is not believed for a file with the same build
 * ID whose .eh_frame or .eh_frame_hdr differ (a copy with one byte
 * changed), nor when its cache file is damaged, nor when its index points
 * outside the table although the file's CRC holds; then the table is
 * built again.  Without a cache directory (no XDG_CACHE_HOME, no HOME, as
 * under env -i) tables are built every time.  The library's tables, built
 * from this process's memory at run-time addresses, share the cache with
 * record's, built from files: libc's, built from memory, is the file's
 * table moved by its load bias, and is kept as the file's; and a process
 * that finds it kept takes it instead of building it.
 */
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#include "../check.h"
#include "base/elf.h"
#include "sig/sigstate.h"
#include "unwind/ehframe.h"
#include "unwind/file.h"
#include "unwind/tables.h"

static char why[160];
static const char *libc;

/* cp_unwind_each_object: libc's `cached` into *arg. */
static void note_cached(const struct unwind_object *o, void *arg)
{
	if (o->has_table && !strcmp(o->name, libc))
		*(int *)arg = o->cached;
}

/* The table of the object at path as file.c gives it, or NULL (why says
 * why); *cached says whence. */
static struct cp_utab *table_of(const char *path, size_t *bytes, int *cached)
{
	struct cp_elf e;
	int rejected;
	CHECK(cp_elf_open(&e, path) == 0, "cp_elf_open %s", path);
	struct cp_utab *t = cp_unwind_table_of_elf(&e, bytes, &rejected, cached, why, sizeof why);
	cp_elf_close(&e);
	return t;
}

static struct cp_utab *table(const char *path, size_t *bytes, int *cached)
{
	struct cp_utab *t = table_of(path, bytes, cached);
	CHECK(t != NULL, "%s: no table: %s", path, why);
	return t;
}

/* Did the table of the copy at path come from the cache?  (The change
 * may have made its .eh_frame malformed: no table then, which is no
 * table from the cache either.) */
static int copy_cached(const char *path)
{
	size_t bytes;
	int cached;
	struct cp_utab *t = table_of(path, &bytes, &cached);
	int from_cache = t && cached;
	free(t);
	return from_cache;
}

static int same(const struct cp_utab *a, size_t na, const struct cp_utab *b, size_t nb)
{
	return na == nb && a->start == b->start && a->end == b->end && a->nblocks == b->nblocks &&
	       a->npages == b->npages && a->code_size == b->code_size &&
	       !memcmp(&a->init, &b->init, sizeof a->init) && !memcmp(a + 1, b + 1, na - sizeof *a);
}

/* The library's table of the code at pc (all tables built now, from this
 * process's memory or the cache), and whether it came from the cache. */
static const struct cp_utab *mem_table(const void *pc, int *cached)
{
	cp_unwind_start(CP_UNWIND_AUTO, 1);
	const struct cp_unwind_set *set = atomic_load(&cp_sig.unwind);
	const struct cp_utab *t = NULL;
	for (size_t i = 0; set && i < set->n; i++)
		if ((uintptr_t)pc >= set->r[i].lo && (uintptr_t)pc < set->r[i].hi)
			t = set->r[i].tab;
	CHECK(t != NULL, "the library has no table for %p", pc);
	*cached = -1;
	cp_unwind_each_object(note_cached, cached);
	return t;
}

/* Is t, the table of the object loaded at bias, the file's table f moved
 * by bias? */
static int moved(const struct cp_utab *t, uintptr_t bias, const struct cp_utab *f, size_t nf)
{
	struct cp_utab m = *t;
	m.start -= bias;
	m.end -= bias;
	return m.start == f->start && m.end == f->end && m.nblocks == f->nblocks && m.npages == f->npages &&
	       m.code_size == f->code_size && !memcmp(&m.init, &f->init, sizeof m.init) &&
	       !memcmp(m.blk_pc, f + 1, nf - sizeof *f);
}

/* Writes a copy of the file `from` as `to` with the byte at off flipped. */
static void flipped_copy(const char *from, const char *to, size_t off)
{
	size_t len;
	unsigned char *b = read_file(from, &len);
	CHECK(off < len, "offset %zu beyond %s", off, from);
	b[off] ^= 0x01;
	write_file(to, b, len);
	free(b);
}

int main(void)
{
	Dl_info info;
	CHECK(dladdr((void *)printf, &info) && info.dli_fname, "dladdr(printf)");
	libc = info.dli_fname;
	struct cp_elf elf;
	CHECK(cp_elf_open(&elf, libc) == 0, "cp_elf_open %s", libc);
	if (!elf.build_id[0])
		SKIP("%s has no build ID", libc);
	/* Where its .eh_frame_hdr and .eh_frame are in the file. */
	size_t hdr_off = 0, hdr_len = 0, eh_off = 0;
	for (size_t i = 0; i < elf.nseg; i++)
		if (elf.seg[i].type == PT_GNU_EH_FRAME) {
			hdr_off = elf.seg[i].offset;
			hdr_len = elf.seg[i].filesz;
			uint8_t *hdr = malloc(hdr_len);
			uint64_t eh_frame;
			size_t count;
			char err[160];
			CHECK(hdr && cp_elf_read(&elf, hdr_off, hdr, hdr_len) == 0 &&
			      cp_ehframe_hdr_parse(hdr, hdr_len, elf.seg[i].vaddr, &eh_frame, &count, err, sizeof err) == 0,
			      "%s: reading its .eh_frame_hdr", libc);
			free(hdr);
			for (size_t j = 0; j < elf.nseg; j++)
				if (elf.seg[j].type == PT_LOAD && eh_frame >= elf.seg[j].vaddr &&
				    eh_frame < elf.seg[j].vaddr + elf.seg[j].filesz)
					eh_off = elf.seg[j].offset + (eh_frame - elf.seg[j].vaddr);
		}
	CHECK(hdr_len && eh_off, "%s: no .eh_frame_hdr, or its .eh_frame not found", libc);

	char dir[] = "/tmp/cpuprof-test-XXXXXX", file[600], copy[600], cmd[700];
	CHECK(mkdtemp(dir), "mkdtemp");
	setenv("XDG_CACHE_HOME", dir, 1);
	snprintf(file, sizeof file, "%s/cpuprof/unwind/%s", dir, elf.build_id);
	snprintf(copy, sizeof copy, "%s/libc-copy.so", dir);

	/* Built, kept, read back the same. */
	size_t n1, n2;
	int cached;
	struct cp_utab *built = table(libc, &n1, &cached);
	CHECK(!cached, "a table came from an empty cache");
	FILE *f = fopen(file, "rb");
	CHECK(f != NULL, "the table was not kept as %s", file);
	fclose(f);
	struct cp_utab *t = table(libc, &n2, &cached);
	CHECK(cached, "the kept table was not read back");
	CHECK(same(built, n1, t, n2), "the table read back differs from the one built (%zu and %zu bytes)", n1, n2);
	free(t);

	/* The same build ID, another .eh_frame (a byte of an FDE's program,
	 * well inside it) or .eh_frame_hdr (the last entry of its search
	 * table): not believed.  Each copy's table, if it has one, is then
	 * kept in libc's place, and libc's own is built again. */
	flipped_copy(libc, copy, eh_off + 4096);
	CHECK(!copy_cached(copy), "libc's table was believed for a copy whose .eh_frame differs");
	flipped_copy(libc, copy, hdr_off + hdr_len - 1);
	CHECK(!copy_cached(copy), "libc's table was believed for a copy whose .eh_frame_hdr differs");
	t = table(libc, &n2, &cached);
	CHECK(same(built, n1, t, n2), "libc's table differs after its copies' were kept");
	free(t);

	/* A damaged file: built again, and kept again. */
	flipped_copy(file, file, 200);
	t = table(libc, &n2, &cached);
	CHECK(!cached, "a damaged cache file was believed");
	CHECK(same(built, n1, t, n2), "the table built again differs");
	free(t);
	t = table(libc, &n2, &cached);
	CHECK(cached && same(built, n1, t, n2), "the table built again was not kept");
	free(t);

	/* An index that points outside the table, in a file whose CRC holds:
	 * not believed.  The arrays follow the file's header and end 4 bytes
	 * (the CRC) before its end: blk_pc[nblocks], blk_off[nblocks],
	 * page_blk[npages], code[code_size]. */
	size_t len;
	free(read_file(file, &len));
	size_t arrays = len - 4 - (n1 - sizeof *built);
	CHECK(built->nblocks > 1 && built->npages > 0, "libc's table: %u blocks, %u pages", built->nblocks,
	      built->npages);
	uint32_t beyond = built->code_size + 5;
	forge_cache_file(file, arrays + 4 * (size_t)built->nblocks + 4, &beyond, 4);
	free(table(libc, &n2, &cached));
	CHECK(!cached, "a block beyond the table's code was believed");
	uint16_t blk = (uint16_t)built->nblocks;
	forge_cache_file(file, arrays + 8 * (size_t)built->nblocks + 2 * (size_t)(built->npages - 1), &blk, 2);
	free(table(libc, &n2, &cached));
	CHECK(!cached, "a page beyond the table's blocks was believed");

	/* The library's table of libc, from memory: the file's moved by the
	 * load bias, and kept as the file's.  Then a child, which starts with
	 * no tables, takes it from the cache. */
	char dir2[] = "/tmp/cpuprof-test-XXXXXX";
	CHECK(mkdtemp(dir2), "mkdtemp");
	setenv("XDG_CACHE_HOME", dir2, 1);
	uintptr_t bias = (uintptr_t)info.dli_fbase;
	int mcached;
	const struct cp_utab *m = mem_table((void *)printf, &mcached);
	CHECK(mcached == 0, "libc's table from an empty cache: cached %d", mcached);
	CHECK(moved(m, bias, built, n1), "libc's table from memory is not the file's moved by %#lx",
	      (unsigned long)bias);
	t = table(libc, &n2, &cached);
	CHECK(cached && same(built, n1, t, n2), "the table the library kept is not the file's (cached %d)", cached);
	free(t);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		cp_unwind_after_fork();
		const struct cp_utab *c = mem_table((void *)printf, &mcached);
		_exit(mcached != 1 ? 10 : !moved(c, bias, built, n1) ? 11 : 0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "the child: status %#x", st);
	CHECK(WEXITSTATUS(st) != 10, "the child built libc's table although it was kept");
	CHECK(WEXITSTATUS(st) == 0, "the child's table of libc from the cache is not the file's moved");
	cp_unwind_stop(1);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir2);
	CHECK(system(cmd) == 0, "%s", cmd);

	/* No cache directory: built every time. */
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	t = table(libc, &n2, &cached);
	CHECK(!cached && same(built, n1, t, n2), "without a cache directory");
	free(t);

	free(built);
	cp_elf_close(&elf);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
