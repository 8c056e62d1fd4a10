/*
 * table_cache.c -- unwind tables kept on disk (table_cache.h).
 *
 * A file, in the machine's byte order:
 *   "CPUNWND\n", u32 0x01020304, u32 the encoder's checksum,
 *   char[16] the architecture (CP_ARCH_NAME, NUL-padded),
 *   u64 the lengths of the .eh_frame_hdr, the .eh_frame and the code's
 *   ranges, u32 their CRC-32s, u32 0,
 *   u64 start, u64 end, u32 nblocks, u32 npages, u32 code_size,
 *   u8 cfa, fp, ra, plt, i32 cfa_off, fp_off, ra_off (the initial rule),
 *   then the table's arrays as cp_unwind_build lays them out after its
 *   header: blk_pc[nblocks], blk_off[nblocks] (u32), page_blk[npages]
 *   (u16), code[code_size];
 * and last (base/cachefile.c) the CRC-32 of all before it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "arch.h"
#include "base/cachefile.h"
#include "table_cache.h"

#ifndef CP_UNWIND_CODE
#error "CP_UNWIND_CODE (the checksum of the table encoder's sources) comes from the Makefile"
#endif

#define MAGIC "CPUNWND\n"
#define MAX_FILE (64u << 20)

struct head {
	char magic[8];
	uint32_t order, code;
	char arch[16];
	uint64_t hdr_len, eh_len, text_len;
	uint32_t hdr_crc, eh_crc, text_crc, zero;
	uint64_t start, end;
	uint32_t nblocks, npages, code_size;
	uint8_t cfa, fp, ra, plt;
	int32_t cfa_off, fp_off, ra_off;
};

static uint32_t crc(const void *p, size_t n)
{
	return (uint32_t)crc32(0, (const Bytef *)p, (uInt)n);
}

void cp_utab_source_init(struct cp_utab_source *src, const void *hdr, size_t hdr_len, const void *eh,
			 size_t eh_len, const void *text, size_t text_len)
{
	*src = (struct cp_utab_source){ .hdr_len = hdr_len, .eh_len = eh_len, .text_len = text_len,
					.hdr_crc = crc(hdr, hdr_len), .eh_crc = crc(eh, eh_len),
					.text_crc = crc(text, text_len) };
}

static void head_of(struct head *h, const struct cp_utab_source *src)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, MAGIC, 8);
	h->order = 0x01020304;
	h->code = (uint32_t)CP_UNWIND_CODE;
	snprintf(h->arch, sizeof h->arch, "%s", CP_ARCH_NAME);
	h->hdr_len = src->hdr_len;
	h->eh_len = src->eh_len;
	h->text_len = src->text_len;
	h->hdr_crc = src->hdr_crc;
	h->eh_crc = src->eh_crc;
	h->text_crc = src->text_crc;
}

/* Is t's index consistent: every block and page entry within the table,
 * the blocks in order?  (What the encoder guarantees, checked so that no
 * lookup can leave the table.) */
static int consistent(const struct cp_utab *t)
{
	uint64_t span = (uint64_t)t->end - t->start;
	if (t->nblocks == 0 || t->start >= t->end || span > UINT32_MAX || t->code_size == 0)
		return 0;
	uint64_t npages = t->nblocks <= UINT16_MAX ? ((span - 1) >> CP_UT_PAGE_SHIFT) + 1 : 0;
	if (t->npages != npages || t->init.cfa > CP_CFA_END || t->init.fp > CP_REG_UNKNOWN ||
	    t->init.ra > CP_REG_UNKNOWN)
		return 0;
	for (uint32_t i = 0; i < t->nblocks; i++)
		if (t->blk_pc[i] >= span || t->blk_off[i] >= t->code_size ||
		    (i && (t->blk_pc[i] < t->blk_pc[i - 1] || t->blk_off[i] <= t->blk_off[i - 1])))
			return 0;
	for (uint32_t p = 0; p < t->npages; p++)
		if (t->page_blk[p] >= t->nblocks)
			return 0;
	return 1;
}

struct cp_utab *cp_utab_cache_load(const char *build_id, const struct cp_utab_source *src, size_t *bytes)
{
	char dir[4096];
	if (!build_id || !cp_cache_key_valid(build_id) || cp_cache_dir("unwind", dir, sizeof dir, 0) != 0)
		return NULL;
	size_t len;
	char *buf = cp_cache_read(dir, build_id, MAX_FILE, &len);
	if (!buf)
		return NULL;
	struct head want, h;
	head_of(&want, src);
	struct cp_utab *t = NULL;
	if (len < sizeof h)
		goto out;
	memcpy(&h, buf, sizeof h);
	/* Everything up to the table's own fields must be as now. */
	if (memcmp(&h, &want, offsetof(struct head, start)))
		goto out;
	size_t idx = 2 * (size_t)h.nblocks * sizeof(uint32_t), pages = (size_t)h.npages * sizeof(uint16_t);
	if (len - sizeof h != idx + pages + h.code_size)
		goto out;
	t = malloc(sizeof *t + (len - sizeof h));
	if (!t)
		goto out;
	uint32_t *ix = (uint32_t *)(t + 1);
	memcpy(ix, buf + sizeof h, len - sizeof h);
	*t = (struct cp_utab){
		.start = (uintptr_t)h.start, .end = (uintptr_t)h.end,
		.nblocks = h.nblocks, .code_size = h.code_size, .npages = h.npages,
		.init = { .cfa = h.cfa, .fp = h.fp, .ra = h.ra, .plt = h.plt,
			  .cfa_off = h.cfa_off, .fp_off = h.fp_off, .ra_off = h.ra_off },
		.blk_pc = ix, .blk_off = ix + h.nblocks,
		.page_blk = (const uint16_t *)((uint8_t *)ix + idx),
		.code = (const uint8_t *)ix + idx + pages,
	};
	if (!consistent(t)) {
		free(t);
		t = NULL;
		goto out;
	}
	*bytes = sizeof *t + (len - sizeof h);
out:
	free(buf);
	return t;
}

void cp_utab_cache_save(const char *build_id, const struct cp_utab_source *src, const struct cp_utab *t,
			size_t bytes)
{
	char dir[4096];
	if (!build_id || !cp_cache_key_valid(build_id) || bytes < sizeof *t ||
	    cp_cache_dir("unwind", dir, sizeof dir, 1) != 0)
		return;
	size_t payload = bytes - sizeof *t;
	char *buf = malloc(sizeof(struct head) + payload);
	if (!buf)
		return;
	struct head h;
	head_of(&h, src);
	h.start = t->start;
	h.end = t->end;
	h.nblocks = t->nblocks;
	h.npages = t->npages;
	h.code_size = t->code_size;
	h.cfa = t->init.cfa;
	h.fp = t->init.fp;
	h.ra = t->init.ra;
	h.plt = t->init.plt;
	h.cfa_off = t->init.cfa_off;
	h.fp_off = t->init.fp_off;
	h.ra_off = t->init.ra_off;
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, t + 1, payload);
	cp_cache_write(dir, build_id, buf, sizeof h + payload);
	free(buf);
}
