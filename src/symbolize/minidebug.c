/*
 * minidebug.c -- function names from MiniDebugInfo (minidebug.h): the
 * .gnu_debugdata section is read with the image's bounded reads, inflated
 * with liblzma (unpack.c, loaded at run time: liblzma.so.5 is on every
 * Debian system, dpkg and libdw need it), its symbols read as any ELF
 * image's (symbols.c) and merged into the table of the object's own.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "minidebug.h"
#include "unpack.h"

/* Bounds: Fedora's are tens to hundreds of KiB compressed. */
#define MAX_PACKED ((uint64_t)64 << 20)
#define MAX_UNPACKED ((size_t)512 << 20)

/* The mini ELF is read by the same reader (symbols.c), which must not
 * come back here for one that holds a .gnu_debugdata itself. */
static __thread int inside;

/* The section of src named `want`, or NULL. */
static const ElfW(Shdr) *section(const struct cp_elf *src, const ElfW(Ehdr) *eh, const ElfW(Shdr) *sh,
				 const char *want)
{
	if (eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx >= eh->e_shnum)
		return NULL;
	const ElfW(Shdr) *names = &sh[eh->e_shstrndx];
	size_t wl = strlen(want) + 1;
	char buf[32];
	if (wl > sizeof buf)
		return NULL;
	for (size_t i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= names->sh_size || names->sh_size - sh[i].sh_name < wl)
			continue;
		if (cp_elf_read(src, names->sh_offset + sh[i].sh_name, buf, wl) == 0 && !memcmp(buf, want, wl))
			return &sh[i];
	}
	return NULL;
}

/* t and u (each sorted, one symbol per address) merged into t, t's
 * symbol kept where both have one at an address. */
static int merge(struct cp_symtab *t, const struct cp_symtab *u)
{
	size_t bytes = 0, n = 0;
	for (size_t i = 0; i < t->n; i++)
		bytes += strlen(t->syms[i].name) + 1;
	for (size_t i = 0; i < u->n; i++)
		bytes += strlen(u->syms[i].name) + 1;
	struct cp_sym *syms = malloc((t->n + u->n) * sizeof *syms);
	char *names = malloc(bytes ? bytes : 1), *p = names;
	if (!syms || !names) {
		free(syms);
		free(names);
		return -ENOMEM;
	}
	for (size_t i = 0, k = 0; i < t->n || k < u->n;) {
		const struct cp_sym *s;
		if (k == u->n || (i < t->n && t->syms[i].start <= u->syms[k].start)) {
			s = &t->syms[i++];
			if (k < u->n && u->syms[k].start == s->start)
				k++;
		} else {
			s = &u->syms[k++];
		}
		size_t len = strlen(s->name) + 1;
		memcpy(p, s->name, len);
		syms[n] = (struct cp_sym){ s->start, s->size, p };
		p += len;
		n++;
	}
	cp_symbols_symtab_free(t);
	t->syms = syms;
	t->names = names;
	t->n = n;
	return 0;
}

int cp_minidebug_add(const struct cp_elf *src, const ElfW(Ehdr) *eh, const ElfW(Shdr) *sh,
		     struct cp_symtab *t)
{
	if (inside)
		return 0;
	const ElfW(Shdr) *s = section(src, eh, sh, ".gnu_debugdata");
	if (!s || s->sh_type != SHT_PROGBITS || s->sh_size == 0)
		return 0;
	if (s->sh_size > MAX_PACKED || s->sh_offset > src->size || s->sh_size > src->size - s->sh_offset)
		return -ENOEXEC;
	void *packed = malloc((size_t)s->sh_size), *elf;
	size_t size;
	char why[160];
	if (!packed)
		return -ENOMEM;
	int rc = cp_elf_read(src, s->sh_offset, packed, s->sh_size);
	if (rc == 0)
		rc = cp_unpack_xz(packed, (size_t)s->sh_size, MAX_UNPACKED, &elf, &size, why, sizeof why);
	free(packed);
	if (rc != 0)
		return rc;
	struct cp_symtab mini;
	inside = 1;
	rc = cp_symbols_read_image(elf, size, &mini, NULL);
	inside = 0;
	free(elf);
	if (rc != 0)
		return rc;
	rc = mini.n ? merge(t, &mini) : 0;
	int added = rc == 0 && mini.n > 0;
	cp_symbols_symtab_free(&mini);
	return rc < 0 ? rc : added;
}
