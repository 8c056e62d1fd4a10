/*
 * debuginfod.c -- debug files fetched by build ID from debuginfod servers
 * (debuginfod.h), through elfutils' libdebuginfod: the client gdb, perf
 * and systemtap use, which knows the servers' protocol, their list in
 * $DEBUGINFOD_URLS, its cache and its clean-up, $DEBUGINFOD_TIMEOUT and
 * the rest of its environment.  It is loaded with dlopen at the first
 * fetch, as libdw is (lines.c), so that nothing depends on it at load time
 * and a process that never fetches (the library, or the CLI without
 * $DEBUGINFOD_URLS) never loads it, nor touches the network.
 *
 * A server that accepts and never answers would hold each fetch for
 * libdebuginfod's timeout, and every object in turn: all fetches of the
 * process share one budget, which a progress callback enforces (libdebug-
 * infod calls it about once a second while it waits), and objects asked
 * for once it is spent fail without a connection.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "base/elf.h"
#include "base/error.h"
#include "base/testhooks.h"
#include "debuginfod.h"
#include "debuglink.h"
#include "lines.h"
#include "sig/clock.h"

const char *cp_debuginfod_soname = DEBUGINFOD_SONAME;

/* ---- Is it here already? ------------------------------------------------ */

int cp_debuginfod_configured(void)
{
	const char *u = getenv("DEBUGINFOD_URLS");
	return u && u[strspn(u, " \t\n")] != '\0';
}

/* Reads e's section headers: 1 with *has_info (a .debug_info or
 * .zdebug_info with contents) and link[256] (.gnu_debuglink's file name,
 * "" if none), 0 if they cannot be read. */
static int sections(const struct cp_elf *e, int *has_info, char *link)
{
	struct cp_elf_sections s;
	*has_info = 0;
	link[0] = '\0';
	if (cp_elf_sections_read(e, &s) != 0)
		return 0;
	for (size_t i = 0; i < s.eh.e_shnum; i++) {
		const char *name = cp_elf_section_name(&s, i);
		if (s.sh[i].sh_type == SHT_NOBITS || s.sh[i].sh_size == 0)
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			*has_info = 1;
		else if (!strcmp(name, ".gnu_debuglink")) {
			uint64_t n = s.sh[i].sh_size < 255 ? s.sh[i].sh_size : 255;
			if (cp_elf_read(e, s.sh[i].sh_offset, link, n) != 0)
				n = 0;
			link[n] = '\0';
		}
	}
	cp_elf_sections_free(&s);
	return 1;
}

/* 1 if the .gnu_debuglink file `link` of the object at path is where
 * lines.c looks for it. */
static int link_found(const char *path, const char *link)
{
	char p[4096];
	int found = 0;
	for (int k = 0; !found && cp_debuglink_path(path, link, cp_debug_root(), k, p, sizeof p); k++)
		found = p[0] && strcmp(p, path) != 0 && access(p, R_OK) == 0;
	return found;
}

int cp_debuginfod_local(const char *path, const char *build_id)
{
	char p[4096];
	if (cp_debug_build_id_path(cp_debug_root(), build_id, p, sizeof p) && access(p, R_OK) == 0)
		return 1;
	struct cp_elf e;
	if (cp_elf_open(&e, path) != 0)
		return 0;
	int info = 0, ok;
	char link[256];
	ok = (!build_id[0] || !strcmp(e.build_id, build_id)) && sections(&e, &info, link);
	cp_elf_close(&e);
	return ok && (info || link_found(path, link));
}

/* ---- Fetching ------------------------------------------------------------ */

#define DEBUGINFOD_FUNCS(X)                                                          \
	X(debuginfod_begin) X(debuginfod_end) X(debuginfod_find_debuginfo)          \
	X(debuginfod_set_progressfn)

static struct {
#define FIELD(f) __typeof__(f) *f;
	DEBUGINFOD_FUNCS(FIELD)
#undef FIELD
} di;

static int di_state; /* 0 not tried, 1 loaded, -1 absent */
static char di_why[200];

/* 0 if libdebuginfod is loaded (loading it now), else -ENOENT with the
 * reason in why. */
static int load(char *why, size_t len)
{
	if (di_state == 0) {
		void *h = dlopen(cp_debuginfod_soname, RTLD_NOW | RTLD_LOCAL);
		const char *missing = NULL;
#define LOAD(f)                                                   \
	if (h && !missing && !(*(void **)&di.f = dlsym(h, #f)))   \
		missing = #f;
		DEBUGINFOD_FUNCS(LOAD)
#undef LOAD
		if (!h) {
			const char *e = dlerror();
			snprintf(di_why, sizeof di_why, "%s not loaded (%s): install elfutils' libdebuginfod1",
				 cp_debuginfod_soname, e ? e : "not found");
		} else if (missing) {
			snprintf(di_why, sizeof di_why, "%s has no %s", cp_debuginfod_soname, missing);
		}
		/* Never unloaded: libcurl's threads and handlers stay. */
		di_state = di_why[0] ? -1 : 1;
	}
	if (di_state < 0)
		cp_why(why, len, "%s", di_why);
	return di_state > 0 ? 0 : -ENOENT;
}

/* One build ID asked for: its file, or why not. */
struct fetched {
	char build_id[2 * CP_ELF_BUILD_ID_MAX + 1];
	char *path;
	int rc;
	int given; /* by cp_debuginfod_use, not fetched */
	char why[160];
};

static struct fetched *table;
static size_t ntable, captable;
static uint64_t deadline_ns; /* 0: no fetch yet */
static long budget_ms;

static struct fetched *find(const char *build_id)
{
	for (size_t i = 0; i < ntable; i++)
		if (!strcmp(table[i].build_id, build_id))
			return &table[i];
	return NULL;
}

const char *cp_debuginfod_path(const char *build_id)
{
	const struct fetched *f = build_id && build_id[0] ? find(build_id) : NULL;
	return f && f->rc == 0 ? f->path : NULL;
}

/* libdebuginfod's progress callback: non-zero cancels the transfer. */
static int progress(debuginfod_client *c, long a, long b)
{
	(void)c;
	(void)a;
	(void)b;
	return cp_mono_ns() >= deadline_ns;
}

/* Asks the servers for build_id's debug file into f. */
static void ask(struct fetched *f)
{
	if (load(f->why, sizeof f->why) != 0) {
		f->rc = -ENOENT;
		return;
	}
	uint64_t now = cp_mono_ns();
	if (!deadline_ns) {
		budget_ms = cp_test_debuginfod_budget_ms() ? cp_test_debuginfod_budget_ms() : CP_DEBUGINFOD_BUDGET_MS;
		deadline_ns = now + (uint64_t)budget_ms * 1000000;
	}
	if (now >= deadline_ns) {
		f->rc = -ETIMEDOUT;
		snprintf(f->why, sizeof f->why, "not asked: the %ld s for fetching were spent", budget_ms / 1000);
		return;
	}
	debuginfod_client *c = di.debuginfod_begin();
	if (!c) {
		f->rc = -ENOMEM;
		snprintf(f->why, sizeof f->why, "libdebuginfod could not start a client");
		return;
	}
	di.debuginfod_set_progressfn(c, progress);
	char *path = NULL;
	int fd = di.debuginfod_find_debuginfo(c, (const unsigned char *)f->build_id, 0, &path);
	di.debuginfod_end(c);
	if (fd >= 0) {
		close(fd);
		f->path = path;
		f->rc = path ? 0 : -ENOMEM;
		if (!path)
			snprintf(f->why, sizeof f->why, "out of memory");
		return;
	}
	free(path);
	f->rc = fd;
	if (cp_mono_ns() >= deadline_ns) {
		f->rc = -ETIMEDOUT;
		snprintf(f->why, sizeof f->why, "no answer within the %ld s allowed for fetching", budget_ms / 1000);
	} else if (fd == -ENOENT) {
		snprintf(f->why, sizeof f->why, "no server has it");
	} else if (fd == -ETIME) {
		snprintf(f->why, sizeof f->why, "no answer within DEBUGINFOD_TIMEOUT");
	} else if (fd == -ENOSYS) {
		snprintf(f->why, sizeof f->why, "no server in DEBUGINFOD_URLS");
	} else {
		snprintf(f->why, sizeof f->why, "%s", strerror(-fd));
	}
}

/* A new entry for build_id (hex, checked), or NULL when out of memory. */
static struct fetched *add(const char *build_id)
{
	if (ntable == captable) {
		size_t cap = captable ? 2 * captable : 16;
		struct fetched *t = realloc(table, cap * sizeof *t);
		if (!t)
			return NULL;
		table = t;
		captable = cap;
	}
	struct fetched *f = &table[ntable++];
	memset(f, 0, sizeof *f);
	snprintf(f->build_id, sizeof f->build_id, "%s", build_id);
	return f;
}

static int valid_build_id(const char *build_id)
{
	size_t n = strlen(build_id);
	return n >= 2 && n < sizeof table->build_id && strspn(build_id, "0123456789abcdef") == n;
}

int cp_debuginfod_use(const char *build_id, const char *path)
{
	if (!valid_build_id(build_id))
		return -EINVAL;
	struct fetched *f = find(build_id);
	char *p = strdup(path);
	if (!p || (!f && !(f = add(build_id)))) {
		free(p);
		return -ENOMEM;
	}
	free(f->path);
	f->path = p;
	f->rc = 0;
	f->given = 1;
	return 0;
}

int cp_debuginfod_fetch(const char *build_id, char *why, size_t len)
{
	if (!cp_debuginfod_configured())
		return cp_why(why, len, "DEBUGINFOD_URLS is not set"), -ENOSYS;
	if (!valid_build_id(build_id))
		return cp_why(why, len, "no build ID"), -ENOENT;
	struct fetched *f = find(build_id);
	if (!f) {
		if (!(f = add(build_id)))
			return cp_why(why, len, "out of memory"), -ENOMEM;
		ask(f);
	}
	if (f->rc != 0)
		cp_why(why, len, "%s", f->why);
	return f->rc;
}

size_t cp_debuginfod_fetch_missing(const struct cp_lines_object *objs, size_t n, size_t *fetched,
				   void (*failed)(void *arg, size_t i, const char *why), void *arg)
{
	size_t wanted = 0;
	*fetched = 0;
	if (!cp_debuginfod_configured())
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct cp_lines_object *o = &objs[i];
		const struct fetched *f = find(o->build_id);
		if (o->path[0] != '/' || !o->build_id[0] || (f && f->given) ||
		    cp_debuginfod_local(o->file ? o->file : o->path, o->build_id))
			continue;
		wanted++;
		char why[160];
		if (cp_debuginfod_fetch(o->build_id, why, sizeof why) == 0)
			(*fetched)++;
		else if (failed)
			failed(arg, i, why);
	}
	return wanted;
}
