/*
 * symbols.h -- symbolization: a snapshot of the objects loaded in a process
 * (main executable, shared libraries, the vDSO) with their executable
 * segments, GNU build IDs and function symbols read from the ELF files
 * (.symtab, else .dynsym) or from their separate debug files
 * (/usr/lib/debug/.build-id/, when installed).  An object's symbols are
 * read the first time a lookup needs them, so a profile pays for the
 * objects its samples are in, not for every object loaded.  Built and
 * queried outside signal context (it opens files and allocates), by one
 * thread at a time.
 */
#ifndef CPUPROF_SYMBOLS_H
#define CPUPROF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "base/elf.h"

/* Longest build ID kept, in bytes (SHA-1 IDs are 20); longer ones are
 * ignored. */
#define SYMBOLS_BUILD_ID_MAX CP_ELF_BUILD_ID_MAX

/* One function symbol; start is the link-time address (st_value).  A
 * symbol the table gives no size (an assembler label) is taken to extend
 * to the next symbol or the end of its section, whichever comes first. */
struct cp_sym {
	uintptr_t start;
	uintptr_t size;
	const char *name;
};

/* The function symbols of one ELF file, sorted by start, one per address
 * (of several aliases the best-named is kept). */
struct cp_symtab {
	struct cp_sym *syms;
	size_t n;
	char *names; /* storage the names point into */
};

struct cp_object {
	char *path;      /* file path, "[vdso]" for the vDSO */
	char *file;      /* where it is read, if not at path (another root's: record), or NULL */
	char build_id[2 * SYMBOLS_BUILD_ID_MAX + 1]; /* lowercase hex, "" if none */
	uintptr_t bias;  /* load bias: run-time address - link-time address */
	/* Its symbols once read (cp_symbols_object_symtab), where they are
	 * read from: the running program's file, or an image in memory (the
	 * vDSO: [image_lo, image_hi), 0 if ours is not the same), else path. */
	struct cp_symtab *symtab;
	int symtab_read, symtab_shared, self_exe;
	uintptr_t image_lo, image_hi;
};

/* One executable PT_LOAD segment of an object as loaded (not rounded to
 * pages as /proc/self/maps shows it): [start, limit) in memory maps to
 * file_offset onwards. */
struct cp_segment {
	uintptr_t start, limit;
	uint64_t file_offset;
	const struct cp_object *obj;
};

struct cp_symbols {
	struct cp_object *objs;
	size_t nobjs;
	struct cp_segment *segs; /* sorted by start */
	size_t nsegs;
	/* The main program's and the vDSO's objects (SIZE_MAX: none), and
	 * where the vDSO is in memory. */
	size_t exe_index, vdso_index;
	uintptr_t vdso_start, vdso_end;
};

/* Takes a snapshot of the loaded objects, whose symbols are read when
 * first needed.  Objects whose file cannot be read (or is malformed, or
 * whose build ID differs from the loaded one) have no symbols.  Returns
 * NULL only when out of memory.  Free with cp_symbols_free(). */
struct cp_symbols *cp_symbols_load(void);

/* The symbols of object o of s, read now if they were not yet (an empty
 * table if there are none, or no memory). */
const struct cp_symtab *cp_symbols_object_symtab(const struct cp_symbols *s, const struct cp_object *o);

/* From now on, the symbols read from a file are kept for the life of the
 * process and shared by every snapshot that has the same file (path and
 * build ID): `cpuprof record`, whose many processes load the same
 * libraries, reads each once. */
void cp_symbols_share_files(void);

/* One object as another process had it loaded (cpuprof record). */
struct cp_object_desc {
	const char *path;     /* "[vdso]" for the vDSO */
	const char *build_id; /* hex, "" if none */
	uintptr_t bias;
	const struct cp_segment_desc {
		uintptr_t start, limit;
		uint64_t file_offset;
	} *segs;
	size_t nsegs;
	const char *file;     /* where to read it, if not at path (NULL) */
	/* Its symbols, kept by the caller for the snapshot's life (the
	 * kernel's, from kallsyms.h), or NULL: read from path. */
	const struct cp_symtab *symtab;
};

/* A snapshot of the objects another process had loaded, whose main
 * program is the file `exe`, with their symbols read from the files on
 * disk (where a file's build ID is not the one loaded, none), and the
 * vDSO's from ours where the kernel's is the same, each when first
 * needed.  NULL only when out of memory. */
struct cp_symbols *cp_symbols_from_objects(const struct cp_object_desc *objs, size_t n, const char *exe);
void cp_symbols_free(struct cp_symbols *s);

/* The executable segment containing pc, or NULL. */
const struct cp_segment *cp_symbols_segment_for(const struct cp_symbols *s,
					     uintptr_t pc);

/* The name of the function containing pc (as in the symbol table, maybe
 * mangled), or NULL: the symbol with pc in [start, start + size), the
 * innermost if symbols nest.  If sym_start is not NULL it receives the
 * symbol's run-time address.  The name lives as long as s. */
const char *cp_symbols_name_for(const struct cp_symbols *s, uintptr_t pc,
			     uintptr_t *sym_start);

/* 1 if the function containing pc is known and addr is code (in an
 * executable segment) outside that function; 0 if addr is in the same
 * function, is not code, or pc's function is unknown. */
int cp_symbols_code_outside_function(const struct cp_symbols *s, uintptr_t pc,
				  uintptr_t addr);

/* Internal, exposed for tests: reads the function symbols of the ELF file
 * at `path` (or of the ELF image in memory at image[0..size)) into *out,
 * and its GNU build ID as hex into build_id if that is not NULL ("" if
 * none).  Every offset is checked against the file size: a truncated or
 * malformed file gives -ENOEXEC (or an open/read error), never a crash.
 * On success *out may hold zero symbols.  Free with cp_symbols_symtab_free. */
int cp_symbols_read_file(const char *path, struct cp_symtab *out,
		      char *build_id);
int cp_symbols_read_image(const void *image, size_t size, struct cp_symtab *out,
		       char *build_id);
void cp_symbols_symtab_free(struct cp_symtab *t);

/* Internal, exposed for tests: the symbol of t containing the link-time
 * address addr by the rule of cp_symbols_name_for, or NULL. */
const struct cp_sym *cp_symbols_symtab_lookup(const struct cp_symtab *t,
					   uintptr_t addr);

#endif
