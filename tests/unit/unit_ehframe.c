/*
 * unit_ehframe.c -- the .eh_frame parser and the compact unwind tables.
 * (1) For real objects (libc, the loader, libm, libz, our own library and
 * this program), every row `readelf --debug-dump=frames-interp` prints
 * agrees with the rule our table gives at that pc (CFA, saved rbp, return
 * address), and the encoded table answers exactly what the parsed rows say
 * at every byte of every FDE.  (2) Crafted sections: a well-formed one
 * gives the rows its program says (push/pop, frame pointer, remember and
 * restore, the PLT expression, a signal frame, an outermost frame); each
 * malformed one is rejected with its reason.  (3) Every truncation of
 * libc's .eh_frame is rejected; bit-flipped copies never crash the parser
 * or a lookup in what it accepts.  Each architecture has its own crafted
 * programs (x86-64: rsp, rbp and a return address on the stack; aarch64:
 * sp, x29 and x30, where a frameless function's return address stays in
 * the link register, "same value") and checks its own objects against
 * readelf (on aarch64, under qemu-user, the multiarch arm64 libraries).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "../check.h"
#include "unwind/ehframe.h"
#include "unwind/encode.h"

/* ---- reading an ELF file's sections ---- */

struct elf {
	uint8_t *data;
	size_t size;
	const Elf64_Shdr *sh;
	size_t shnum;
	const char *shstr;
};

static int elf_open(const char *path, struct elf *e)
{
	memset(e, 0, sizeof *e);
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	e->size = (size_t)st.st_size;
	e->data = malloc(e->size);
	CHECK(e->data, "out of memory");
	CHECK(read(fd, e->data, e->size) == (ssize_t)e->size, "short read of %s", path);
	close(fd);
	const Elf64_Ehdr *eh = (const void *)e->data;
	CHECK(e->size > sizeof *eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG), "%s: not ELF", path);
	CHECK(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= e->size, "%s: bad shdrs", path);
	e->sh = (const void *)(e->data + eh->e_shoff);
	e->shnum = eh->e_shnum;
	e->shstr = (const char *)e->data + e->sh[eh->e_shstrndx].sh_offset;
	return 0;
}

static const Elf64_Shdr *elf_section(const struct elf *e, const char *name)
{
	for (size_t i = 0; i < e->shnum; i++)
		if (!strcmp(e->shstr + e->sh[i].sh_name, name))
			return &e->sh[i];
	return NULL;
}

/* The executable PT_LOAD segments as link-time ranges. */
static size_t elf_text(const struct elf *e, struct ehf_range *r, size_t max)
{
	const Elf64_Ehdr *eh = (const void *)e->data;
	const Elf64_Phdr *ph = (const void *)(e->data + eh->e_phoff);
	size_t n = 0;
	for (size_t i = 0; i < eh->e_phnum && n < max; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			r[n].lo = ph[i].p_vaddr;
			r[n].hi = ph[i].p_vaddr + ph[i].p_memsz;
			n++;
		}
	return n;
}

/* Parses the .eh_frame of file `path` (link-time addresses). */
static int parse_file(const char *path, struct elf *e, struct ehf_result *r, size_t *fde_count, char *err,
		      size_t errlen)
{
	if (elf_open(path, e) < 0)
		return -2;
	const Elf64_Shdr *hdr = elf_section(e, ".eh_frame_hdr"), *ehf = elf_section(e, ".eh_frame");
	CHECK(hdr && ehf, "%s: no .eh_frame_hdr / .eh_frame", path);
	uint64_t ptr;
	CHECK(cp_ehframe_hdr_parse(e->data + hdr->sh_offset, hdr->sh_size, hdr->sh_addr, &ptr, fde_count, err, errlen) == 0,
	      "%s: %s", path, err);
	CHECK(ptr == ehf->sh_addr, "%s: eh_frame_ptr %#lx, section at %#lx", path, (long)ptr, (long)ehf->sh_addr);
	struct ehf_range text[8];
	size_t ntext = elf_text(e, text, 8);
	return cp_ehframe_parse(e->data + ehf->sh_offset, ehf->sh_size, ehf->sh_addr, *fde_count, text, ntext, r, err,
			     errlen);
}

/* ---- the rule at a pc, from the parsed rows ---- */

static const struct ehf_row *row_at(const struct ehf_result *r, uint64_t pc)
{
	size_t a = 0, b = r->nfdes;
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (pc < r->fdes[m].start)
			b = m;
		else if (pc >= r->fdes[m].end)
			a = m + 1;
		else {
			const struct ehf_fde *f = &r->fdes[m];
			const struct ehf_row *best = &r->rows[f->first];
			for (uint32_t j = 0; j < f->nrows && r->rows[f->first + j].pc <= pc; j++)
				best = &r->rows[f->first + j];
			return best;
		}
	}
	return NULL;
}

static int rules_equal(const struct cp_urule *a, const struct cp_urule *b)
{
	return !memcmp(a, b, sizeof *a);
}

static const char *rule_str(const struct cp_urule *r, char *buf, size_t len)
{
	snprintf(buf, len, "cfa=%u%+d fp=%u%+d ra=%u%+d plt=%u", r->cfa, r->cfa_off, r->fp, r->fp_off, r->ra,
		 r->ra_off, r->plt);
	return buf;
}

/* ---- (1) real objects against readelf ---- */

/* How readelf names this architecture's registers, and where its objects
 * are. */
struct arch_names {
	const char *sp_cfa, *fp_cfa; /* a CFA off the stack or frame pointer (sscanf) */
	const char *fp;              /* the frame pointer's column */
	int lr;                      /* "u" for the return address can mean the link register */
	const char *objects[5];      /* libc first */
};

static const struct arch_names x86_64_names = {
	"rsp%d", "rbp%d", "rbp", 0,
	{ "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libm.so.6",
	  "/lib/x86_64-linux-gnu/libz.so.1", NULL },
};
static const struct arch_names aarch64_names = {
	"sp%d", "x29%d", "x29", 1,
	{ "/lib/aarch64-linux-gnu/libc.so.6", "/lib/ld-linux-aarch64.so.1", "/lib/aarch64-linux-gnu/libm.so.6",
	  "/lib/aarch64-linux-gnu/libz.so.1", NULL },
};
static const struct arch_names *names = &x86_64_names;

/* Compares the table built from `path` with readelf's interpretation of
 * every row, and with our own rows at every pc. */
static void check_object(const char *path)
{
	struct elf e;
	struct ehf_result r;
	size_t fde_count;
	char err[256], b1[128], b2[128];
	int rc = parse_file(path, &e, &r, &fde_count, err, sizeof err);
	if (rc == -2) {
		printf("# %s: not present, skipped\n", path);
		return;
	}
	CHECK(rc == 0, "%s: rejected: %s", path, err);
	CHECK(r.nfdes > 0, "%s: no FDEs", path);
	size_t bytes;
	struct cp_utab *t = cp_unwind_build(&r, &bytes, err, sizeof err);
	CHECK(t, "%s: %s", path, err);

	/* Every pc of every FDE, and the gaps between them. */
	size_t lookups = 0;
	for (size_t i = 0; i < r.nfdes; i++) {
		const struct ehf_fde *f = &r.fdes[i];
		uint64_t hi = i + 1 < r.nfdes ? r.fdes[i + 1].start : f->end;
		for (uint64_t pc = f->start; pc < hi; pc++) {
			struct cp_urule got;
			int have = cp_utab_lookup(t, (uintptr_t)pc, &got);
			const struct ehf_row *want = row_at(&r, pc);
			lookups++;
			if (pc < f->end) {
				CHECK(have && want && rules_equal(&got, &want->rule), "%s: pc %#lx: table %s, rows %s",
				      path, (long)pc, have ? rule_str(&got, b1, sizeof b1) : "none",
				      want ? rule_str(&want->rule, b2, sizeof b2) : "none");
			} else if (hi - f->end >= 16) {
				CHECK(!have, "%s: pc %#lx in a hole has a rule", path, (long)pc);
			}
		}
	}

	/* readelf's rows. */
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	CHECK(p, "popen readelf");
	char line[4096], cols[64][16];
	int ncols = 0, in_fde = 0;
	size_t checked = 0;
	while (fgets(line, sizeof line, p)) {
		if (strstr(line, " FDE cie=")) {
			in_fde = 1;
			ncols = 0;
			continue;
		}
		if (strstr(line, " CIE")) {
			in_fde = 0;
			continue;
		}
		if (in_fde && strstr(line, "   LOC ")) {
			ncols = 0;
			char *save, *tok = strtok_r(line, " \n", &save);
			while (tok && ncols < 64) {
				snprintf(cols[ncols++], sizeof cols[0], "%s", tok);
				tok = strtok_r(NULL, " \n", &save);
			}
			continue;
		}
		unsigned long pc;
		if (!in_fde || !ncols || sscanf(line, "%16lx ", &pc) != 1 || strlen(line) < 17 || line[16] != ' ')
			continue;
		/* Tokens; "r9 (r9)" is one value. */
		char val[64][32];
		int nv = 0;
		char *save, *tok = strtok_r(line, " \n", &save);
		while (tok && nv < 64) {
			if (tok[0] == '(' && nv > 0) {
				tok = strtok_r(NULL, " \n", &save);
				continue;
			}
			snprintf(val[nv++], sizeof val[0], "%s", tok);
			tok = strtok_r(NULL, " \n", &save);
		}
		const char *cfa = NULL, *rbp = "u", *ra = "u";
		for (int i = 1; i < nv && i < ncols; i++) {
			if (!strcmp(cols[i], "CFA"))
				cfa = val[i];
			else if (!strcmp(cols[i], names->fp))
				rbp = val[i];
			else if (!strcmp(cols[i], "ra"))
				ra = val[i];
		}
		CHECK(cfa, "%s: cannot read readelf row at %#lx", path, pc);
		struct cp_urule got;
		CHECK(cp_utab_lookup(t, pc, &got), "%s: readelf has a row at %#lx, the table none", path, pc);
		checked++;
		/* "u": undefined, and a column readelf has no rule for.  On
		 * x86-64 every CIE saves the return address: "u" is an
		 * outermost frame.  On aarch64 it is that, or (no rule for x30
		 * at all) the return address still in the link register. */
		int lr = 0;
		if (!strcmp(ra, "u")) {
			lr = names->lr && got.cfa != CP_CFA_END;
			if (!lr) {
				CHECK(got.cfa == CP_CFA_END, "%s: %#lx: outermost frame, table %s", path, pc,
				      rule_str(&got, b1, sizeof b1));
				continue;
			}
		}
		int off;
		if (sscanf(cfa, names->sp_cfa, &off) == 1 || sscanf(cfa, names->fp_cfa, &off) == 1) {
			if (got.cfa == CP_CFA_SIGFRAME)
				continue;
			int want = !strncmp(cfa, names->fp, strlen(names->fp)) ? CP_CFA_FP : CP_CFA_SP;
			int raoff = 0;
			if (!lr && sscanf(ra, "c%d", &raoff) != 1) {
				CHECK(got.cfa == CP_CFA_NONE, "%s: %#lx: ra %s, table %s", path, pc, ra,
				      rule_str(&got, b1, sizeof b1));
				continue;
			}
			CHECK(got.cfa == want && got.cfa_off == off, "%s: %#lx: CFA %s, table %s", path, pc, cfa,
			      rule_str(&got, b1, sizeof b1));
			if (lr)
				CHECK(got.ra == CP_REG_SAME, "%s: %#lx: ra in the link register, table %s", path, pc,
				      rule_str(&got, b1, sizeof b1));
			else
				CHECK(got.ra == CP_REG_AT_CFA && got.ra_off == raoff, "%s: %#lx: ra %s, table %s", path, pc,
				      ra, rule_str(&got, b1, sizeof b1));
			int fpoff;
			if (!strcmp(rbp, "u") || !strcmp(rbp, "s"))
				CHECK(got.fp == CP_REG_SAME, "%s: %#lx: rbp %s, table %s", path, pc, rbp,
				      rule_str(&got, b1, sizeof b1));
			else if (sscanf(rbp, "c%d", &fpoff) == 1)
				CHECK(got.fp == CP_REG_AT_CFA && got.fp_off == fpoff, "%s: %#lx: rbp %s, table %s", path,
				      pc, rbp, rule_str(&got, b1, sizeof b1));
			else
				CHECK(got.fp == CP_REG_UNKNOWN, "%s: %#lx: rbp %s, table %s", path, pc, rbp,
				      rule_str(&got, b1, sizeof b1));
		} else {
			/* An expression or another register: a PLT entry, a
			 * signal frame, or nothing we can use. */
			CHECK(got.cfa == CP_CFA_NONE || got.cfa == CP_CFA_PLT || got.cfa == CP_CFA_SIGFRAME,
			      "%s: %#lx: CFA %s, table %s", path, pc, cfa, rule_str(&got, b1, sizeof b1));
		}
	}
	int st = pclose(p);
	CHECK(st == 0 || checked > 0, "readelf failed on %s", path);
	CHECK(checked > 0 || r.nrows == r.nfdes, "%s: readelf printed no rows", path);
	printf("# %s: %zu FDEs (%zu in .eh_frame_hdr), %zu rows, .eh_frame %zu bytes, table %zu bytes (%.2f), "
	       "%zu readelf rows agree, %zu lookups agree\n",
	       path, r.nfdes, fde_count, r.nrows, r.used, bytes, (double)bytes / (double)r.used, checked, lookups);
	free(t);
	cp_ehframe_free(&r);
	free(e.data);
}

/* ---- (2) crafted sections ---- */

struct sec {
	uint8_t b[4096];
	size_t n;
};

static void u8(struct sec *s, unsigned v) { s->b[s->n++] = (uint8_t)v; }
static void u32(struct sec *s, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		u8(s, (v >> (8 * i)) & 0xff);
}
static void uleb(struct sec *s, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		u8(s, b | (v ? 0x80 : 0));
	} while (v);
}
static void sleb(struct sec *s, int64_t v)
{
	for (;;) {
		uint8_t b = v & 0x7f;
		v >>= 7;
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			u8(s, b);
			return;
		}
		u8(s, b | 0x80);
	}
}
static void bytes(struct sec *s, const void *p, size_t n)
{
	if (n)
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

/* Appends a CIE with augmentation aug ("zR" and friends; 'R' gets
 * udata4 absolute pointers) and initial instructions ins; returns its
 * offset. */
static size_t cie_for(struct sec *s, const char *aug, unsigned code_align, unsigned ra_col, const uint8_t *ins,
		      size_t nins)
{
	size_t at = s->n;
	size_t len_at = s->n;
	u32(s, 0);
	u32(s, 0); /* CIE id */
	u8(s, 1);  /* version */
	bytes(s, aug, strlen(aug) + 1);
	uleb(s, code_align);
	sleb(s, -8);    /* data alignment */
	u8(s, ra_col); /* return address column */
	if (aug[0] == 'z') {
		uleb(s, strchr(aug, 'R') ? 1 : 0);
		if (strchr(aug, 'R'))
			u8(s, 0x03); /* DW_EH_PE_udata4 */
	}
	bytes(s, ins, nins);
	while ((s->n - len_at) % 8)
		u8(s, 0); /* DW_CFA_nop */
	uint32_t len = (uint32_t)(s->n - len_at - 4);
	memcpy(s->b + len_at, &len, 4);
	return at;
}

/* The x86-64 CIE: code alignment 1, the return address in column 16. */
static size_t cie(struct sec *s, const char *aug, const uint8_t *ins, size_t nins)
{
	return cie_for(s, aug, 1, 16, ins, nins);
}

/* Appends an FDE for [start, start + range) under the CIE at cie_at. */
static size_t fde(struct sec *s, size_t cie_at, uint32_t start, uint32_t range, const uint8_t *ins, size_t nins)
{
	size_t at = s->n;
	u32(s, 0);
	u32(s, (uint32_t)(s->n - cie_at));
	u32(s, start);
	u32(s, range);
	uleb(s, 0); /* augmentation data length */
	bytes(s, ins, nins);
	while ((s->n - at) % 8)
		u8(s, 0);
	uint32_t len = (uint32_t)(s->n - at - 4);
	memcpy(s->b + at, &len, 4);
	return at;
}

static const struct ehf_range all_text = { 0x1000, 0x100000 };

static int parse_sec(const struct sec *s, size_t count, struct ehf_result *r, char *err, size_t errlen)
{
	return cp_ehframe_parse(s->b, s->n, 0x200000, count, &all_text, 1, r, err, errlen);
}

/* The x86-64 CIE every compiler emits: CFA = rsp+8, ra at cfa-8. */
static const uint8_t std_init[] = { 0x0c, 7, 8, 0x90, 1 };

static void expect_rule(const struct cp_utab *t, uint64_t pc, int cfa, int cfa_off, int fp, int fp_off)
{
	struct cp_urule r;
	char b[128];
	CHECK(cp_utab_lookup(t, pc, &r), "no rule at %#lx", (long)pc);
	CHECK(r.cfa == cfa && r.cfa_off == cfa_off && r.fp == fp && r.fp_off == fp_off, "at %#lx: %s, want cfa=%d%+d fp=%d%+d",
	      (long)pc, rule_str(&r, b, sizeof b), cfa, cfa_off, fp, fp_off);
	if (cfa == CP_CFA_SP || cfa == CP_CFA_FP || cfa == CP_CFA_PLT)
		CHECK(r.ra == CP_REG_AT_CFA && r.ra_off == -8, "at %#lx: ra %s", (long)pc, rule_str(&r, b, sizeof b));
}

static void crafted_good(void)
{
	struct sec s = { .n = 0 };
	char err[256];
	size_t c = cie(&s, "zR", std_init, sizeof std_init);
	/* A frame-pointer function at 0x1000:
	 *   +0 push rbp; +1 mov rsp,rbp; +4 body; +20 remember, leave, ret;
	 *   +21 restore (body again) ... +30 end */
	static const uint8_t f1[] = {
		0x41, 0x0e, 16, 0x86, 2, /* advance 1; def_cfa_offset 16; rbp at cfa-16 */
		0x43, 0x0d, 6,           /* advance 3; def_cfa_register rbp */
		0x50, 0x0a, 0x0c, 7, 8,  /* advance 16; remember; def_cfa rsp+8 */
		0x41, 0x0b,              /* advance 1; restore_state */
	};
	fde(&s, c, 0x1000, 30, f1, sizeof f1);
	/* A frameless function with pushes at 0x1040 (after 16+ bytes of hole). */
	static const uint8_t f2[] = {
		0x41, 0x0e, 16, 0x83, 2,  /* push rbx */
		0x42, 0x0e, 24,           /* push r12 */
		0x44, 0x0e, 0xd0, 0x01,   /* sub rsp: cfa 208 */
		0x02, 100, 0x0e, 24,      /* advance_loc1 100; back to 24 */
		0x41, 0x0e, 16, 0x41, 0x0e, 8, /* pops */
	};
	fde(&s, c, 0x1040, 120, f2, sizeof f2);
	/* A lazy PLT at 0x2000: plt0 pushes, then the entries' expression. */
	static const uint8_t f3[] = {
		0x0e, 16, 0x46, 0x0e, 24, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
	};
	fde(&s, c, 0x2000, 64, f3, sizeof f3);
	/* An outermost frame (_start: ra undefined). */
	static const uint8_t f4[] = { 0x07, 16 };
	fde(&s, c, 0x3000, 16, f4, sizeof f4);
	/* A signal trampoline (augmentation "zRS"). */
	size_t cs = cie(&s, "zRS", std_init, sizeof std_init);
	fde(&s, cs, 0x4000, 9, NULL, 0);
	/* An FDE outside the text ranges is ignored. */
	fde(&s, c, 0x900000, 16, NULL, 0);
	u32(&s, 0); /* terminator */

	struct ehf_result r;
	CHECK(parse_sec(&s, 6, &r, err, sizeof err) == 0, "good section rejected: %s", err);
	CHECK_EQ(r.nfdes, 5);
	CHECK_EQ(r.entries, 6);
	size_t bytes;
	struct cp_utab *t = cp_unwind_build(&r, &bytes, err, sizeof err);
	CHECK(t, "%s", err);
	CHECK_EQ(t->start, 0x1000);
	expect_rule(t, 0x1000, CP_CFA_SP, 8, CP_REG_SAME, 0);
	expect_rule(t, 0x1001, CP_CFA_SP, 16, CP_REG_AT_CFA, -16);
	expect_rule(t, 0x1003, CP_CFA_SP, 16, CP_REG_AT_CFA, -16);
	expect_rule(t, 0x1004, CP_CFA_FP, 16, CP_REG_AT_CFA, -16);
	expect_rule(t, 0x1013, CP_CFA_FP, 16, CP_REG_AT_CFA, -16);
	expect_rule(t, 0x1014, CP_CFA_SP, 8, CP_REG_AT_CFA, -16);
	expect_rule(t, 0x1015, CP_CFA_FP, 16, CP_REG_AT_CFA, -16);
	expect_rule(t, 0x101d, CP_CFA_FP, 16, CP_REG_AT_CFA, -16);
	struct cp_urule x;
	CHECK(!cp_utab_lookup(t, 0x1020, &x), "a hole has a rule");
	CHECK(!cp_utab_lookup(t, 0x103f, &x), "a hole has a rule");
	expect_rule(t, 0x1040, CP_CFA_SP, 8, CP_REG_SAME, 0);
	expect_rule(t, 0x1041, CP_CFA_SP, 16, CP_REG_SAME, 0);
	expect_rule(t, 0x1043, CP_CFA_SP, 24, CP_REG_SAME, 0);
	expect_rule(t, 0x1047, CP_CFA_SP, 208, CP_REG_SAME, 0);
	expect_rule(t, 0x10aa, CP_CFA_SP, 208, CP_REG_SAME, 0);
	expect_rule(t, 0x10ab, CP_CFA_SP, 24, CP_REG_SAME, 0);
	expect_rule(t, 0x10ac, CP_CFA_SP, 16, CP_REG_SAME, 0);
	expect_rule(t, 0x10ad, CP_CFA_SP, 8, CP_REG_SAME, 0);
	expect_rule(t, 0x10b7, CP_CFA_SP, 8, CP_REG_SAME, 0);
	expect_rule(t, 0x2000, CP_CFA_SP, 16, CP_REG_SAME, 0);
	expect_rule(t, 0x2006, CP_CFA_SP, 24, CP_REG_SAME, 0);
	CHECK(cp_utab_lookup(t, 0x2010, &x) && x.cfa == CP_CFA_PLT && x.cfa_off == 8 && x.plt == 11, "PLT entry: %s",
	      rule_str(&x, err, sizeof err));
	CHECK(cp_utab_lookup(t, 0x3008, &x) && x.cfa == CP_CFA_END, "outermost frame: %s", rule_str(&x, err, sizeof err));
	CHECK(cp_utab_lookup(t, 0x4004, &x) && x.cfa == CP_CFA_SIGFRAME, "signal frame: %s",
	      rule_str(&x, err, sizeof err));
	CHECK(!cp_utab_lookup(t, 0x4009, &x), "past the last FDE");
	free(t);
	cp_ehframe_free(&r);

	/* Without a terminator the data's end ends the section too. */
	s.n -= 4;
	CHECK(parse_sec(&s, 0, &r, err, sizeof err) == 0, "unterminated: %s", err);
	CHECK_EQ(r.nfdes, 5);
	cp_ehframe_free(&r);
	printf("# crafted well-formed section: rows as its programs say\n");
}

/* The aarch64 CIE every compiler emits: CFA = sp + 0, and nothing said of
 * x30: the return address is in the link register.  Code alignment 4. */
static const uint8_t a64_init[] = { 0x0c, 31, 0 };

/* The rule at pc is CFA = (cfa, cfa_off), x29 (fp, fp_off), return
 * address (ra, ra_off). */
static void expect_a64(const struct cp_utab *t, uint64_t pc, int cfa, int cfa_off, int fp, int fp_off, int ra,
		       int ra_off)
{
	struct cp_urule r;
	char b[128];
	CHECK(cp_utab_lookup(t, pc, &r), "no rule at %#lx", (long)pc);
	CHECK(r.cfa == cfa && r.cfa_off == cfa_off && r.fp == fp && r.fp_off == fp_off && r.ra == ra &&
		      r.ra_off == ra_off,
	      "at %#lx: %s, want cfa=%d%+d fp=%d%+d ra=%d%+d", (long)pc, rule_str(&r, b, sizeof b), cfa, cfa_off, fp,
	      fp_off, ra, ra_off);
}

static void crafted_good_aarch64(void)
{
	struct sec s = { .n = 0 };
	char err[256];
	size_t c = cie_for(&s, "zR", 4, 30, a64_init, sizeof a64_init);
	/* A function with a frame record at 0x1000 (40 bytes):
	 *   +0 stp x29, x30, [sp, #-32]!; +4 mov x29, sp; +8 body;
	 *   +24 remember; ldp x29, x30, [sp], #32: CFA sp+0, both
	 *   restored; +28 ret; +28 restore_state (body again). */
	static const uint8_t f1[] = {
		0x41, 0x0e, 32, 0x9d, 4, 0x9e, 3, /* advance 1 (4 bytes); cfa sp+32; x29 at cfa-32, x30 at cfa-24 */
		0x41, 0x0d, 29,                   /* advance 1; def_cfa_register x29 */
		0x44, 0x0a, 0x0c, 31, 0, 0xdd, 0xde, /* advance 4; remember; def_cfa sp+0; restore x29, x30 */
		0x41, 0x0b,                       /* advance 1; restore_state */
	};
	fde(&s, c, 0x1000, 40, f1, sizeof f1);
	/* A frameless leaf at 0x1100: nothing moves, its caller is in x30. */
	fde(&s, c, 0x1100, 16, NULL, 0);
	/* A leaf that only makes room: sub sp, sp, #48 ... add. */
	static const uint8_t f3[] = { 0x41, 0x0e, 48, 0x42, 0x0e, 0 };
	fde(&s, c, 0x1200, 24, f3, sizeof f3);
	/* str x30, [sp, #-16]!: the return address saved, x29 untouched;
	 * with pointer authentication's negate_ra_state (0x2d) after the
	 * paciasp at +0, which moves no rule. */
	static const uint8_t f4[] = { 0x2d, 0x41, 0x0e, 16, 0x9e, 2 };
	fde(&s, c, 0x1300, 32, f4, sizeof f4);
	/* x30 moved to another register (mov x9, x30): no usable rule. */
	static const uint8_t f5[] = { 0x41, 0x09, 30, 9 };
	fde(&s, c, 0x1400, 16, f5, sizeof f5);
	/* An outermost frame (_start: x30 undefined). */
	static const uint8_t f6[] = { 0x07, 30 };
	fde(&s, c, 0x3000, 16, f6, sizeof f6);
	/* The signal trampoline (augmentation "zRS"). */
	size_t cs = cie_for(&s, "zRS", 4, 30, a64_init, sizeof a64_init);
	fde(&s, cs, 0x4000, 8, NULL, 0);
	u32(&s, 0);

	struct ehf_result r;
	CHECK(parse_sec(&s, 7, &r, err, sizeof err) == 0, "good aarch64 section rejected: %s", err);
	CHECK_EQ(r.nfdes, 7);
	size_t bytes;
	struct cp_utab *t = cp_unwind_build(&r, &bytes, err, sizeof err);
	CHECK(t, "%s", err);
	enum { SAME = CP_REG_SAME, AT = CP_REG_AT_CFA, UNK = CP_REG_UNKNOWN };
	expect_a64(t, 0x1000, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x1004, CP_CFA_SP, 32, AT, -32, AT, -24);
	expect_a64(t, 0x1008, CP_CFA_FP, 32, AT, -32, AT, -24);
	expect_a64(t, 0x1017, CP_CFA_FP, 32, AT, -32, AT, -24);
	expect_a64(t, 0x1018, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x101c, CP_CFA_FP, 32, AT, -32, AT, -24);
	expect_a64(t, 0x1027, CP_CFA_FP, 32, AT, -32, AT, -24);
	struct cp_urule x;
	CHECK(!cp_utab_lookup(t, 0x1028, &x), "a hole has a rule");
	expect_a64(t, 0x1100, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x110f, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x1200, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x1204, CP_CFA_SP, 48, SAME, 0, SAME, 0);
	expect_a64(t, 0x120c, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x1300, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	expect_a64(t, 0x1304, CP_CFA_SP, 16, SAME, 0, AT, -16);
	expect_a64(t, 0x1400, CP_CFA_SP, 0, SAME, 0, SAME, 0);
	CHECK(cp_utab_lookup(t, 0x1404, &x) && x.cfa == CP_CFA_NONE, "x30 in x9: %s", rule_str(&x, err, sizeof err));
	CHECK(cp_utab_lookup(t, 0x3008, &x) && x.cfa == CP_CFA_END, "outermost frame: %s", rule_str(&x, err, sizeof err));
	CHECK(cp_utab_lookup(t, 0x4004, &x) && x.cfa == CP_CFA_SIGFRAME, "signal frame: %s",
	      rule_str(&x, err, sizeof err));
	free(t);
	cp_ehframe_free(&r);

	/* The x86-64 PLT expression means nothing here: no PLT rule. */
	s.n = 0;
	c = cie_for(&s, "zR", 4, 30, a64_init, sizeof a64_init);
	static const uint8_t plt[] = {
		0x41, 0x0f, 11, 0x8f, 8, 0x8e, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22, /* advance 1; the expression */
	};
	fde(&s, c, 0x2000, 64, plt, sizeof plt);
	u32(&s, 0);
	CHECK(parse_sec(&s, 1, &r, err, sizeof err) == 0, "expression rejected: %s", err);
	t = cp_unwind_build(&r, &bytes, err, sizeof err);
	CHECK(t, "%s", err);
	expect_a64(t, 0x2000, CP_CFA_SP, 0, CP_REG_SAME, 0, CP_REG_SAME, 0);
	CHECK(cp_utab_lookup(t, 0x2008, &x) && x.cfa == CP_CFA_NONE, "aarch64 took a CFA expression: %s",
	      rule_str(&x, err, sizeof err));
	free(t);
	cp_ehframe_free(&r);
	printf("# crafted well-formed aarch64 section: rows as its programs say\n");
}

/* Builds a section with one CIE and one FDE whose program is ins. */
static void one_fde(struct sec *s, const uint8_t *ins, size_t n)
{
	s->n = 0;
	size_t c = cie(s, "zR", std_init, sizeof std_init);
	fde(s, c, 0x1000, 64, ins, n);
	u32(s, 0);
}

static void expect_reject(const struct sec *s, size_t count, const char *reason)
{
	struct ehf_result r;
	char err[256] = "";
	CHECK(parse_sec(s, count, &r, err, sizeof err) < 0, "accepted, expected '%s'", reason);
	CHECK(strstr(err, reason), "rejected with '%s', expected '%s'", err, reason);
	CHECK(r.fdes == NULL && r.rows == NULL, "a rejected parse left results");
}

static void crafted_bad(void)
{
	struct sec s;
	static const uint8_t ok[] = { 0x41, 0x0e, 16 };

	one_fde(&s, ok, sizeof ok);
	/* The FDE's length runs past the end. */
	s.b[24] = 0xff, s.b[25] = 0xff, s.b[26] = 0, s.b[27] = 0;
	expect_reject(&s, 0, "runs past the end");
	/* The CIE pointer names no CIE. */
	one_fde(&s, ok, sizeof ok);
	s.b[28] -= 4;
	expect_reject(&s, 0, "names no CIE");
	/* It points before the section. */
	one_fde(&s, ok, sizeof ok);
	s.b[28] = 0xff, s.b[29] = 0xff;
	expect_reject(&s, 0, "points before the section");
	/* An unknown opcode. */
	static const uint8_t unk[] = { 0x41, 0x3c };
	one_fde(&s, unk, sizeof unk);
	expect_reject(&s, 0, "unknown CFA opcode 0x3c");
	/* A restore without a remember. */
	static const uint8_t rs[] = { 0x41, 0x0b };
	one_fde(&s, rs, sizeof rs);
	expect_reject(&s, 0, "without remember");
	/* Remembers nested past any compiler's habit. */
	uint8_t deep[40];
	memset(deep, 0x0a, sizeof deep);
	one_fde(&s, deep, sizeof deep);
	expect_reject(&s, 0, "nested too deep");
	/* An operand cut off by the end of the FDE. */
	static const uint8_t cut[] = { 0x41, 0x0c, 7, 0x80 };
	s.n = 0;
	size_t c = cie(&s, "zR", std_init, sizeof std_init);
	size_t f = fde(&s, c, 0x1000, 64, cut, sizeof cut);
	s.b[f] = (uint8_t)(4 + 4 + 4 + 1 + sizeof cut); /* no padding: the uleb ends the entry */
	s.n = f + 4 + s.b[f];
	u32(&s, 0);
	expect_reject(&s, 0, "runs past its entry");
	/* A CIE with an unknown version. */
	one_fde(&s, ok, sizeof ok);
	s.b[8] = 2;
	expect_reject(&s, 0, "version 2");
	/* A CIE whose augmentation data runs past its entry. */
	one_fde(&s, ok, sizeof ok);
	s.b[15] = 0x7f;
	expect_reject(&s, 0, "augmentation data runs past");
	/* Truncated in the middle of the FDE. */
	one_fde(&s, ok, sizeof ok);
	s.n = 30;
	expect_reject(&s, 0, "runs past the end");
	/* Fewer FDEs than the header lists. */
	one_fde(&s, ok, sizeof ok);
	expect_reject(&s, 2, "truncated: 1 FDEs where .eh_frame_hdr lists 2");
	/* A set_loc that goes backwards. */
	static const uint8_t back[] = { 0x41, 0x01, 0x00, 0x0f, 0, 0 };
	one_fde(&s, back, sizeof back);
	expect_reject(&s, 0, "goes backwards");
	/* A truncated .eh_frame_hdr. */
	uint64_t p;
	size_t n;
	char err[128];
	static const uint8_t hdr[] = { 1, 0x1b, 0x03, 0x3b, 0x10, 0 };
	CHECK(cp_ehframe_hdr_parse(hdr, sizeof hdr, 0x1000, &p, &n, err, sizeof err) < 0, "short header accepted");
	static const uint8_t hdr2[] = { 2, 0x1b, 0x03, 0x3b, 0x10, 0, 0, 0, 1, 0, 0, 0 };
	CHECK(cp_ehframe_hdr_parse(hdr2, sizeof hdr2, 0x1000, &p, &n, err, sizeof err) < 0, "version 2 header accepted");
	printf("# crafted malformed sections: each rejected with its reason\n");
}

/* ---- (3) truncations and bit flips of libc's .eh_frame ---- */

static void mutations(const char *path)
{
	struct elf e;
	if (elf_open(path, &e) < 0) {
		printf("# %s: not present, mutations skipped\n", path);
		return;
	}
	const Elf64_Shdr *hdr = elf_section(&e, ".eh_frame_hdr"), *ehf = elf_section(&e, ".eh_frame");
	CHECK(hdr && ehf, "no sections");
	uint64_t ptr;
	size_t count;
	char err[256];
	CHECK(cp_ehframe_hdr_parse(e.data + hdr->sh_offset, hdr->sh_size, hdr->sh_addr, &ptr, &count, err, sizeof err) == 0,
	      "%s", err);
	struct ehf_range text[8];
	size_t ntext = elf_text(&e, text, 8);
	const uint8_t *orig = e.data + ehf->sh_offset;
	size_t size = ehf->sh_size;
	uint8_t *buf = malloc(size);
	struct ehf_result r;

	/* Every truncation short of the last FDE is rejected: every cut
	 * point in the first 2 KiB, then every 397th byte. */
	size_t ntrunc = 0;
	for (size_t cut = 0; cut < size - 8; cut += cut < 2048 ? 1 : 397) {
		memcpy(buf, orig, cut);
		int rc = cp_ehframe_parse(buf, cut, ehf->sh_addr, count, text, ntext, &r, err, sizeof err);
		CHECK(rc < 0, "%s cut at %zu of %zu accepted", path, cut, size);
		ntrunc++;
	}

	/* Bit flips: whatever the parser accepts, the table built from it
	 * answers lookups without crashing. */
	unsigned seed = 12345;
	size_t accepted = 0, rejected = 0;
	for (int iter = 0; iter < 300; iter++) {
		memcpy(buf, orig, size);
		for (int k = 0; k < 1 + iter % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t pos = (seed >> 8) % size;
			buf[pos] ^= (uint8_t)(1u << ((seed >> 3) & 7));
		}
		if (cp_ehframe_parse(buf, size, ehf->sh_addr, count, text, ntext, &r, err, sizeof err) < 0) {
			rejected++;
			continue;
		}
		accepted++;
		size_t bytes;
		struct cp_utab *t = cp_unwind_build(&r, &bytes, err, sizeof err);
		if (t) {
			struct cp_urule x;
			for (uintptr_t pc = t->start; pc < t->end; pc += 61)
				(void)cp_utab_lookup(t, pc, &x);
			free(t);
		}
		cp_ehframe_free(&r);
	}
	printf("# %s: %zu truncations rejected; 300 bit-flipped copies: %zu rejected, %zu accepted, no crash\n",
	       path, ntrunc, rejected, accepted);
	free(buf);
	free(e.data);
}

int main(int argc, char **argv)
{
	int x86 = !strcmp(CP_ARCH_NAME, "x86_64");
	if (!x86 && strcmp(CP_ARCH_NAME, "aarch64"))
		SKIP("no crafted CFI for %s", CP_ARCH_NAME);
	names = x86 ? &x86_64_names : &aarch64_names;
	if (argc > 1) {
		/* By hand: check_object on the files named. */
		for (int i = 1; i < argc; i++)
			check_object(argv[i]);
		return 0;
	}
	/* The crafted sections speak the registers of the build's CPU. */
	if (x86)
		crafted_good();
	else
		crafted_good_aarch64();
	crafted_bad();
	if (system("readelf --version >/dev/null 2>&1") != 0)
		SKIP("readelf (binutils) is not installed (after the crafted sections passed)");
	const char *libc = names->objects[0];
	if (access(libc, R_OK) != 0)
		SKIP("%s: not Debian's %s multiarch layout (after the crafted sections passed)", libc, CP_ARCH_NAME);
	for (int i = 0; names->objects[i]; i++)
		check_object(names->objects[i]);
	char lib[4096];
	ssize_t n = readlink("/proc/self/exe", lib, sizeof lib - 1);
	CHECK(n > 0, "readlink /proc/self/exe");
	lib[n] = '\0';
	check_object(lib); /* built with the project's flags */
	const char *b = getenv("B");
	snprintf(lib, sizeof lib, "%s/libcpuprof.so", b ? b : "build");
	check_object(lib);
	mutations(libc);
	return 0;
}
