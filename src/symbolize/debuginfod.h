/*
 * debuginfod.h -- where debug files come from when they are not on this
 * machine: the debuginfod servers of $DEBUGINFOD_URLS, asked by GNU build
 * ID through elfutils' libdebuginfod (loaded with dlopen at the first
 * fetch, never before), into its own cache ($DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client).  What was fetched is kept by build ID for
 * the life of the process, and the readers of symbols (symbols.c) and
 * lines (lines.c) look there after the places they always look: a
 * process that fetched nothing (the library always: only the CLI fetches)
 * reads exactly as before.  Not for signal context.
 */
#ifndef CPUPROF_DEBUGINFOD_H
#define CPUPROF_DEBUGINFOD_H

#include <stddef.h>

/* All the fetches of one process together wait at most this long: a
 * server that accepts and never answers cannot hold `record`'s end for
 * longer.  Each fetch also ends when libdebuginfod's own
 * $DEBUGINFOD_TIMEOUT (90 s by default) says so. */
#define CP_DEBUGINFOD_BUDGET_MS 30000

/* 1 if $DEBUGINFOD_URLS names a server (is set and not blank). */
int cp_debuginfod_configured(void);

/* 1 if the object at path, whose build ID is build_id (hex, "" if none),
 * has its DWARF on this machine: its own .debug_info, a debug file under
 * the debug root's .build-id/, or the file its .gnu_debuglink names,
 * beside it, in its .debug/ or under the debug root (as lines.c looks);
 * else 0 (also when the file cannot be read). */
int cp_debuginfod_local(const char *path, const char *build_id);

/* Fetches the debug file of the object whose build ID is build_id (hex)
 * from the servers, unless an earlier call did (or failed: it is not
 * asked again), within what is left of CP_DEBUGINFOD_BUDGET_MS.  Returns
 * 0 when the file is in the cache (cp_debuginfod_path then names it), or
 * a negative errno with the reason in why[len] (-ENOSYS: no server
 * configured; -ENOENT: no server has it; -ETIMEDOUT: out of time). */
int cp_debuginfod_fetch(const char *build_id, char *why, size_t len);

/* The path of the debug file fetched for build_id (or given by
 * cp_debuginfod_use), or NULL.  Never fetches: it only says what
 * cp_debuginfod_fetch brought. */
const char *cp_debuginfod_path(const char *build_id);

/* Takes the file at path as the debug file of build_id, as if it had been
 * fetched: one the user pointed at (cpuprof symbolize --debug-dir), which
 * the readers then find where they find fetched ones.  0 or -ENOMEM. */
int cp_debuginfod_use(const char *build_id, const char *path);

/* Fetches, through cp_debuginfod_fetch, the debug files of those of
 * objs[0..n) (lines.h's: a path and a build ID) that are files with a
 * build ID and have no DWARF here (cp_debuginfod_local).  Returns how
 * many needed one, *fetched how many of them came; failed(arg, i, why) is
 * called for each objs[i] that needed one and did not get it.  One that
 * cp_debuginfod_use gave needs none.  Nothing at all when no server is
 * configured (returns 0). */
struct cp_lines_object;
size_t cp_debuginfod_fetch_missing(const struct cp_lines_object *objs, size_t n, size_t *fetched,
				   void (*failed)(void *arg, size_t i, const char *why), void *arg);

/* Internal, for tests: the name dlopen'ed ("libdebuginfod.so.1"). */
extern const char *cp_debuginfod_soname;

#endif
