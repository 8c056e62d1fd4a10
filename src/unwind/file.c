/*
 * file.c -- unwind tables of ELF files and images (file.h): the
 * PT_GNU_EH_FRAME segment (.eh_frame_hdr) says where .eh_frame is and how
 * many FDEs it has; .eh_frame is read whole, up to the end of the segment
 * that holds it (the parser stops at its terminator), parsed and encoded,
 * unless the table cache (table_cache.h) has the table already.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>

#include "ehframe.h"
#include "encode.h"
#include "file.h"
#include "table_cache.h"

/* Most executable segments a table covers. */
#define MAX_TEXT 8

struct cp_utab *cp_unwind_table_of_elf(const struct cp_elf *e, size_t *bytes, int *rejected, int *cached,
				       char *why, size_t len)
{
	const struct cp_elf_seg *hdr_seg = NULL;
	struct ehf_range text[MAX_TEXT];
	size_t ntext = 0;
	*rejected = 0;
	*cached = 0;
	for (size_t i = 0; i < e->nseg; i++) {
		const struct cp_elf_seg *s = &e->seg[i];
		if (s->type == PT_GNU_EH_FRAME)
			hdr_seg = s;
		if (s->type == PT_LOAD && (s->flags & PF_X) && s->memsz && ntext < MAX_TEXT)
			text[ntext++] = (struct ehf_range){ s->vaddr, s->vaddr + s->memsz };
	}
	if (!hdr_seg) {
		snprintf(why, len, "no .eh_frame_hdr");
		return NULL;
	}
	*rejected = 1;
	if (hdr_seg->filesz == 0 || hdr_seg->filesz > (64u << 20)) {
		snprintf(why, len, ".eh_frame_hdr of %llu bytes", (unsigned long long)hdr_seg->filesz);
		return NULL;
	}
	uint8_t *hdr = malloc(hdr_seg->filesz);
	uint64_t eh_frame;
	size_t fde_count;
	char err[160];
	if (!hdr || cp_elf_read(e, hdr_seg->offset, hdr, hdr_seg->filesz) != 0) {
		snprintf(why, len, hdr ? ".eh_frame_hdr unreadable" : "out of memory");
		free(hdr);
		return NULL;
	}
	int rc = cp_ehframe_hdr_parse(hdr, hdr_seg->filesz, hdr_seg->vaddr, &eh_frame, &fde_count, err, sizeof err);
	if (rc < 0) {
		free(hdr);
		snprintf(why, len, "%s", err);
		return NULL;
	}
	const struct cp_elf_seg *eh_seg = NULL;
	for (size_t i = 0; i < e->nseg && !eh_seg; i++)
		if (e->seg[i].type == PT_LOAD && eh_frame >= e->seg[i].vaddr &&
		    eh_frame < e->seg[i].vaddr + e->seg[i].filesz)
			eh_seg = &e->seg[i];
	if (!eh_seg) {
		snprintf(why, len, ".eh_frame outside its loaded segments");
		free(hdr);
		return NULL;
	}
	uint64_t size = eh_seg->vaddr + eh_seg->filesz - eh_frame;
	uint8_t *data = size <= (512u << 20) ? malloc(size ? size : 1) : NULL;
	if (!data || cp_elf_read(e, eh_seg->offset + (eh_frame - eh_seg->vaddr), data, size) != 0) {
		snprintf(why, len, data ? ".eh_frame unreadable" : ".eh_frame too large, or out of memory");
		free(data);
		free(hdr);
		return NULL;
	}
	struct cp_utab_source src;
	cp_utab_source_init(&src, hdr, hdr_seg->filesz, data, size, text, ntext * sizeof text[0]);
	free(hdr);
	struct cp_utab *t = cp_utab_cache_load(e->build_id, &src, bytes);
	struct ehf_result r;
	if (t) {
		*rejected = 0;
		*cached = 1;
	} else if (cp_ehframe_parse(data, size, eh_frame, fde_count, text, ntext, &r, err, sizeof err) < 0) {
		snprintf(why, len, "%s", err);
	} else {
		*rejected = 0;
		t = cp_unwind_build(&r, bytes, err, sizeof err);
		if (t)
			cp_utab_cache_save(e->build_id, &src, t, *bytes);
		else
			snprintf(why, len, "%s", err);
		cp_ehframe_free(&r);
	}
	free(data);
	return t;
}
