/*
 * symbolize.c -- `cpuprof symbolize IN -o OUT`: the names and lines that
 * the machine a profile was recorded on could not give (a stripped
 * program, debug files not installed there), filled in here.  A profile
 * keeps, in each Mapping, its object's path, GNU build ID, and where its
 * executable segment was loaded (memory_start = bias + p_vaddr,
 * file_offset = p_offset: pprof_write.c); so an address of a Location
 * gives the object's link-time address, which the symbol tables and DWARF
 * of the object, or of its debug file, name.  The files are looked for by
 * the mapping's path, by build ID under /usr/lib/debug or under each
 * --debug-dir (DIR/.build-id/NN/REST.debug, or DIR/NAME, DIR/NAME.debug
 * with the object's file name, each only with the mapping's build ID), and
 * on the debuginfod servers of $DEBUGINFOD_URLS (debuginfod.h).
 *
 * A Location needs a name when it is in a mapping of a file and none of
 * its Lines has a source file or line: no Line, or the writer's stand-in
 * for an unknown address ("prog+0x1206"), or a symbol alone.  It gets its
 * inline chain, named as the writer names it (pprof_names.c), where the
 * files say more than it had; else it keeps what it had.
 *
 * The profile is rewritten field by field, not rebuilt: the writer
 * (pprof_write.c) makes a profile from sampled stacks and the objects of
 * a live process, and would say its own comments, labels and pseudo
 * frames, so everything that is not a name is copied as it was, byte for
 * byte (samples, values, labels, comments, the other Locations), the
 * Locations given names have their Lines replaced, their Mappings say
 * has_functions and has_filenames, has_line_numbers, has_inline_frames
 * where they now have them (appended: the last value of a field wins in
 * protobuf), and the new Functions and strings follow the old ones, so
 * that every index stays what it was.  The result is read back with the
 * reader before it is written.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/elf.h"
#include "base/outfile.h"
#include "commands.h"
#include "flags.h"
#include "pprof_read.h"
#include "profile/profile_proto.h"
#include "profile/protobuf.h"
#include "symbolize/debuginfod.h"
#include "symbolize/debuglink.h"
#include "symbolize/demangle.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

enum { S_OUT, S_DEBUG_DIR, S_NFLAGS };

static const struct flag symbolize_flags[S_NFLAGS] = {
	[S_OUT] = { "-o", 0, FLAG_TEXT, "OUT", .want = "a file name", .help = "the profile to write (required)" },
	[S_DEBUG_DIR] = { "--debug-dir", 0, FLAG_TEXT, "DIR", .many = true, .want = "a directory",
			  .help = "where debug files or unstripped objects are: DIR/.build-id/NN/REST.debug, "
				  "DIR/NAME or DIR/NAME.debug (NAME the object's file name), taken where "
				  "their build ID is the mapping's; may be given more than once" },
};

static const struct flags symbolize_cmd = {
	.cmd = "symbolize",
	.flag = symbolize_flags,
	.n = S_NFLAGS,
	.synopsis = "  cpuprof symbolize [--debug-dir DIR...] IN -o OUT\n"
		    "      names and source lines for the addresses of IN that had none\n"
		    "      where it was recorded, from the objects and debug files here\n"
		    "      (by path or build ID) or a debuginfod server ($DEBUGINFOD_URLS).\n",
	.notes = NULL,
};

void symbolize_usage(FILE *f)
{
	flags_usage(&symbolize_cmd, f);
}

/* ---- Finding the files --------------------------------------------------- */

/* 1 if the ELF file at path has the build ID bid. */
static int has_build_id(const char *path, const char *bid)
{
	struct cp_elf e;
	if (cp_elf_open(&e, path) != 0)
		return 0;
	int same = !strcmp(e.build_id, bid);
	cp_elf_close(&e);
	return same;
}

/* Looks for the debug file (or unstripped copy) of the object path/bid in
 * the --debug-dir directories, and gives the first found to the readers. */
static void from_debug_dirs(const char *const *dirs, size_t ndirs, const char *path, const char *bid)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strlen(bid) < 3)
		return;
	for (size_t d = 0; d < ndirs; d++) {
		char p[4096];
		for (int k = 0; k < 3; k++) {
			if (k == 0) {
				if (!cp_debug_build_id_path(dirs[d], bid, p, sizeof p))
					continue;
			} else {
				snprintf(p, sizeof p, "%s/%s%s", dirs[d], base, k == 2 ? ".debug" : "");
			}
			if (access(p, R_OK) == 0 && has_build_id(p, bid)) {
				cp_debuginfod_use(bid, p);
				return;
			}
		}
	}
}

/* The load bias of mapping m, from its executable segment.  In the
 * object's own file, the segment holding file_offset (the Mapping may
 * begin at the page below the segment: older cpuprof, perf's converters
 * and Go's runtime/pprof write page-aligned Mappings, and lld and mold put
 * the text at p_vaddr = p_offset + 0x1000): memory_start maps file_offset,
 * so the bias is memory_start - file_offset + p_offset - p_vaddr.  A debug
 * file's program headers keep the addresses but not the offsets: there,
 * its only executable segment, memory_start - p_vaddr, right only when
 * the Mapping begins at the segment.  0 with *bias, or -1. */
static int mapping_bias(const struct profile_mapping *m, uintptr_t *bias)
{
	const char *files[2] = { m->filename, m->build_id[0] ? cp_debuginfod_path(m->build_id) : NULL };
	for (int i = 0; i < 2; i++) {
		struct cp_elf e;
		if (!files[i] || cp_elf_open(&e, files[i]) != 0)
			continue;
		int ok = !m->build_id[0] || !strcmp(e.build_id, m->build_id);
		const struct cp_elf_seg *at = NULL, *only = NULL;
		size_t nexec = 0;
		for (size_t k = 0; ok && k < e.nseg; k++) {
			const struct cp_elf_seg *s = &e.seg[k];
			if (s->type != PT_LOAD || !(s->flags & PF_X))
				continue;
			nexec++;
			only = s;
			/* The segment's first page to its end. */
			uint64_t page = s->align > 1 && s->align <= 0x10000 && !(s->align & (s->align - 1)) ? s->align : 0x1000;
			if (i == 0 && !at && s->filesz > 0 && m->file_offset >= (s->offset & ~(page - 1)) &&
			    m->file_offset < s->offset + s->filesz)
				at = s;
		}
		cp_elf_close(&e);
		if (at) {
			*bias = (uintptr_t)(m->memory_start - m->file_offset + at->offset - at->vaddr);
			return 0;
		}
		if (nexec == 1) {
			*bias = (uintptr_t)(m->memory_start - only->vaddr);
			return 0;
		}
	}
	return -1;
}

/* ---- New Lines, Functions and strings ----------------------------------- */

struct newfn {
	uint64_t id;
	uint64_t name, system, file; /* string indexes */
	int64_t start;
};

struct newline {
	uint64_t fn;
	int64_t line;
};

struct out {
	const struct profile *p;
	char **strs; /* new strings, index p->nstrings + i */
	size_t nstrs, capstrs;
	uint64_t *slots; /* every string's index + 1, by hash (0: empty) */
	size_t nslots;
	struct newfn *fns;
	size_t nfns, capfns;
	uint64_t next_fn;
	struct newline **lines; /* per location, NULL: unchanged */
	uint32_t *nlines;
	unsigned char *mapflags; /* per mapping: 1 functions, 2 files, 4 lines, 8 inline */
	int err;
};

static void *grow(void *a, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return a;
	size_t nc = *cap ? 2 * *cap : 64;
	void *b = realloc(a, nc * size);
	if (b)
		*cap = nc;
	return b;
}

static const char *string_at(const struct out *o, uint64_t k)
{
	return k < o->p->nstrings ? o->p->strings[k] : o->strs[k - o->p->nstrings];
}

static size_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29);
}

/* Puts string index k in o->slots, growing them to keep them half empty.
 * 0 or -1 (out of memory). */
static int slot_put(struct out *o, uint64_t k)
{
	size_t total = o->p->nstrings + o->nstrs;
	if (2 * total >= o->nslots) {
		size_t n = 1024;
		while (n < 4 * total)
			n *= 2;
		uint64_t *sl = calloc(n, sizeof *sl);
		if (!sl)
			return -1;
		free(o->slots);
		o->slots = sl;
		o->nslots = n;
		/* Every string so far, k among them. */
		for (uint64_t j = 0; j < total; j++) {
			size_t i = str_hash(string_at(o, j)) & (n - 1);
			while (sl[i])
				i = (i + 1) & (n - 1);
			sl[i] = j + 1;
		}
		return 0;
	}
	size_t i = str_hash(string_at(o, k)) & (o->nslots - 1);
	while (o->slots[i])
		i = (i + 1) & (o->nslots - 1);
	o->slots[i] = k + 1;
	return 0;
}

/* The string index of s: an old one if the table had it, else a new one. */
static uint64_t intern(struct out *o, const char *s)
{
	if (!o->nslots && slot_put(o, 0) != 0) /* the first call indexes the old table */
		goto nomem;
	for (size_t i = str_hash(s) & (o->nslots - 1); o->slots[i]; i = (i + 1) & (o->nslots - 1))
		if (!strcmp(string_at(o, o->slots[i] - 1), s))
			return o->slots[i] - 1;
	char **a = grow(o->strs, &o->capstrs, o->nstrs, sizeof *a);
	char *c = a ? strdup(s) : NULL;
	if (a)
		o->strs = a;
	if (!c)
		goto nomem;
	o->strs[o->nstrs++] = c;
	uint64_t k = o->p->nstrings + o->nstrs - 1;
	if (slot_put(o, k) != 0)
		goto nomem;
	return k;
nomem:
	o->err = ENOMEM;
	return 0;
}

/* s without its symbol version ("memcpy@GLIBC_2.2.5"). */
static uint64_t intern_unversioned(struct out *o, const char *s)
{
	size_t len = cp_symbol_unversioned_len(s);
	if (!s[len])
		return intern(o, s);
	char *c = strndup(s, len);
	uint64_t k = c ? intern(o, c) : 0;
	free(c);
	return k;
}

/* s demangled, without its version; 0 if it does not demangle. */
static uint64_t intern_demangled(struct out *o, const char *s)
{
	char *base = strndup(s, cp_symbol_unversioned_len(s));
	char *d = base ? cp_demangle(base) : NULL;
	free(base);
	uint64_t k = d ? intern(o, d) : 0;
	free(d);
	return k;
}

/* s as the writer names a function (cp_symbol_readable). */
static uint64_t intern_readable(struct out *o, const char *s)
{
	char *r = cp_symbol_readable(s);
	if (!r) {
		o->err = ENOMEM;
		return 0;
	}
	uint64_t k = intern(o, r);
	free(r);
	return k;
}

/* The id of the Function (name, system, file, start): a new one, or one
 * made before. */
static uint64_t function_id(struct out *o, uint64_t name, uint64_t system, uint64_t file, int64_t start)
{
	for (size_t i = 0; i < o->nfns; i++)
		if (o->fns[i].name == name && o->fns[i].system == system && o->fns[i].file == file &&
		    o->fns[i].start == start)
			return o->fns[i].id;
	struct newfn *a = grow(o->fns, &o->capfns, o->nfns, sizeof *a);
	if (!a) {
		o->err = ENOMEM;
		return 0;
	}
	o->fns = a;
	o->fns[o->nfns] = (struct newfn){ o->next_fn++, name, system, file, start };
	return o->fns[o->nfns++].id;
}

/* Location i's new Lines from chain c and symbol sym (either may be
 * missing), named as pprof_names.c names them. */
static void name_location(struct out *o, size_t i, const struct cp_lines_chain *c, const char *sym,
			  uint64_t addr)
{
	uint32_t n = c && c->n ? c->n : 1;
	struct newline *l = calloc(n, sizeof *l);
	if (!l) {
		o->err = ENOMEM;
		return;
	}
	if (!c || !c->n) {
		l[0].fn = function_id(o, intern_readable(o, sym), intern_unversioned(o, sym), 0, 0);
	} else {
		for (uint32_t k = 0; k < n; k++) {
			const struct cp_lines_frame *f = &c->frames[k];
			int outermost = k + 1 == n;
			uint64_t name, system;
			if (!f->name || (!f->name[0] && !f->linkage)) {
				if (sym) {
					name = intern_readable(o, sym);
					system = intern_unversioned(o, sym);
				} else {
					char s[24];
					snprintf(s, sizeof s, "0x%llx", (unsigned long long)addr);
					name = system = intern(o, s);
				}
			} else if (outermost && !f->linkage && sym && (name = intern_demangled(o, sym)) != 0) {
				system = intern_unversioned(o, sym);
			} else {
				name = f->linkage ? intern_readable(o, f->linkage) : intern(o, f->name);
				system = outermost && sym ? intern_unversioned(o, sym) :
					 f->linkage ? intern(o, f->linkage) : name;
			}
			l[k].fn = function_id(o, name, system, intern(o, f->file), f->start_line);
			l[k].line = f->line;
		}
	}
	o->lines[i] = l;
	o->nlines[i] = n;
}

/* 1 if location l needs names: in a mapping of a file, and no Line says
 * a source file or line. */
static int needs_names(const struct profile_location *l)
{
	if (!l->mapping || l->mapping->filename[0] != '/')
		return 0;
	for (size_t k = 0; k < l->nlines; k++)
		if (l->lines[k].line > 0 || (l->lines[k].function && l->lines[k].function->filename[0]))
			return 0;
	return 1;
}

/* 1 if location l is already named by symbol sym (no lines to add). */
static int same_symbol(const struct profile_location *l, const char *sym)
{
	const struct profile_function *f = l->nlines ? l->lines[l->nlines - 1].function : NULL;
	size_t n = strcspn(sym, "@");
	return f && n && strlen(f->system_name) == n && !strncmp(f->system_name, sym, n);
}

/* ---- Rewriting ------------------------------------------------------------ */

static void put_raw(struct pb_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (nc < b->len + n)
			nc *= 2;
		uint8_t *d = realloc(b->data, nc);
		if (!d) {
			b->err = ENOMEM;
			return;
		}
		b->data = d;
		b->cap = nc;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* A field of an already checked message: its number and its bytes
 * (key included) [start, end), its body [body, end) if length-delimited. */
struct rawfield {
	uint32_t num;
	int wt;
	const uint8_t *start, *body, *end;
};

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned s = 0; s < 64 && *p < end; s += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field of [*p, end) into f; 0, 1 at the end, -1 if malformed. */
static int next(const uint8_t **p, const uint8_t *end, struct rawfield *f)
{
	if (*p >= end)
		return 1;
	uint64_t key, v;
	f->start = *p;
	if (varint(p, end, &key))
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wt = (int)(key & 7);
	switch (f->wt) {
	case 0:
		if (varint(p, end, &v))
			return -1;
		break;
	case 1:
	case 5:
		if ((size_t)(end - *p) < (f->wt == 1 ? 8u : 4u))
			return -1;
		*p += f->wt == 1 ? 8 : 4;
		break;
	case 2:
		if (varint(p, end, &v) || v > (uint64_t)(end - *p))
			return -1;
		f->body = *p;
		*p += v;
		break;
	default:
		return -1;
	}
	f->end = *p;
	return 0;
}

/* The rewritten profile of the protobuf in[0..len) into b. */
static int rewrite(const struct out *o, const uint8_t *in, size_t len, const char *comment, struct pb_buf *b)
{
	const uint8_t *p = in, *end = in + len;
	size_t mi = 0, li = 0;
	struct rawfield f;
	int r;
	while ((r = next(&p, end, &f)) == 0) {
		if (f.num == PROFILE_MAPPING && f.wt == 2 && mi < o->p->nmappings && o->mapflags[mi++]) {
			unsigned fl = o->mapflags[mi - 1];
			size_t m = cp_pb_start(b);
			put_raw(b, f.body, (size_t)(f.end - f.body));
			cp_pb_bool(b, MAPPING_HAS_FUNCTIONS, 1);
			if (fl & 2)
				cp_pb_bool(b, MAPPING_HAS_FILENAMES, 1);
			if (fl & 4)
				cp_pb_bool(b, MAPPING_HAS_LINE_NUMBERS, 1);
			if (fl & 8)
				cp_pb_bool(b, MAPPING_HAS_INLINE_FRAMES, 1);
			cp_pb_end(b, PROFILE_MAPPING, m);
		} else if (f.num == PROFILE_LOCATION && f.wt == 2 && li < o->p->nlocations && o->lines[li++]) {
			const struct newline *nl = o->lines[li - 1];
			size_t m = cp_pb_start(b);
			const uint8_t *q = f.body;
			struct rawfield g;
			int r2;
			while ((r2 = next(&q, f.end, &g)) == 0)
				if (g.num != LOCATION_LINE)
					put_raw(b, g.start, (size_t)(g.end - g.start));
			if (r2 < 0)
				return -1;
			for (uint32_t k = 0; k < o->nlines[li - 1]; k++) {
				size_t ln = cp_pb_start(b);
				cp_pb_uint64_opt(b, LINE_FUNCTION_ID, nl[k].fn);
				cp_pb_int64_opt(b, LINE_LINE, nl[k].line);
				cp_pb_end(b, LOCATION_LINE, ln);
			}
			cp_pb_end(b, PROFILE_LOCATION, m);
		} else {
			put_raw(b, f.start, (size_t)(f.end - f.start));
		}
	}
	if (r < 0)
		return -1;
	for (size_t i = 0; i < o->nfns; i++) {
		size_t m = cp_pb_start(b);
		cp_pb_uint64(b, FUNCTION_ID, o->fns[i].id);
		cp_pb_int64_opt(b, FUNCTION_NAME, (int64_t)o->fns[i].name);
		cp_pb_int64_opt(b, FUNCTION_SYSTEM_NAME, (int64_t)o->fns[i].system);
		cp_pb_int64_opt(b, FUNCTION_FILENAME, (int64_t)o->fns[i].file);
		cp_pb_int64_opt(b, FUNCTION_START_LINE, o->fns[i].start);
		cp_pb_end(b, PROFILE_FUNCTION, m);
	}
	for (size_t i = 0; i < o->nstrs; i++)
		cp_pb_string(b, PROFILE_STRING_TABLE, o->strs[i]);
	cp_pb_string(b, PROFILE_STRING_TABLE, comment);
	cp_pb_int64(b, PROFILE_COMMENT, (int64_t)(o->p->nstrings + o->nstrs));
	return b->err ? -1 : 0;
}

/* Writes data[0..n) gzipped to path, whole (base/outfile.h: a temporary
 * file beside it renamed over it, or into it if it is not a regular
 * file). */
static int write_gz(const char *path, const void *data, size_t n, char *why, size_t len)
{
	struct cp_outfile of;
	if (cp_outfile_open(&of, path, why, len) < 0)
		return -1;
	gzFile g = gzdopen(of.fd, "wb");
	if (!g) {
		snprintf(why, len, "%s: %s", cp_outfile_name(&of), strerror(ENOMEM));
		cp_outfile_abandon(&of);
		return -1;
	}
	of.fd = -1; /* gzclose closes it */
	const uint8_t *p = data;
	int ok = 1;
	while (n && ok) {
		unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
		ok = gzwrite(g, p, chunk) == (int)chunk;
		p += chunk;
		n -= chunk;
	}
	errno = 0;
	if (!(gzclose(g) == Z_OK && ok)) {
		snprintf(why, len, "%s: %s", cp_outfile_name(&of), strerror(errno ? errno : EIO));
		cp_outfile_abandon(&of);
		return -1;
	}
	return cp_outfile_commit(&of, why, len) < 0 ? -1 : 0;
}

/* ---- The command ------------------------------------------------------------ */

static void not_fetched(void *arg, size_t i, const char *why)
{
	const struct cp_lines_object *objs = arg;
	fprintf(stderr, "cpuprof symbolize: debuginfod: %s: %s\n", objs[i].path, why);
}

/* What one run works on, beside the profile and its new names (o). */
struct job {
	struct cp_lines_object *objs; /* the objects to read, each once */
	size_t nobjs;
	size_t *objof;                /* per mapping, its index in objs */
	struct cp_object_desc *desc;  /* the mappings placed, for the symbol reader */
	struct cp_segment_desc *segs;
	size_t nplaced;
	struct cp_lines_query *q;     /* one per Location asked about */
	size_t *qloc;                 /* q[k]'s Location */
	size_t nq;
	const char **symname;         /* per Location, its symbol, or NULL */
	size_t nwant;                 /* Locations that needed names */
	size_t asked, fetched;        /* debug files asked of debuginfod, and come */
	struct cp_symbols *syms;
};

static int job_alloc(struct job *j, struct out *o, const struct profile *p)
{
	size_t nm = p->nmappings + 1, nl = p->nlocations + 1;
	memset(j, 0, sizeof *j);
	o->p = p;
	o->next_fn = 1;
	for (size_t i = 0; i < p->nfunctions; i++)
		if (p->functions[i].id >= o->next_fn)
			o->next_fn = p->functions[i].id + 1;
	return (o->lines = calloc(nl, sizeof *o->lines)) && (o->nlines = calloc(nl, sizeof *o->nlines)) &&
			       (o->mapflags = calloc(nm, 1)) && (j->objs = calloc(nm, sizeof *j->objs)) &&
			       (j->objof = calloc(nm, sizeof *j->objof)) && (j->desc = calloc(nm, sizeof *j->desc)) &&
			       (j->segs = calloc(nm, sizeof *j->segs)) && (j->q = calloc(nl, sizeof *j->q)) &&
			       (j->qloc = calloc(nl, sizeof *j->qloc)) && (j->symname = calloc(nl, sizeof *j->symname)) ?
		       0 : -1;
}

static void job_free(struct job *j)
{
	cp_symbols_free(j->syms);
	free(j->objs);
	free(j->objof);
	free(j->desc);
	free(j->segs);
	free(j->q);
	free(j->qloc);
	free(j->symname);
}

/* The objects of the mappings that have Locations to name (want[m] set),
 * with their files found: in the debug directories, else fetched. */
static void find_objects(struct job *j, const struct profile *p, const unsigned char *want,
			 const struct flag_value *dirs)
{
	for (size_t m = 0; m < p->nmappings; m++) {
		const struct profile_mapping *pm = &p->mappings[m];
		if (!want[m])
			continue;
		if (pm->build_id[0] && !cp_debuginfod_path(pm->build_id))
			from_debug_dirs(dirs->all, dirs->nall, pm->filename, pm->build_id);
		size_t k = 0;
		while (k < j->nobjs && (strcmp(j->objs[k].path, pm->filename) || strcmp(j->objs[k].build_id, pm->build_id)))
			k++;
		if (k == j->nobjs)
			j->objs[j->nobjs++] = (struct cp_lines_object){ pm->filename, pm->build_id, NULL };
		j->objof[m] = k;
	}
	j->asked = cp_debuginfod_fetch_missing(j->objs, j->nobjs, &j->fetched, not_fetched, j->objs);
}

/* Places the mappings want[m] by their files, for the symbol reader;
 * says which could not be.  0 or -1 (out of memory). */
static int place_objects(struct job *j, const struct profile *p, const unsigned char *want)
{
	for (size_t m = 0; m < p->nmappings; m++) {
		const struct profile_mapping *pm = &p->mappings[m];
		uintptr_t bias;
		if (!want[m])
			continue;
		if (mapping_bias(pm, &bias) != 0) {
			fprintf(stderr, "cpuprof symbolize: %s%s%s: not found here (neither the file nor a debug file "
				"of its build ID)\n", pm->filename, pm->build_id[0] ? " " : "", pm->build_id);
			continue;
		}
		j->segs[j->nplaced] = (struct cp_segment_desc){ (uintptr_t)pm->memory_start,
								 (uintptr_t)pm->memory_limit, pm->file_offset };
		j->desc[j->nplaced] = (struct cp_object_desc){
			.path = pm->filename, .build_id = pm->build_id, .bias = bias, .segs = &j->segs[j->nplaced], .nsegs = 1
		};
		j->nplaced++;
	}
	return (j->syms = cp_symbols_from_objects(j->desc, j->nplaced, NULL)) ? 0 : -1;
}

/* Each Location to name: its symbol, and its query for lines. */
static void make_queries(struct job *j, const struct profile *p)
{
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct profile_location *l = &p->locations[i];
		if (!needs_names(l))
			continue;
		const struct cp_segment *g = cp_symbols_segment_for(j->syms, (uintptr_t)l->address);
		if (!g)
			continue;
		uintptr_t start = 0;
		j->symname[i] = cp_symbols_name_for(j->syms, (uintptr_t)l->address, &start);
		j->q[j->nq] = (struct cp_lines_query){ j->objof[l->mapping - p->mappings], l->address - g->obj->bias,
							j->symname[i] ? start - g->obj->bias : 0 };
		j->qloc[j->nq++] = i;
	}
}

/* Names the Locations the answers say more of, and flags their Mappings.
 * Returns how many were named. */
static size_t name_locations(struct out *o, const struct job *j, const struct cp_lines_result *res)
{
	const struct profile *p = o->p;
	size_t named = 0;
	for (size_t k = 0; k < j->nq && !o->err; k++) {
		size_t i = j->qloc[k];
		const struct cp_lines_chain *c = &res->chains[k];
		if (!c->n && (!j->symname[i] || same_symbol(&p->locations[i], j->symname[i])))
			continue;
		name_location(o, i, c, j->symname[i], p->locations[i].address);
		named++;
		size_t m = (size_t)(p->locations[i].mapping - p->mappings);
		o->mapflags[m] |= 1;
		for (uint32_t f = 0; f < c->n; f++) {
			o->mapflags[m] |= c->frames[f].file[0] ? 2 : 0;
			o->mapflags[m] |= c->frames[f].line ? 4 : 0;
		}
		if (c->n && res->has_dwarf[j->q[k].object])
			o->mapflags[m] |= 8;
	}
	for (size_t i = 0; i < res->nobjs; i++)
		if (res->why[i])
			fprintf(stderr, "cpuprof symbolize: %s: %s\n", j->objs[i].path, res->why[i]);
	return named;
}

/* Names what IN lacks and writes OUT.  0 or -1 (said). */
static int symbolize(const char *in, const char *outpath, const struct flag_value *dirs)
{
	uint8_t *plain = NULL;
	size_t plen = 0;
	struct profile *p = NULL, *check = NULL;
	char err[512] = "", global[256] = "", comment[160];
	struct out o = { 0 };
	struct job j = { 0 };
	struct cp_lines_result res;
	int rc = -1, have_res = 0;
	struct pb_buf b;
	cp_pb_init(&b);

	if (profile_read_protobuf(in, &plain, &plen, err, sizeof err) != 0 ||
	    profile_parse(plain, plen, &p, err, sizeof err) != 0) {
		fprintf(stderr, "cpuprof symbolize: %s: %s\n", in, err);
		goto out;
	}
	if (job_alloc(&j, &o, p) != 0)
		goto nomem;
	/* The mappings with Locations to name (marked in mapflags, which
	 * then starts again from nothing). */
	for (size_t i = 0; i < p->nlocations; i++)
		if (needs_names(&p->locations[i])) {
			j.nwant++;
			o.mapflags[p->locations[i].mapping - p->mappings] = 1;
		}
	find_objects(&j, p, o.mapflags, dirs);
	if (place_objects(&j, p, o.mapflags) != 0)
		goto nomem;
	memset(o.mapflags, 0, p->nmappings);
	make_queries(&j, p);
	if (cp_lines_resolve(j.objs, j.nobjs, j.q, j.nq, 30000, &res, global, sizeof global) != 0)
		goto nomem;
	have_res = 1;
	if (global[0])
		fprintf(stderr, "cpuprof symbolize: no lines: %s\n", global);
	size_t named = name_locations(&o, &j, &res);
	if (o.err)
		goto nomem;
	snprintf(comment, sizeof comment, "symbolized=%zu of %zu locations without names or lines", named, j.nwant);
	if (rewrite(&o, plain, plen, comment, &b) != 0 || profile_parse(b.data, b.len, &check, err, sizeof err) != 0) {
		fprintf(stderr, "cpuprof symbolize: %s: cannot rewrite it%s%s\n", in, err[0] ? ": " : "", err);
		goto out;
	}
	profile_free(check);
	if (write_gz(outpath, b.data, b.len, err, sizeof err) != 0) {
		fprintf(stderr, "cpuprof symbolize: cannot write %s: %s\n", outpath, err);
		goto out;
	}
	fprintf(stderr, "cpuprof symbolize: wrote %s: %zu of %zu locations without names or lines named\n", outpath,
		named, j.nwant);
	if (j.asked)
		fprintf(stderr, "cpuprof symbolize: debuginfod: %zu of %zu debug files fetched\n", j.fetched, j.asked);
	rc = 0;
	goto out;
nomem:
	fprintf(stderr, "cpuprof symbolize: out of memory\n");
out:
	if (have_res)
		cp_lines_result_free(&res);
	job_free(&j);
	for (size_t i = 0; p && o.lines && i < p->nlocations; i++)
		free(o.lines[i]);
	for (size_t i = 0; i < o.nstrs; i++)
		free(o.strs[i]);
	free(o.strs);
	free(o.slots);
	free(o.fns);
	free(o.lines);
	free(o.nlines);
	free(o.mapflags);
	cp_pb_free(&b);
	profile_free(p);
	free(plain);
	return rc;
}

int cmd_symbolize(int argc, char **argv)
{
	struct flags_result fr;
	int rc = flags_parse(&symbolize_cmd, argc, argv, &fr);
	if (rc == 0 && (fr.noperands != 1 || !fr.v[S_OUT].set)) {
		flags_refuse(&symbolize_cmd, "%s", fr.noperands != 1 ? "one profile IN, please" : "-o OUT is required");
		rc = -1;
	}
	if (rc == 0)
		rc = symbolize(fr.operands[0], fr.v[S_OUT].text, &fr.v[S_DEBUG_DIR]);
	flags_free(&symbolize_cmd, &fr);
	return rc == FLAGS_HELP ? 0 : rc == 0 ? 0 : EXIT_USAGE;
}
