/*
 * debuglink.h -- the separate debug file an object names in its
 * .gnu_debuglink section, where GDB and libdw look for it: beside the
 * object, in .debug/ beside it, and under the debug root's mirror of the
 * object's directory.  The symbols read it (symbols.c) for a stripped
 * object's full .symtab, as the lines do for its DWARF (lines.c).  Not
 * signal context.
 */
#ifndef CPUPROF_DEBUGLINK_H
#define CPUPROF_DEBUGLINK_H

#include <stddef.h>

/* The candidate paths of the debug file of the object at path, its k-th
 * (k from 0) into out[len]: 1 if there is a k-th, 0 when there are no
 * more (or the object names none).  The caller checks that the file found
 * is the object's (its build ID), and not the object itself. */
int cp_debuglink_candidate(const char *path, const char *root, int k, char *out, size_t len);

#endif
