/*
 * kallsyms.h -- the running kernel's function names, from /proc/kallsyms,
 * for the kernel frames of `cpuprof record --kernel`: its text symbols
 * sorted by address, each taken to reach the next (kallsyms gives no
 * sizes), a module's named "name [module]".  Not for signal context.
 */
#ifndef CPUPROF_KALLSYMS_H
#define CPUPROF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

/* The name a profile gives the kernel's object (its Mapping's file), as
 * perf's converters do. */
#define CP_KALLSYMS_OBJECT "[kernel.kallsyms]"

struct cp_kallsyms {
	struct cp_symtab tab; /* run-time addresses */
	uintptr_t lo, hi;     /* the text the symbols cover */
};

/* Reads the text symbols of the kallsyms file at path (NULL:
 * /proc/kallsyms) into *k.  0, or a negative errno with why in why[len]:
 * -EPERM where every address reads 0 (kernel.kptr_restrict hides them
 * from this user), -ENOENT where there is no text symbol. */
int cp_kallsyms_read(const char *path, struct cp_kallsyms *k, char *why, size_t len);
void cp_kallsyms_free(struct cp_kallsyms *k);

#endif
