/*
 * elf.h -- the little of an ELF file that both the unwinder and the
 * symbolizer need from outside a process: its program headers, its GNU
 * build ID, its sections by name, and reads of its bytes, from a file (pread: a file that
 * shrinks under us gives an error, never a SIGBUS) or from an image in
 * memory (the vDSO).  Every offset is checked against the size.  Not
 * signal context.
 */
#ifndef CPUPROF_ELF_H
#define CPUPROF_ELF_H

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* This machine's ELF class and byte order (<elf.h>'s ELFCLASS*, ELFDATA2*). */
#define ELF_CLASS_NATIVE (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ELF_DATA_NATIVE ELFDATA2LSB
#else
#define ELF_DATA_NATIVE ELFDATA2MSB
#endif

/* Longest build ID kept, in bytes (SHA-1 IDs are 20). */
#define CP_ELF_BUILD_ID_MAX 64
#define CP_ELF_MAX_SEGS 32

struct cp_elf_seg {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

struct cp_elf {
	int fd;                   /* -1 for an image in memory */
	const uint8_t *mem;
	uint64_t size;
	struct cp_elf_seg seg[CP_ELF_MAX_SEGS]; /* the first program headers */
	size_t nseg;
	char build_id[2 * CP_ELF_BUILD_ID_MAX + 1]; /* lowercase hex, "" if none */
};

/* Opens the ELF file at path (of this machine's class and byte order) and
 * reads its program headers and build ID.  0, or a negative errno
 * (-ENOEXEC: not such an ELF file). */
int cp_elf_open(struct cp_elf *e, const char *path);
/* The same for an image in memory, laid out as a file is. */
int cp_elf_open_image(struct cp_elf *e, const void *mem, size_t size);
void cp_elf_close(struct cp_elf *e);

/* Copies [off, off + len) of e into buf.  0, -ENOEXEC if outside the
 * file, or a read error. */
int cp_elf_read(const struct cp_elf *e, uint64_t off, void *buf, uint64_t len);

/* e's section headers and their names, read whole.  Bounded: at most
 * 65535 headers and 16 MiB of names. */
struct cp_elf_sections {
	ElfW(Ehdr) eh;
	ElfW(Shdr) *sh; /* eh.e_shnum of them */
	char *names;    /* NUL-terminated */
	uint64_t names_size;
};
/* 0, or -ENOEXEC (no section headers of this machine's, or unreadable:
 * s is then empty, safe to free). */
int cp_elf_sections_read(const struct cp_elf *e, struct cp_elf_sections *s);
void cp_elf_sections_free(struct cp_elf_sections *s);
/* The name of section i ("" if out of bounds). */
const char *cp_elf_section_name(const struct cp_elf_sections *s, size_t i);
/* The first section named name, or NULL. */
const ElfW(Shdr) *cp_elf_section_find(const struct cp_elf_sections *s, const char *name);
/* The bytes of section sh of e, malloc'd (at least one byte): NULL if it
 * has none in the file (SHT_NOBITS), is larger than max, or unreadable. */
unsigned char *cp_elf_section_bytes(const struct cp_elf *e, const ElfW(Shdr) *sh, uint64_t max);

/* This process's vDSO: [*lo, *hi), the ELF image the kernel maps at
 * AT_SYSINFO_EHDR, whose section headers are its last bytes (no read of
 * /proc/self/maps).  Returns 0 if there is none, or it is not an ELF image
 * of this machine's, or implausibly large. */
int cp_elf_vdso(uintptr_t *lo, uintptr_t *hi);

/* Scans the ELF notes in p[0..len) (aligned to `align`, 4 or 8) for an
 * NT_GNU_BUILD_ID note and writes its descriptor as lowercase hex into
 * out[2 * CP_ELF_BUILD_ID_MAX + 1].  Returns 1 if found. */
int cp_elf_notes_build_id(const uint8_t *p, size_t len, size_t align, char *out);

#endif
