/*
 * jit.h -- names of code a JIT compiler made, as the JIT itself tells perf:
 * its perf map (/tmp/perf-PID.map, a line `START SIZE NAME` per piece of
 * code, START and SIZE in hex) and its jitdump (jit-PID.dump, perf's binary
 * format: a header, then records; JIT_CODE_LOAD gives code's address, size
 * and name, JIT_CODE_MOVE moves it, JIT_CODE_DEBUG_INFO gives the source
 * lines of the load that follows it).  Both are written as the program
 * runs, so a range may be named again: for every address, the entry read
 * last wins (the map's later lines, and a dump read after a map).  Read
 * outside signal context; a malformed file gives what was read before the
 * fault and a reason, never a crash.
 */
#ifndef CPUPROF_SYMBOLIZE_JIT_H
#define CPUPROF_SYMBOLIZE_JIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* In a profile: the file name of the Mapping of a JIT's code (a name in
 * brackets, which pprof readers take for memory no file backs), and the
 * name of code its JIT left unnamed.  report tells JIT frames by it. */
#define CP_JIT_MAPPING "[jit]"

/* A source line from a jitdump: from addr on, the code is of file:line
 * (file an offset into the table's strings). */
struct cp_jit_line {
	uint64_t addr;
	uint32_t line, file;
};

/* A named range of code: [start, end), its name an offset into the
 * table's strings, its lines lines[line0 .. line0 + nlines) sorted by
 * address. */
struct cp_jit_sym {
	uint64_t start, end;
	uint32_t name;
	uint32_t line0, nlines;
};

struct cp_jit {
	struct cp_jit_sym *syms;   /* as read until cp_jit_finish; then disjoint, by start */
	size_t nsyms, capsyms;
	char *str;                 /* the names, NUL-terminated, from offset 1 on */
	size_t nstr, capstr;
	struct cp_jit_line *lines;
	size_t nlines, caplines;
	size_t map_entries, dump_entries; /* what was read of each kind */
	/* A file last written before this (CLOCK_REALTIME ns; 0: any) is of
	 * another process that had the same PID: not read (-ESTALE). */
	int64_t not_before_ns;
	/* The process's user (if owner_known): a file owned by neither it
	 * nor root is not read (-EPERM), as perf refuses one: anyone may
	 * write /tmp/perf-PID.map for a PID not yet theirs. */
	int owner_known;
	uid_t owner;
	/* The anonymous executable mappings its code is in, where known
	 * (cp_jit_load): [lo, hi) pairs, sorted by lo. */
	uint64_t *regions;
	size_t nregions, capregions;
	int finished;
};

/* Reads the perf map `path`, relative to directory dirfd (AT_FDCWD for
 * ours), into j.  The number of entries read, or a negative errno with
 * why[len] (-ENOENT: there is none).  A malformed line is skipped. */
long cp_jit_read_map(struct cp_jit *j, int dirfd, const char *path, char *why, size_t len);

/* Reads the jitdump `path`, relative to dirfd, into j.  The number of
 * code loads read, or a negative errno with why[len] (a file cut short
 * keeps what came before the cut: the JIT may still have been writing). */
long cp_jit_read_dump(struct cp_jit *j, int dirfd, const char *path, char *why, size_t len);

/* Whether `path`, a mapping's as the kernel names it, is anonymous
 * memory, where a JIT puts its code: "" (/proc/PID/maps), "//anon" (perf's
 * records), "[anon:NAME]" (named with PR_SET_VMA), "/memfd:NAME (deleted)". */
int cp_jit_is_anon_path(const char *path);

/* Whether `path` names a jitdump by perf's convention (jit-PID.dump,
 * whatever its directory). */
int cp_jit_is_dump_path(const char *path);

/* Makes j's entries disjoint, the last read winning each address; after
 * it, nothing more is read into j.  0, or -ENOMEM. */
int cp_jit_finish(struct cp_jit *j);

/* The range of finished j that holds pc, or NULL. */
const struct cp_jit_sym *cp_jit_lookup(const struct cp_jit *j, uint64_t pc);

/* The name of s. */
const char *cp_jit_name(const struct cp_jit *j, const struct cp_jit_sym *s);

/* The source line of pc in s (0 if none), its file in *file ("" if
 * none). */
uint32_t cp_jit_line_of(const struct cp_jit *j, const struct cp_jit_sym *s, uint64_t pc, const char **file);

/* The effective user of process pid (/proc/PID/status), in *uid: 0, or
 * -1 if it cannot be read. */
int cp_jit_owner(pid_t pid, uid_t *uid);

/* When process pid started (CLOCK_REALTIME ns, to the second: the
 * kernel's boot time is whole seconds), less 2 s; 0 if unknown. */
int64_t cp_jit_not_before(pid_t pid);

/* The region of finished j that holds pc: the anonymous mapping it is
 * in where known, else its named range. */
void cp_jit_region(const struct cp_jit *j, const struct cp_jit_sym *s, uint64_t pc, uint64_t *lo, uint64_t *hi);

/* The JIT names of process pid (this one, or another that shares our
 * /tmp and PID namespace): its perf map (/tmp/perf-PID.map) and the
 * jitdumps it has mapped (/proc/PID/maps; or, if it has none mapped now,
 * jit-PID.dump where it runs), finished; NULL if it has neither or
 * memory ran out. */
struct cp_jit *cp_jit_load(pid_t pid);

void cp_jit_free(struct cp_jit *j);

#endif
