/*
 * pprof_names.c -- the pprof writer's names and lines (pprof_build.h):
 * each location's function from the symbol tables (versions cut, C++ and
 * Rust names demangled), and its lines and inlined functions from the
 * DWARF, asked of the lines reader for every object at once, with what it
 * could not answer said in the profile's comments.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/array.h"
#include "base/error.h"
#include "symbolize/lines.h"
#include "pprof_build.h"
#include "pprof_write.h"
#include "profile_proto.h"
#include "protobuf.h"
#include "symbolize/demangle.h"
#include "symbolize/symbols.h"
#include "base/hash.h"

/* Longest the DWARF reader may take for a whole profile, and most objects
 * the comments name for having no lines. */
enum { LINES_TIMEOUT_MS = 30000, MAX_LINES_COMMENTS = 8 };

int cp_pprof_lines = 1;

/* The string index of symbol name s without its symbol version
 * ("memcpy@GLIBC_2.2.5", "__libc_start_main@@GLIBC_2.34"). */
static uint32_t str_unversioned(struct builder *b, const char *s)
{
	size_t len = cp_symbol_unversioned_len(s);
	if (!s[len])
		return cp_pb_str_intern(b, s);
	char *copy = strndup(s, len);
	if (!copy) {
		b->err = ENOMEM;
		return 0;
	}
	uint32_t k = cp_pb_str_intern(b, copy);
	free(copy);
	return k;
}

/* The string index of the demangled form of symbol (or linkage name) s,
 * without its version, or 0 if s is not a mangled name. */
static uint32_t str_demangled(struct builder *b, const char *s)
{
	char *base = strndup(s, cp_symbol_unversioned_len(s));
	if (!base) {
		b->err = ENOMEM;
		return 0;
	}
	char *d = cp_demangle(base);
	free(base);
	if (!d)
		return 0;
	uint32_t k = cp_pb_str_intern(b, d);
	free(d);
	return k;
}

/* The string index of the readable form of symbol (or linkage name) s:
 * without its version, demangled if it is a C++ or Rust name. */
static uint32_t str_readable(struct builder *b, const char *s)
{
	char *r = cp_symbol_readable(s);
	if (!r) {
		b->err = ENOMEM;
		return 0;
	}
	uint32_t k = cp_pb_str_intern(b, r);
	free(r);
	return k;
}

/* Gives Location l, of segment g, Lines from its symbol alone (the name
 * `sym` from the symbol table, or NULL) as before DWARF: one Line, no
 * source file. */
static void lines_from_symbol(struct builder *b, struct location *l,
			      const struct cp_segment *g, const char *sym)
{
	uint32_t fn;
	if (sym) {
		fn = cp_pb_function_id(b, str_readable(b, sym), str_unversioned(b, sym), 0, 0);
	} else if (g) {
		/* Unique per address: no need to look it up. */
		const char *base = strrchr(g->obj->path, '/');
		char *s = NULL;
		if (asprintf(&s, "%s+0x%llx", base ? base + 1 : g->obj->path,
			     (unsigned long long)(l->addr - g->start + g->file_offset)) < 0)
			s = NULL;
		fn = s ? cp_pb_function_unique(b, s) : 0;
		free(s);
	} else {
		char s[24];
		snprintf(s, sizeof s, "0x%llx", (unsigned long long)l->addr);
		fn = cp_pb_function_unique(b, s);
	}
	cp_pb_line_add(b, l, fn, 0);
}

/* Gives Location l one Line per level of its inline chain c, innermost
 * first, each named as `addr2line -C -f -i` names it.  The outermost level
 * is the function the symbol table names `sym`: its system name is that
 * symbol (a clone's, "f.part.0", or a cold part's); every other level's
 * is its linkage name, or its name in C. */
static void lines_from_chain(struct builder *b, struct location *l,
			     const struct cp_lines_chain *c, const char *sym)
{
	for (uint32_t k = 0; k < c->n && !b->err; k++) {
		const struct cp_lines_frame *f = &c->frames[k];
		uint32_t name, system;
		int outermost = k + 1 == c->n;
		if (!f->name || (!f->name[0] && !f->linkage)) {
			/* No function DIE (assembly): the symbol names it. */
			if (!sym) {
				char s[24];
				snprintf(s, sizeof s, "0x%llx", (unsigned long long)l->addr);
				name = system = cp_pb_str_intern(b, s);
			} else {
				name = str_readable(b, sym);
				system = str_unversioned(b, sym);
			}
		} else if (outermost && !f->linkage && sym && (name = str_demangled(b, sym)) != 0) {
			/* A C++ function of internal linkage (static, in an
			 * anonymous namespace) has no linkage name: addr2line
			 * names it by its symbol, which starts where it does,
			 * "(anonymous namespace)::Hasher::run(unsigned long)". */
			system = str_unversioned(b, sym);
		} else {
			/* As addr2line -C names it: by its linkage name,
			 * demangled (qualified, with C++'s parameters), also
			 * one that does not demangle (a C function's asm
			 * label, libc's "__GI___libc_write"); without one, by
			 * its plain name ("step", a method of an anonymous
			 * namespace's class inlined). */
			name = f->linkage ? str_readable(b, f->linkage) : cp_pb_str_intern(b, f->name);
			system = outermost && sym ? str_unversioned(b, sym) :
				 f->linkage ? cp_pb_str_intern(b, f->linkage) : name;
		}
		cp_pb_line_add(b, l, cp_pb_function_id(b, name, system, cp_pb_str_intern(b, f->file), f->start_line),
			 f->line);
	}
}

/* What cp_pb_symbolize() asks the line reader, and for which Location. */
struct lines_job {
	struct cp_lines_object *objs; /* every part's objects, each file once */
	size_t nobj;
	size_t **objidx;              /* per part, the index of each of its objects in objs */
	struct cp_lines_query *q;     /* one per Location in a file */
	uint32_t *qloc;               /* q[k]'s Location */
	size_t nq;
	const char **symname;         /* per Location, its symbol's name or NULL */
};

/* Lists the objects of all parts in job->objs, each file once however
 * many parts (processes) had it.  Returns 0 or -1 (out of memory). */
static int list_objects(struct builder *b, struct lines_job *job)
{
	for (size_t p = 0; p < b->nparts; p++) {
		const struct cp_symbols *sy = b->parts[p].p->syms;
		if (!(job->objidx[p] = malloc((sy->nobjs ? sy->nobjs : 1) * sizeof *job->objidx[p])))
			return -1;
		for (size_t i = 0; i < sy->nobjs; i++) {
			size_t k = 0;
			while (k < job->nobj && (strcmp(job->objs[k].path, sy->objs[i].path) ||
						 strcmp(job->objs[k].build_id, sy->objs[i].build_id)))
				k++;
			if (k == job->nobj)
				job->objs[job->nobj++] = (struct cp_lines_object){ sy->objs[i].path, sy->objs[i].build_id,
										   sy->objs[i].file };
			job->objidx[p][i] = k;
		}
	}
	return 0;
}

/* Names every Location in an object by its symbol, and asks for the lines
 * of those in files. */
static void make_queries(struct builder *b, struct lines_job *job)
{
	for (size_t i = 0; i < b->nlocs; i++) {
		const struct location *l = &b->locs[i];
		if (!l->seg || l->nlines)
			continue;
		const struct cp_symbols *sy = b->parts[l->part].p->syms;
		const struct cp_object *o = sy->segs[l->seg - 1].obj;
		uintptr_t start = 0;
		job->symname[i] = cp_symbols_name_for(sy, l->addr, &start);
		/* Only objects that are files ("[vdso]" is not). */
		if (o->path[0] != '/' || !cp_pprof_lines)
			continue;
		job->q[job->nq] = (struct cp_lines_query){ job->objidx[l->part][o - sy->objs], l->addr - o->bias,
							   job->symname[i] ? start - o->bias : 0 };
		job->qloc[job->nq++] = (uint32_t)i;
	}
}

/* Gives the Locations the line reader found lines for those lines, and
 * their Mappings the flags that say so.  Returns how many it had. */
static size_t lines_from_result(struct builder *b, const struct lines_job *job, const struct cp_lines_result *res)
{
	size_t with = 0;
	for (size_t k = 0; k < job->nq; k++) {
		struct location *l = &b->locs[job->qloc[k]];
		const struct cp_lines_chain *c = &res->chains[k];
		if (!c->n)
			continue;
		lines_from_chain(b, l, c, job->symname[job->qloc[k]]);
		with++;
		struct mapflags *m = &b->parts[l->part].mapflags[l->seg - 1];
		for (uint32_t j = 0; j < c->n; j++) {
			m->filenames |= c->frames[j].file[0] != '\0';
			m->line_numbers |= c->frames[j].line != 0;
		}
		m->inline_frames |= res->has_dwarf[job->q[k].object];
	}
	return with;
}

/* The comments that say how many addresses have lines, and which objects
 * had none and why (`global`: why none had any). */
static void lines_comments(struct builder *b, const struct lines_job *job, const struct cp_lines_result *res,
			   size_t with, const char *global)
{
	if (job->nq) {
		cp_pb_add_comment(b, "lines=%zu of %zu addresses in files", with, job->nq);
		if (global[0])
			cp_pb_add_comment(b, "lines_missing=every object: %s", global);
	}
	size_t named = 0, more = 0;
	for (size_t i = 0; !global[0] && i < res->nobjs; i++) {
		if (!res->why[i])
			continue;
		if (named++ < MAX_LINES_COMMENTS)
			cp_pb_add_comment(b, "lines_missing=%s: %s", job->objs[i].path, res->why[i]);
		else
			more++;
	}
	if (more)
		cp_pb_add_comment(b, "lines_missing_more=%zu objects", more);
}

/* Symbolizes every Location made so far: its lines from the DWARF of its
 * object where it has some, else its symbol.  Adds the comments that say
 * which objects had no lines, and why.  The objects of all parts are read
 * in one go, each file once however many parts (processes) had it. */
void cp_pb_symbolize(struct builder *b)
{
	size_t capobj = 0;
	for (size_t p = 0; p < b->nparts; p++)
		capobj += b->parts[p].p->syms->nobjs;
	/* At least 256 of each: blocks of a size that changes with every
	 * profile would settle in the allocator's per-thread caches, and a
	 * program that writes many profiles would see its heap creep. */
	size_t nl = b->nlocs > 256 ? b->nlocs : 256, no = capobj > 256 ? capobj : 256;
	struct lines_job job = {
		.objs = calloc(no, sizeof *job.objs),
		.objidx = calloc(b->nparts, sizeof *job.objidx),
		.q = malloc(nl * sizeof *job.q),
		.qloc = malloc(nl * sizeof *job.qloc),
		.symname = calloc(nl, sizeof *job.symname),
	};
	struct cp_lines_result res;
	char global[256] = "";
	if (!job.q || !job.qloc || !job.symname || !job.objs || !job.objidx || list_objects(b, &job) < 0) {
		b->err = ENOMEM;
		goto out;
	}
	make_queries(b, &job);
	if (cp_lines_resolve(job.objs, job.nobj, job.q, job.nq, LINES_TIMEOUT_MS, &res, global, sizeof global) != 0) {
		b->err = ENOMEM;
		goto out;
	}
	size_t with = lines_from_result(b, &job, &res);
	for (size_t i = 0; i < b->nlocs; i++) {
		struct location *l = &b->locs[i];
		if (!l->nlines)
			lines_from_symbol(b, l, l->seg ? &b->parts[l->part].p->syms->segs[l->seg - 1] : NULL,
					  job.symname[i]);
	}
	lines_comments(b, &job, &res, with, global);
	cp_lines_result_free(&res);
out:
	for (size_t p = 0; job.objidx && p < b->nparts; p++)
		free(job.objidx[p]);
	free(job.objidx);
	free(job.q);
	free(job.qloc);
	free(job.symname);
	free(job.objs);
}

