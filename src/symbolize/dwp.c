/*
 * dwp.c -- unpacks a DWARF package for libdw (dwp.h).  The package's
 * index (.debug_cu_index, DWARF 5's layout and GNU's version 2 for DWARF
 * 4, which binutils' dwp writes) gives, per unit, its DWO id and its
 * contribution to each section; every offset and size is checked against
 * the package's sections.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "dwp.h"

#define MAX_SECTION ((uint64_t)1 << 31)

/* One section of a file to write. */
struct out_sec {
	const char *name;
	uint64_t flags, align;
	const unsigned char *data;
	uint64_t size;
};

static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes an ELF file of the sections s[0..n) at path, its header as
 * like's but for what it describes. */
static int write_elf(const char *path, const ElfW(Ehdr) *like, uint16_t type, const struct out_sec *s, size_t n)
{
	size_t strsz = 1 + sizeof ".shstrtab";
	for (size_t i = 0; i < n; i++)
		strsz += strlen(s[i].name) + 1;
	ElfW(Shdr) *sh = calloc(n + 2, sizeof *sh);
	char *str = malloc(strsz);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = -1;
	if (!sh || !str || fd < 0)
		goto out;
	ElfW(Ehdr) eh;
	memset(&eh, 0, sizeof eh);
	memcpy(eh.e_ident, like->e_ident, EI_NIDENT);
	eh.e_type = type;
	eh.e_machine = like->e_machine;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof eh;
	eh.e_shentsize = sizeof *sh;
	eh.e_shnum = (uint16_t)(n + 2);
	eh.e_shstrndx = (uint16_t)(n + 1);
	uint64_t off = sizeof eh;
	size_t so = 1;
	str[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		uint64_t a = s[i].align ? s[i].align : 1;
		off = (off + a - 1) / a * a;
		sh[i + 1] = (ElfW(Shdr)){ .sh_name = (uint32_t)so, .sh_type = SHT_PROGBITS, .sh_flags = s[i].flags,
					  .sh_offset = off, .sh_size = s[i].size, .sh_addralign = a };
		memcpy(str + so, s[i].name, strlen(s[i].name) + 1);
		so += strlen(s[i].name) + 1;
		off += s[i].size;
	}
	sh[n + 1] = (ElfW(Shdr)){ .sh_name = (uint32_t)so, .sh_type = SHT_STRTAB, .sh_offset = off,
				  .sh_size = strsz, .sh_addralign = 1 };
	memcpy(str + so, ".shstrtab", sizeof ".shstrtab");
	off += strsz;
	eh.e_shoff = (off + 7) & ~(uint64_t)7;
	if (write_all(fd, &eh, sizeof eh) != 0)
		goto out;
	uint64_t at = sizeof eh;
	static const unsigned char zeros[64];
	for (size_t i = 0; i <= n; i++) {
		uint64_t want = sh[i + 1].sh_offset;
		while (at < want) {
			size_t z = want - at > sizeof zeros ? sizeof zeros : (size_t)(want - at);
			if (write_all(fd, zeros, z) != 0)
				goto out;
			at += z;
		}
		const void *data = i < n ? (const void *)s[i].data : str;
		size_t size = i < n ? (size_t)s[i].size : strsz;
		if (write_all(fd, data, size) != 0)
			goto out;
		at += size;
	}
	if (write_all(fd, zeros, (size_t)(eh.e_shoff - at)) != 0 ||
	    write_all(fd, sh, (n + 2) * sizeof *sh) != 0)
		goto out;
	rc = 0;
out:
	if (fd >= 0 && close(fd) != 0)
		rc = -1;
	free(sh);
	free(str);
	return rc;
}

/* The sections of a .debug_cu_index's columns, DWARF 5's and GNU's
 * version 2's (DW_SECT_*). */
static const char *column_name(uint32_t version, uint32_t id)
{
	static const char *const v5[] = { NULL, ".debug_info.dwo", NULL, ".debug_abbrev.dwo", ".debug_line.dwo",
					  ".debug_loclists.dwo", ".debug_str_offsets.dwo", ".debug_macro.dwo",
					  ".debug_rnglists.dwo" };
	static const char *const v2[] = { NULL, ".debug_info.dwo", ".debug_types.dwo", ".debug_abbrev.dwo",
					  ".debug_line.dwo", ".debug_loc.dwo", ".debug_str_offsets.dwo",
					  ".debug_macinfo.dwo", ".debug_macro.dwo" };
	if (id >= 9)
		return NULL;
	return version == 5 ? v5[id] : version == 2 ? v2[id] : NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void cp_dwp_clean(const char *dir)
{
	if (dir && dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir/name made ready to write (its directories made): 0, or -1 for a
 * name that is not a plain relative path. */
static int out_path(const char *dir, const char *name, char *out, size_t len)
{
	if (!name[0] || name[0] == '/' || strstr(name, "..") || (size_t)snprintf(out, len, "%s/%s", dir, name) >= len)
		return -1;
	for (char *p = out + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		int r = mkdir(out, 0700);
		*p = '/';
		if (r != 0 && errno != EEXIST)
			return -1;
	}
	return 0;
}

int cp_dwp_unpack(const struct cp_elf *src, const char *dwp_path, const struct cp_dwp_unit *units, size_t n,
		  char *dir, size_t dirlen, char *why, size_t len)
{
	struct cp_elf_sections ss, ps;
	struct cp_elf pk = { .fd = -1 };
	unsigned char *index = NULL, *str = NULL, *col[9] = { 0 };
	uint64_t colsize[9] = { 0 };
	struct out_sec *os = NULL;
	unsigned char **skel = NULL;
	int rc = -ENOEXEC, written = 0;
	dir[0] = '\0';
	memset(&ps, 0, sizeof ps);
	if (cp_elf_sections_read(src, &ss) != 0)
		return cp_why(why, len, "its skeleton file is no ELF file"), -ENOEXEC;
	pk.fd = open(dwp_path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (pk.fd < 0 || fstat(pk.fd, &st) != 0) {
		rc = -errno;
		cp_why(why, len, "%s: %s", dwp_path, strerror(errno));
		goto out;
	}
	pk.size = (uint64_t)st.st_size;
	if (cp_elf_sections_read(&pk, &ps) != 0) {
		cp_why(why, len, "%s is no ELF file of this machine's", strrchr(dwp_path, '/') ? strrchr(dwp_path, '/') + 1 : dwp_path);
		goto out;
	}
	/* The package's index, string section and columns' sections. */
	const ElfW(Shdr) *ish = cp_elf_section_find(&ps, ".debug_cu_index");
	const ElfW(Shdr) *ssh = cp_elf_section_find(&ps, ".debug_str.dwo");
	if (!ish || !(index = cp_elf_section_bytes(&pk, ish, MAX_SECTION)) || ish->sh_size < 16 ||
	    (ssh && !(str = cp_elf_section_bytes(&pk, ssh, MAX_SECTION)))) {
		cp_why(why, len, "%s has no readable .debug_cu_index", strrchr(dwp_path, '/') ? strrchr(dwp_path, '/') + 1 : dwp_path);
		goto out;
	}
	uint32_t h[4];
	memcpy(h, index, sizeof h);
	uint32_t version = h[0] & 0xffff, ncols = h[1], nunits = h[2], nslots = h[3];
	uint64_t need = 16 + (uint64_t)nslots * 12 + (uint64_t)ncols * 4 + (uint64_t)nunits * ncols * 8;
	if ((version != 2 && version != 5) || ncols == 0 || ncols > 8 || nslots > (1u << 24) || (nslots & (nslots - 1)) ||
	    nunits > (1u << 24) ||
	    need > ish->sh_size) {
		cp_why(why, len, "%s: its .debug_cu_index is not one this reader knows (version %u)", dwp_path, version);
		goto out;
	}
	const unsigned char *sig = index + 16, *idx = sig + (uint64_t)nslots * 8, *ids = idx + (uint64_t)nslots * 4;
	const unsigned char *offs = ids + (uint64_t)ncols * 4, *sizes = offs + (uint64_t)nunits * ncols * 4;
	uint32_t colid[8];
	for (uint32_t c = 0; c < ncols; c++) {
		memcpy(&colid[c], ids + 4 * c, 4);
		const char *name = column_name(version, colid[c]);
		if (!name || col[colid[c]])
			continue;
		const ElfW(Shdr) *sh = cp_elf_section_find(&ps, name); /* the first of its name only */
		if (sh) {
			col[colid[c]] = cp_elf_section_bytes(&pk, sh, MAX_SECTION);
			colsize[colid[c]] = sh->sh_size;
		}
	}

	const char *tmp = getenv("TMPDIR");
	if ((size_t)snprintf(dir, dirlen, "%s/cpuprof-dwp.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") >= dirlen ||
	    !mkdtemp(dir)) {
		rc = -errno;
		cp_why(why, len, "no directory to unpack %s into: %s", dwp_path, strerror(errno));
		dir[0] = '\0';
		goto out;
	}
	/* The skeleton: src's .debug_* sections (not the program). */
	os = calloc(ss.eh.e_shnum + 9, sizeof *os);
	skel = calloc(ss.eh.e_shnum, sizeof *skel);
	if (!os || !skel) {
		rc = -ENOMEM;
		cp_why(why, len, "out of memory");
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < ss.eh.e_shnum; i++) {
		const char *name = cp_elf_section_name(&ss, i);
		if (strncmp(name, ".debug_", 7) != 0 || ss.sh[i].sh_type == SHT_NOBITS ||
		    !(skel[i] = cp_elf_section_bytes(src, &ss.sh[i], MAX_SECTION)))
			continue;
		os[k++] = (struct out_sec){ name, ss.sh[i].sh_flags & SHF_COMPRESSED, ss.sh[i].sh_addralign, skel[i],
					    ss.sh[i].sh_size };
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/skeleton", dir);
	if (write_elf(path, &ss.eh, ss.eh.e_type, os, k) != 0) {
		cp_why(why, len, "could not write into %s", dir);
		goto out;
	}
	/* Each unit named by a skeleton, found by its id. */
	for (size_t u = 0; u < n; u++) {
		/* By the index's own hash table (DWARF 5 section 7.3.5.3, as in
		 * GNU's version 2): the id's low bits give the first slot, its
		 * high bits (made odd) the step; an empty slot ends the search. */
		uint32_t row = 0;
		uint64_t id = units[u].id, mask = (uint64_t)nslots - 1;
		uint64_t s = id & mask, step = ((id >> 32) & mask) | 1;
		for (uint64_t probe = 0; probe < nslots; probe++, s = (s + step) & mask) {
			uint64_t v;
			uint32_t r;
			memcpy(&v, sig + 8 * s, 8);
			memcpy(&r, idx + 4 * s, 4);
			if (v == id && r) {
				row = r;
				break;
			}
			if (!v && !r)
				break;
		}
		if (row == 0 || row > nunits || out_path(dir, units[u].name, path, sizeof path) != 0)
			continue;
		size_t m = 0;
		int ok = 1;
		for (uint32_t c = 0; c < ncols && ok; c++) {
			uint32_t off, size;
			memcpy(&off, offs + ((uint64_t)(row - 1) * ncols + c) * 4, 4);
			memcpy(&size, sizes + ((uint64_t)(row - 1) * ncols + c) * 4, 4);
			const char *name = column_name(version, colid[c]);
			if (!name || !col[colid[c]] || off > colsize[colid[c]] || size > colsize[colid[c]] - off) {
				ok = !name; /* a column not known: left out; one out of bounds: no unit */
				continue;
			}
			os[m++] = (struct out_sec){ name, 0, 1, col[colid[c]] + off, size };
		}
		if (ok && str)
			os[m++] = (struct out_sec){ ".debug_str.dwo", SHF_MERGE | SHF_STRINGS, 1, str, ssh->sh_size };
		if (ok && write_elf(path, &ss.eh, ET_REL, os, m) == 0)
			written++;
	}
	rc = written;
	if (!written)
		cp_why(why, len, "none of its split units is in %s", strrchr(dwp_path, '/') ? strrchr(dwp_path, '/') + 1 : dwp_path);
out:
	if (rc <= 0 && dir[0]) {
		cp_dwp_clean(dir);
		dir[0] = '\0';
	}
	if (skel)
		for (size_t i = 0; i < ss.eh.e_shnum; i++)
			free(skel[i]);
	free(skel);
	free(os);
	for (size_t c = 0; c < 9; c++)
		free(col[c]);
	free(index);
	free(str);
	cp_elf_sections_free(&ss);
	cp_elf_sections_free(&ps);
	if (pk.fd >= 0)
		close(pk.fd);
	return rc;
}
