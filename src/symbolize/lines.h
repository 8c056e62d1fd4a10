/*
 * lines.h -- source lines and inlined functions from DWARF: for an object
 * (its file's path and GNU build ID) and a link-time address in it, the
 * chain of functions inlined there, innermost first, each with its source
 * file, line and the line it starts at.  The DWARF is read with elfutils'
 * libdw, loaded with dlopen at first use (no link-time dependency), from
 * the object itself or from its separate debug file (found by build ID
 * under /usr/lib/debug/.build-id/, or by .gnu_debuglink); compressed
 * sections, DWARF 4 and 5 and split DWARF (.dwo) as libdw reads them.
 * Depends only on files on disk, never on this process's memory, so it
 * serves objects of other processes as well.  Not for signal context.
 *
 * Two layers: cp_lines_open/lookup/close read one object in this process
 * (for tests and for the child below); cp_lines_resolve answers a whole
 * batch in a child process (lines_child.c), so that a libdw crash, hang or
 * memory blow-up on a corrupt or hostile file costs the lines of that
 * object and never the process that asked.
 */
#ifndef CPUPROF_LINES_H
#define CPUPROF_LINES_H

#include <stddef.h>
#include <stdint.h>

/* Deepest inline chain returned: a deeper one keeps its innermost
 * CP_LINES_MAX_DEPTH - 1 levels and its outermost function. */
#define CP_LINES_MAX_DEPTH 32

/* One level of an inline chain.  name is the function's DW_AT_name (NULL
 * when the address lies in a unit with line information but no function
 * DIE for it, as in assembly: the caller then uses the ELF symbol);
 * linkage its DW_AT_linkage_name (mangled, C++), or NULL; file the source
 * file (full path as the compiler recorded it, "" if unknown); line the
 * line (0 if unknown); start_line the line the function starts at, or 0
 * when unknown or in another file than `file`. */
struct cp_lines_frame {
	const char *name, *linkage, *file;
	uint32_t line, start_line;
};

/* ---- One object, in this process ------------------------------------- */

struct cp_lines_dwarf;
struct cp_lines_cached;

/* 0 if libdw.so.1 is loaded (loading it at the first call), else -ENOENT
 * with the reason in why[len]. */
int cp_lines_libdw(char *why, size_t len);

/* Opens the DWARF for the object at `path` whose build ID (lowercase hex,
 * "" if unknown) is build_id: the file's own if it has .debug_info and its
 * build ID matches, else a separate debug file whose build ID matches (by
 * build ID path, then .gnu_debuglink, whose CRC must match when either
 * file has no build ID).  Returns 0 with *out, or a negative errno with
 * the reason in why[len] (-ENOENT: no DWARF found; -ENOEXEC: unusable).
 * Close with cp_lines_close. */
int cp_lines_open(const char *path, const char *build_id,
		  struct cp_lines_dwarf **out, char *why, size_t len);
void cp_lines_close(struct cp_lines_dwarf *d);

/* Result of a lookup, besides the frames. */
enum cp_lines_status {
	CP_LINES_OK = 0,      /* frames[0..n) */
	CP_LINES_NONE,        /* no unit or no line covers addr */
	CP_LINES_NO_DWO,      /* its split DWARF unit (.dwo) was not found */
	CP_LINES_BAD,         /* libdw failed on the unit: malformed DWARF */
	CP_LINES_MISMATCH,    /* the DWARF function does not start where the
				 symbol does: a wrong or corrupt debug file */
};

/* The addresses an answer holds for: the lookup gives the same status
 * and chain at every address of [lo, hi), for a symbol start of 0 or fn
 * (of any when fn is CP_LINES_ANY_FN): the line-table row's addresses,
 * cut down to the unit's and the function's range and to every inline
 * scope's (and the neighbours' it was told apart from) that the lookup
 * looked at.  An answer that did not come from such a walk (malformed
 * DWARF) holds for [addr, addr + 1) alone. */
#define CP_LINES_ANY_FN UINT64_MAX
struct cp_lines_span {
	uint64_t lo, hi, fn;
};

/* The inline chain at link-time address addr, innermost first, into
 * frames[0..CP_LINES_MAX_DEPTH), its length in *n, and, if span is not
 * NULL, the addresses the answer holds for.  If sym_start is not 0 it is
 * the link-time start of the ELF symbol containing addr, and the chain's
 * outermost function must have a range starting there.  Strings live
 * until cp_lines_close.  Never fails for memory: a unit that cannot be
 * read gives CP_LINES_BAD. */
enum cp_lines_status cp_lines_lookup(struct cp_lines_dwarf *d, uint64_t addr,
				     uint64_t sym_start,
				     struct cp_lines_frame *frames, size_t *n,
				     struct cp_lines_span *span);

/* What the object's lookups so far met, for a comment: NULL if nothing
 * went wrong, else a short phrase ("split DWARF unit x.dwo not found"). */
const char *cp_lines_trouble(const struct cp_lines_dwarf *d);

/* The path of the file d's DWARF is read from: the object's own, or its
 * separate debug file; NULL when it is more than one file (split DWARF,
 * whose units are in .dwo files). */
const char *cp_lines_source(const struct cp_lines_dwarf *d);

/* Internal, for tests: the name dlopen'ed ("libdw.so.1"). */
extern const char *cp_lines_libdw_soname;

/* ---- A batch, in a child process -------------------------------------- */

struct cp_lines_object {
	const char *path;     /* the object's file */
	const char *build_id; /* lowercase hex, "" if unknown */
	const char *file;     /* where to read it, if not at path (NULL) */
};

struct cp_lines_query {
	size_t object;      /* index into the objects */
	uint64_t addr;      /* link-time address */
	uint64_t sym_start; /* link-time start of its ELF symbol, 0 if none */
};

/* An answer: n frames (0: no lines), innermost first. */
struct cp_lines_chain {
	const struct cp_lines_frame *frames;
	uint32_t n;
};

struct cp_lines_result {
	struct cp_lines_chain *chains; /* one per query, in order */
	/* One per query: the addresses its answer holds for (lo == hi when
	 * unknown: no answer, or an object whose reading met trouble). */
	struct cp_lines_span *spans;
	/* Per object with queries: NULL if its DWARF was read and nothing
	 * went wrong (addresses in no unit, as PLT stubs, just have no
	 * lines), else why some or all have none ("no DWARF: ...", "3 of 40
	 * addresses without lines: ..."). */
	char **why;
	size_t nobjs;
	/* Per object: 1 if its DWARF was read (its chains carry inline
	 * frames), 0 if it had none or it was rejected. */
	unsigned char *has_dwarf;
	void *mem; /* storage of the frames and strings */
	/* Per object: the answers kept from earlier runs (lines_cache.h),
	 * which some chains point into, or NULL. */
	struct cp_lines_cached **cached;
};

/* Answers the queries q[0..nq) about objs[0..nobjs): those inside the
 * range of an answer an earlier call kept in the lines cache
 * (lines_cache.h), which keeps the new answers and their ranges in turn;
 * the rest in a forked child process that reads the DWARF with libdw (a
 * query inside the range of the one before it takes its answer without
 * libdw) and sends the chains back through
 * a pipe, under a time limit (timeout_ms in all); a child that crashes or
 * runs out of time is killed, costs the lines of the object it was
 * reading (the reason says so) and a new child carries on with the next
 * objects.  An object whose DWARF disagrees with its symbol table at more
 * than one address in ten keeps no lines at all.  Returns 0 with *out
 * filled (also when no object had lines: see out->why), or -ENOMEM;
 * `global` receives a reason when nothing could be looked up at all
 * (libdw missing, fork failed), else "".  Free with
 * cp_lines_result_free. */
int cp_lines_resolve(const struct cp_lines_object *objs, size_t nobjs,
		     const struct cp_lines_query *q, size_t nq, int timeout_ms,
		     struct cp_lines_result *out, char *global, size_t glen);
void cp_lines_result_free(struct cp_lines_result *r);

#endif
