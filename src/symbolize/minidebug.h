/*
 * minidebug.h -- names from MiniDebugInfo: the .gnu_debugdata section
 * that Fedora, RHEL, openSUSE and others leave in stripped binaries, an
 * xz-compressed ELF file holding a .symtab of the function symbols that
 * .dynsym lacks (made by find-debuginfo: nm, objcopy --keep-symbols, xz,
 * objcopy --add-section).  With it a stripped program's static functions
 * get their names, not lines.  Read when an object's symbols are first
 * needed (symbols.c): when a profile is written, never in signal context.
 */
#ifndef CPUPROF_MINIDEBUG_H
#define CPUPROF_MINIDEBUG_H

#include <link.h>

#include "base/elf.h"
#include "symbols.h"

/* If the ELF image src (whose header and section headers are eh and
 * sh[0..eh->e_shnum)) has a .gnu_debugdata section, adds the function
 * symbols of the ELF file inside it to *t (the image's own, from .dynsym,
 * or none), keeping t sorted with one symbol per address (the image's own
 * first).  Returns 1 if symbols were added, 0 if there is no such
 * section, or a negative errno (liblzma missing, a corrupt stream, no
 * memory): t is then unchanged. */
int cp_minidebug_add(const struct cp_elf *src, const ElfW(Ehdr) *eh, const ElfW(Shdr) *sh,
		     struct cp_symtab *t);

#endif
