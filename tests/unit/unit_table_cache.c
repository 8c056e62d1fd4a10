/*
 * unit_table_cache.c -- the unwind table cache (unwind/table_cache.h).
 * libc's table, built once, is kept; read back, it is the same table byte
 * for byte.  A kept table is not believed for another .eh_frame_hdr (one
 * bit changed, or one byte shorter), nor when its file is damaged, nor
 * when its index points outside the table although its CRC holds; then
 * the table is built again.  Without a cache directory (no
 * XDG_CACHE_HOME, no HOME, as under env -i) tables are built every time.
 */
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "base/elf.h"
#include "unwind/file.h"
#include "unwind/table_cache.h"

static struct cp_elf elf;
static uint8_t *hdr;
static size_t hdr_len;

/* The table of libc as file.c gives it; *cached says whence. */
static struct cp_utab *table(size_t *bytes, int *cached)
{
	int rejected;
	char why[160];
	struct cp_utab *t = cp_unwind_table_of_elf(&elf, bytes, &rejected, cached, why, sizeof why);
	CHECK(t != NULL, "no table: %s", why);
	return t;
}

static int same(const struct cp_utab *a, size_t na, const struct cp_utab *b, size_t nb)
{
	return na == nb && a->start == b->start && a->end == b->end && a->nblocks == b->nblocks &&
	       a->npages == b->npages && a->code_size == b->code_size &&
	       !memcmp(&a->init, &b->init, sizeof a->init) && !memcmp(a + 1, b + 1, na - sizeof *a);
}

/* A malloc'd copy of t (n bytes) with its pointers into the copy. */
static struct cp_utab *copy(const struct cp_utab *t, size_t n)
{
	struct cp_utab *c = malloc(n);
	CHECK(c != NULL, "malloc");
	memcpy(c, t, n);
	const uint8_t *from = (const uint8_t *)t;
	uint8_t *to = (uint8_t *)c;
	c->blk_pc = (const uint32_t *)(to + ((const uint8_t *)t->blk_pc - from));
	c->blk_off = (const uint32_t *)(to + ((const uint8_t *)t->blk_off - from));
	c->page_blk = (const uint16_t *)(to + ((const uint8_t *)t->page_blk - from));
	c->code = to + (t->code - from);
	return c;
}

int main(void)
{
	Dl_info info;
	CHECK(dladdr((void *)printf, &info) && info.dli_fname, "dladdr(printf)");
	const char *libc = info.dli_fname;
	CHECK(cp_elf_open(&elf, libc) == 0, "cp_elf_open %s", libc);
	if (!elf.build_id[0])
		SKIP("%s has no build ID", libc);
	for (size_t i = 0; i < elf.nseg; i++)
		if (elf.seg[i].type == PT_GNU_EH_FRAME) {
			hdr_len = elf.seg[i].filesz;
			hdr = malloc(hdr_len);
			CHECK(hdr && cp_elf_read(&elf, elf.seg[i].offset, hdr, hdr_len) == 0, "reading .eh_frame_hdr");
		}
	CHECK(hdr != NULL, "%s: no .eh_frame_hdr", libc);

	char dir[] = "/tmp/cpuprof-test-XXXXXX", file[600], cmd[700];
	CHECK(mkdtemp(dir), "mkdtemp");
	setenv("XDG_CACHE_HOME", dir, 1);
	snprintf(file, sizeof file, "%s/cpuprof/unwind/%s", dir, elf.build_id);

	/* Built, kept, read back the same. */
	size_t n1, n2;
	int cached;
	struct cp_utab *built = table(&n1, &cached);
	CHECK(!cached, "a table came from an empty cache");
	FILE *f = fopen(file, "rb");
	CHECK(f != NULL, "the table was not kept as %s", file);
	fclose(f);
	struct cp_utab *kept = table(&n2, &cached);
	CHECK(cached, "the kept table was not read back");
	CHECK(same(built, n1, kept, n2), "the table read back differs from the one built (%zu and %zu bytes)", n1, n2);
	free(kept);
	kept = cp_utab_cache_load(elf.build_id, hdr, hdr_len, &n2);
	CHECK(kept && same(built, n1, kept, n2), "cp_utab_cache_load with libc's own .eh_frame_hdr");
	free(kept);

	/* Another .eh_frame_hdr: not believed. */
	hdr[hdr_len / 2] ^= 1;
	CHECK(!cp_utab_cache_load(elf.build_id, hdr, hdr_len, &n2), "believed for an .eh_frame_hdr with a bit changed");
	hdr[hdr_len / 2] ^= 1;
	CHECK(!cp_utab_cache_load(elf.build_id, hdr, hdr_len - 1, &n2), "believed for a shorter .eh_frame_hdr");

	/* A damaged file: built again, and kept again. */
	f = fopen(file, "r+b");
	CHECK(f && fseek(f, 200, SEEK_SET) == 0, "opening %s", file);
	int c = fgetc(f);
	fseek(f, 200, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
	kept = table(&n2, &cached);
	CHECK(!cached, "a damaged cache file was believed");
	CHECK(same(built, n1, kept, n2), "the table built again differs");
	free(kept);
	kept = table(&n2, &cached);
	CHECK(cached && same(built, n1, kept, n2), "the table built again was not kept");
	free(kept);

	/* A table whose index points outside it, kept with a good CRC: not
	 * believed. */
	struct cp_utab *bad = copy(built, n1);
	CHECK(bad->nblocks > 1, "libc's table has %u blocks", bad->nblocks);
	((uint32_t *)bad->blk_off)[1] = bad->code_size + 5;
	cp_utab_cache_save(elf.build_id, hdr, hdr_len, bad, n1);
	CHECK(!cp_utab_cache_load(elf.build_id, hdr, hdr_len, &n2), "a block beyond the table's code was believed");
	free(bad);
	bad = copy(built, n1);
	if (bad->npages) {
		((uint16_t *)bad->page_blk)[bad->npages - 1] = (uint16_t)bad->nblocks;
		cp_utab_cache_save(elf.build_id, hdr, hdr_len, bad, n1);
		CHECK(!cp_utab_cache_load(elf.build_id, hdr, hdr_len, &n2), "a page beyond the table's blocks was believed");
	}
	free(bad);

	/* No cache directory: built every time. */
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	kept = table(&n2, &cached);
	CHECK(!cached && same(built, n1, kept, n2), "without a cache directory");
	free(kept);

	free(built);
	free(hdr);
	cp_elf_close(&elf);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
