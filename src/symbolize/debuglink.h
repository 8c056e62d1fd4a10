/*
 * debuglink.h -- where an object's separate debug file may be: under the
 * debug root by build ID, and where GDB and libdw look for the file its
 * .gnu_debuglink section names (beside the object, in .debug/ beside it,
 * under the debug root's mirror of the object's directory).  The symbols
 * (symbols.c) read it for a stripped object's full .symtab, the lines
 * (lines.c) for its DWARF, debuginfod.c to know it is here already, and
 * cpuprof symbolize in its --debug-dir directories: all by these paths.
 * Not signal context.
 */
#ifndef CPUPROF_DEBUGLINK_H
#define CPUPROF_DEBUGLINK_H

#include <stddef.h>

/* Where separate debug files are looked for: cp_debug_root_dir
 * ("/usr/lib/debug"; unit tests set it), or the test build's
 * CPUPROF_TEST_DEBUG_ROOT.  Symbols, lines and debuginfod's "is it here
 * already?" all look there. */
extern const char *cp_debug_root_dir;
const char *cp_debug_root(void);

/* The debug file of build ID bid (lowercase hex) under root,
 * ROOT/.build-id/NN/REST.debug, into out[len]: 1, or 0 if bid is too
 * short or the path does not fit. */
int cp_debug_build_id_path(const char *root, const char *bid, char *out, size_t len);

/* The file name in the .gnu_debuglink of the ELF file at path into
 * name[256]: 1 if it has one (a plain name, no directory). */
int cp_debuglink_name(const char *path, char name[256]);

/* The k-th (k from 0) place of the debug file `link` (a .gnu_debuglink's
 * name) of the object at path into out[len]: beside it, in .debug/ beside
 * it, under root's mirror of its directory; then the same for the path
 * resolved, if it differs.  1 if there is a k-th (out "" if it does not
 * fit), 0 when there are no more (or link is not a plain name).  The
 * caller checks that the file found is the object's (its build ID or
 * CRC), and not the object itself. */
int cp_debuglink_path(const char *path, const char *link, const char *root, int k, char *out, size_t len);

#endif
