/*
 * elf.c -- program headers, build IDs, sections and bounded reads of ELF
 * files and images (elf.h).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf.h"

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int cp_elf_notes_build_id(const uint8_t *p, size_t len, size_t align, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t off = 0;
	while (len - off >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		memcpy(&nh, p + off, sizeof nh);
		size_t name = off + sizeof nh;
		if (nh.n_namesz > len - name)
			return 0;
		size_t desc = align_up(name + nh.n_namesz, align);
		if (desc > len || nh.n_descsz > len - desc)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + name, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= CP_ELF_BUILD_ID_MAX) {
			for (size_t i = 0; i < nh.n_descsz; i++) {
				out[2 * i] = hex[p[desc + i] >> 4];
				out[2 * i + 1] = hex[p[desc + i] & 15];
			}
			out[2 * nh.n_descsz] = '\0';
			return 1;
		}
		off = align_up(desc + nh.n_descsz, align);
		if (off > len)
			return 0;
	}
	return 0;
}

int cp_elf_vdso(uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return 0;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELF_CLASS_NATIVE ||
	    eh->e_shentsize != sizeof(ElfW(Shdr)))
		return 0;
	uint64_t end = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	if (end < sizeof *eh || end > (1u << 20))
		return 0;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t p = page > 0 ? (uint64_t)page : 4096;
	*lo = base;
	*hi = base + (end + p - 1) / p * p;
	return 1;
}

int cp_elf_read(const struct cp_elf *e, uint64_t off, void *buf, uint64_t len)
{
	if (off > e->size || len > e->size - off)
		return -ENOEXEC;
	if (e->mem) {
		memcpy(buf, e->mem + off, len);
		return 0;
	}
	uint8_t *p = buf;
	while (len) {
		size_t chunk = len > (1u << 30) ? (1u << 30) : (size_t)len;
		ssize_t r = pread(e->fd, p, chunk, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENOEXEC; /* the file shrank */
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

/* Reads e's headers: its program headers and, from its notes, its build
 * ID.  0 or a negative errno. */
static int read_headers(struct cp_elf *e)
{
	ElfW(Ehdr) eh;
	int rc = cp_elf_read(e, 0, &eh, sizeof eh);
	if (rc)
		return rc;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELF_CLASS_NATIVE ||
	    eh.e_ident[EI_DATA] != ELF_DATA_NATIVE || (eh.e_phnum && eh.e_phentsize != sizeof(ElfW(Phdr))))
		return -ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum && e->nseg < CP_ELF_MAX_SEGS; i++) {
		ElfW(Phdr) ph;
		if ((rc = cp_elf_read(e, eh.e_phoff + (uint64_t)i * sizeof ph, &ph, sizeof ph)) != 0)
			return rc;
		e->seg[e->nseg++] = (struct cp_elf_seg){ ph.p_type, ph.p_flags, ph.p_offset, ph.p_vaddr,
							 ph.p_filesz, ph.p_memsz, ph.p_align };
	}
	for (size_t i = 0; i < e->nseg && !e->build_id[0]; i++) {
		const struct cp_elf_seg *s = &e->seg[i];
		if (s->type != PT_NOTE || s->filesz > (1u << 16))
			continue;
		uint8_t *notes = malloc(s->filesz ? s->filesz : 1);
		if (notes && cp_elf_read(e, s->offset, notes, s->filesz) == 0)
			cp_elf_notes_build_id(notes, s->filesz, s->align == 8 ? 8 : 4, e->build_id);
		free(notes);
	}
	return 0;
}

int cp_elf_open(struct cp_elf *e, const char *path)
{
	memset(e, 0, sizeof *e);
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(e->fd, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -ENOEXEC;
	e->size = (uint64_t)st.st_size;
	if (rc == 0)
		rc = read_headers(e);
	if (rc)
		cp_elf_close(e);
	return rc;
}

int cp_elf_open_image(struct cp_elf *e, const void *mem, size_t size)
{
	memset(e, 0, sizeof *e);
	e->fd = -1;
	e->mem = mem;
	e->size = size;
	return read_headers(e);
}

void cp_elf_close(struct cp_elf *e)
{
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
}

int cp_elf_sections_read(const struct cp_elf *e, struct cp_elf_sections *s)
{
	memset(s, 0, sizeof *s);
	if (cp_elf_read(e, 0, &s->eh, sizeof s->eh) != 0 || memcmp(s->eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    s->eh.e_ident[EI_CLASS] != ELF_CLASS_NATIVE || s->eh.e_shentsize != sizeof(ElfW(Shdr)) ||
	    s->eh.e_shnum == 0 || s->eh.e_shstrndx >= s->eh.e_shnum)
		goto bad;
	size_t n = s->eh.e_shnum;
	if (!(s->sh = malloc(n * sizeof *s->sh)) || cp_elf_read(e, s->eh.e_shoff, s->sh, n * sizeof *s->sh) != 0)
		goto bad;
	const ElfW(Shdr) *ns = &s->sh[s->eh.e_shstrndx];
	if (ns->sh_size > (1u << 24) || !(s->names = malloc(ns->sh_size + 1)) ||
	    cp_elf_read(e, ns->sh_offset, s->names, ns->sh_size) != 0)
		goto bad;
	s->names[ns->sh_size] = '\0';
	s->names_size = ns->sh_size;
	return 0;
bad:
	cp_elf_sections_free(s);
	return -ENOEXEC;
}

void cp_elf_sections_free(struct cp_elf_sections *s)
{
	free(s->sh);
	free(s->names);
	memset(s, 0, sizeof *s);
}

const char *cp_elf_section_name(const struct cp_elf_sections *s, size_t i)
{
	return i < s->eh.e_shnum && s->sh[i].sh_name < s->names_size ? s->names + s->sh[i].sh_name : "";
}

const ElfW(Shdr) *cp_elf_section_find(const struct cp_elf_sections *s, const char *name)
{
	for (size_t i = 0; s->sh && i < s->eh.e_shnum; i++)
		if (!strcmp(cp_elf_section_name(s, i), name))
			return &s->sh[i];
	return NULL;
}

unsigned char *cp_elf_section_bytes(const struct cp_elf *e, const ElfW(Shdr) *sh, uint64_t max)
{
	if (sh->sh_type == SHT_NOBITS || sh->sh_size > max || sh->sh_size > SIZE_MAX - 1)
		return NULL;
	unsigned char *p = malloc(sh->sh_size ? (size_t)sh->sh_size : 1);
	if (p && cp_elf_read(e, sh->sh_offset, p, sh->sh_size) != 0) {
		free(p);
		p = NULL;
	}
	return p;
}
