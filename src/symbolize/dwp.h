/*
 * dwp.h -- split DWARF packed into a .dwp (binutils' dwp, llvm-dwp), for
 * a libdw that reads no packages (elfutils before 0.191: Debian 12 has
 * 0.188).  libdw finds a split unit in a .dwo file beside the file its
 * skeleton was read from; so the lines child (lines.c) unpacks: it writes
 * the skeleton's debug sections, and each unit's contributions to the
 * package (found by its DWO id in .debug_cu_index) as a .dwo of the name
 * the skeleton gives, into a private directory; libdw reads them there,
 * with its own linking of skeleton and split unit, and the directory is
 * removed as soon as every unit is open (only a reader killed in between
 * leaves one: $TMPDIR/cpuprof-dwp.*, mode 0700).  Only the debug sections
 * and the package's units are written: as much as the .dwp and the
 * skeletons, not the program.  Not signal context.
 */
#ifndef CPUPROF_DWP_H
#define CPUPROF_DWP_H

#include <stddef.h>
#include <stdint.h>

#include "base/elf.h"

struct cp_dwp_unit {
	uint64_t id;      /* DWO id of the skeleton */
	const char *name; /* its DW_AT_[GNU_]dwo_name */
};

/* Unpacks into a new directory (its path into dir[dirlen]): "skeleton",
 * an ELF file of the sections of src named .debug_* (with their flags:
 * compressed ones stay so), and for each of units[0..n) found in the
 * package at dwp_path, a .dwo at its name (a name that is absolute or
 * climbs out with ".." is skipped).  Returns the number of units written
 * (0 and no directory left if none), or a negative errno with the reason
 * in why[len].  Remove with cp_dwp_clean. */
int cp_dwp_unpack(const struct cp_elf *src, const char *dwp_path, const struct cp_dwp_unit *units, size_t n,
		  char *dir, size_t dirlen, char *why, size_t len);

/* Removes dir and what cp_dwp_unpack wrote in it. */
void cp_dwp_clean(const char *dir);

#endif
