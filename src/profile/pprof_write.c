/*
 * pprof_write.c -- writes the aggregated profile (stacktab.h) as a gzipped
 * profile.proto file (pprof_write.h).  A builder in the manner of Go's
 * runtime/pprof: a string table with "" at index 0, one Location per
 * distinct address (return addresses moved back into the call
 * instruction), one Mapping per executable segment that some Location
 * falls in.  Samples are encoded as the stacks are walked, which only
 * numbers the Locations; then every Location is symbolized at once: its
 * function from the ELF symbols (symbols.h), and, where the object has
 * DWARF, its source file and line and the functions inlined there, one
 * Line each, innermost first (lines.h, in a child process).  One Function
 * per distinct (name, system name, source file, start line); names are
 * addr2line -C -f -i's, without symbol versions and demangled (C++, Rust:
 * symbolize/demangle.h), the mangled symbol kept as system_name.  The tables follow the samples, the string table
 * last, so the profile reads without the binaries.  A profile of off-CPU
 * time has two more values per Sample (off_cpu and wall), and writes each
 * off-CPU stack as a Sample of its own, with no CPU and no sample count:
 * that time was measured at every context switch, not sampled.  Runs outside signal
 * context and touches nothing a sampling signal handler uses.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/array.h"
#include "base/error.h"
#include "base/outfile.h"
#include "symbolize/lines.h"
#include "pprof_build.h"
#include "pprof_write.h"
#include "profile_proto.h"
#include "protobuf.h"
#include "symbolize/demangle.h"
#include "symbolize/jit.h"
#include "symbolize/symbols.h"
#include "base/hash.h"


static uint32_t idmap_get(const struct idmap *m, uint64_t key)
{
	if (m->cap == 0)
		return 0;
	for (size_t i = cp_hash64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
		if (m->vals[i] == 0 || m->keys[i] == key)
			return m->vals[i];
}

/* Inserts key (not present) with val != 0.  Returns 0 or -ENOMEM. */
static int idmap_put(struct idmap *m, uint64_t key, uint32_t val)
{
	if ((m->len + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		uint64_t *keys = malloc(cap * sizeof *keys);
		uint32_t *vals = calloc(cap, sizeof *vals);
		if (!keys || !vals) {
			free(keys);
			free(vals);
			return -ENOMEM;
		}
		for (size_t j = 0; j < m->cap; j++) {
			if (m->vals[j] == 0)
				continue;
			size_t i = cp_hash64(m->keys[j]) & (cap - 1);
			while (vals[i] != 0)
				i = (i + 1) & (cap - 1);
			keys[i] = m->keys[j];
			vals[i] = m->vals[j];
		}
		free(m->keys);
		free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->cap = cap;
	}
	size_t i = cp_hash64(key) & (m->cap - 1);
	while (m->vals[i] != 0)
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
	m->len++;
	return 0;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
}



static size_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 32);
}

/* Makes the open-addressing index *index, of *n slots, twice as large
 * (1024 slots at first) if `used` + 1 entries would fill it past half,
 * placing each entry v again by hash(b, v).  Returns 0, or -1 with b->err
 * set. */
static int index_grow(struct builder *b, uint32_t **index, size_t *n, size_t used,
		      size_t (*hash)(const struct builder *, uint32_t))
{
	if ((used + 1) * 2 <= *n)
		return 0;
	size_t m = *n ? *n * 2 : 1024;
	uint32_t *grown = calloc(m, sizeof *grown);
	if (!grown) {
		b->err = ENOMEM;
		return -1;
	}
	for (size_t k = 0; k < *n; k++) {
		uint32_t v = (*index)[k];
		if (!v)
			continue;
		size_t i = hash(b, v) & (m - 1);
		while (grown[i])
			i = (i + 1) & (m - 1);
		grown[i] = v;
	}
	free(*index);
	*index = grown;
	*n = m;
	return 0;
}

/* The hash of string index entry v (1 + a string's index). */
static size_t str_slot_hash(const struct builder *b, uint32_t v)
{
	return hash_str(b->strs[v - 1]);
}

/* Appends a copy of s to the string table without indexing it (for a
 * string known to be new that is never looked up again) and returns its
 * index.  On failure sets b->err and returns 0. */
static uint32_t str_append(struct builder *b, const char *s)
{
	char *copy = strdup(s);
	if (!copy || cp_array_grow((void **)&b->strs, &b->capstrs, b->nstrs + 1,
			  sizeof *b->strs, 256)) {
		free(copy);
		b->err = ENOMEM;
		return 0;
	}
	b->strs[b->nstrs] = copy;
	return (uint32_t)b->nstrs++;
}

/* Index of s in the string table, adding a copy if new.  On failure sets
 * b->err and returns 0. */
uint32_t cp_pb_str_intern(struct builder *b, const char *s)
{
	if (!*s || index_grow(b, &b->strindex, &b->nstrindex, b->nindexed, str_slot_hash) < 0)
		return 0;
	size_t mask = b->nstrindex - 1, i = hash_str(s) & mask;
	for (; b->strindex[i]; i = (i + 1) & mask)
		if (strcmp(b->strs[b->strindex[i] - 1], s) == 0)
			return b->strindex[i] - 1;
	uint32_t k = str_append(b, s);
	if (k) {
		b->strindex[i] = k + 1;
		b->nindexed++;
	}
	return k;
}

static size_t hash_fn(const struct function *f)
{
	uint64_t k = (uint64_t)f->name * 0x9e3779b97f4a7c15ull ^ f->system_name;
	k = k * 0xff51afd7ed558ccdull ^ f->filename;
	return cp_hash64(k * 0xc4ceb9fe1a85ec53ull ^ f->start_line);
}

/* The hash of function index entry v (a function id). */
static size_t fn_slot_hash(const struct builder *b, uint32_t v)
{
	return hash_fn(&b->fns[v - 1]);
}

/* The id of the Function with these fields (string indexes), adding it
 * if new; 0 with b->err set on failure. */
uint32_t cp_pb_function_id(struct builder *b, uint32_t name, uint32_t system_name,
			    uint32_t filename, uint32_t start_line)
{
	if (b->err)
		return 0;
	struct function f = { name, system_name, filename, start_line };
	if (index_grow(b, &b->fnindex, &b->nfnindex, b->nfns, fn_slot_hash) < 0)
		return 0;
	size_t mask = b->nfnindex - 1, i = hash_fn(&f) & mask;
	for (; b->fnindex[i]; i = (i + 1) & mask)
		if (!memcmp(&b->fns[b->fnindex[i] - 1], &f, sizeof f))
			return b->fnindex[i];
	if (cp_array_grow((void **)&b->fns, &b->capfns, b->nfns + 1, sizeof *b->fns, 256)) {
		b->err = ENOMEM;
		return 0;
	}
	b->fns[b->nfns] = f;
	b->fnindex[i] = (uint32_t)++b->nfns;
	return b->fnindex[i];
}

/* A Function without a source file named `name`, a string known to be
 * new (it names one address or pseudo-frame). */
uint32_t cp_pb_function_unique(struct builder *b, const char *name)
{
	uint32_t s = str_append(b, name);
	return s ? cp_pb_function_id(b, s, s, 0, 0) : 0;
}

/* Appends a Line to Location l. */
void cp_pb_line_add(struct builder *b, struct location *l, uint32_t function, uint32_t line)
{
	if (!function || cp_array_grow((void **)&b->lines, &b->caplines, b->nlines + 1,
				       sizeof *b->lines, 256)) {
		b->err = ENOMEM;
		return;
	}
	if (l->nlines == 0)
		l->line0 = (uint32_t)b->nlines;
	b->lines[b->nlines++] = (struct line){ function, line };
	l->nlines++;
}

/* A new Location, its Lines still to come; returns its id, or 0 with
 * b->err set. */
static uint32_t location_new(struct builder *b, uint64_t addr, uint32_t mapping,
			     uint32_t seg)
{
	if (b->err || cp_array_grow((void **)&b->locs, &b->caplocs, b->nlocs + 1,
				    sizeof *b->locs, 256)) {
		b->err = ENOMEM;
		return 0;
	}
	b->locs[b->nlocs] = (struct location){ addr, mapping, (uint32_t)b->cur, seg, 0, 0 };
	return (uint32_t)++b->nlocs;
}

/* Whether object o is anonymous memory (a JIT's code), not a file. */
static int anonymous(const struct cp_object *o)
{
	return cp_jit_is_anon_path(o->path);
}

/* The Location of addr, which the part's JIT named s: in the Mapping of
 * its region (g, the anonymous mapping it is in, where the part's objects
 * have it), with its one Line, named by the JIT, its source line where a
 * jitdump gave one.  0 with b->err set on failure. */
static uint32_t jit_location(struct builder *b, struct part_state *ps, uint64_t addr, const struct cp_jit_sym *s,
			     const struct cp_segment *g)
{
	const struct cp_jit *j = ps->p->jit;
	uint64_t lo, hi;
	if (g) {
		lo = g->start;
		hi = g->limit;
	} else {
		cp_jit_region(j, s, addr, &lo, &hi);
	}
	uint32_t r = idmap_get(&ps->jitregion, lo);
	if (!r) {
		if (cp_array_grow((void **)&b->jitmaps, &b->capjitmaps, b->njitmaps + 1, sizeof *b->jitmaps, 16) ||
		    idmap_put(&ps->jitregion, lo, (uint32_t)b->njitmaps + 1) != 0) {
			b->err = ENOMEM;
			return 0;
		}
		b->jitmaps[b->njitmaps] = (struct jitmap){ ++b->nmappings, lo, hi, 0 };
		r = (uint32_t)++b->njitmaps;
	}
	uint32_t id = location_new(b, addr, b->jitmaps[r - 1].id, 0);
	if (!id || idmap_put(&ps->locmap, addr, id) != 0) {
		b->err = ENOMEM;
		return 0;
	}
	const char *file;
	uint32_t line = cp_jit_line_of(j, s, addr, &file);
	/* A line without its file (node 20 writes none of a script) says
	 * little, and would part one function in two. */
	if (!file[0])
		line = 0;
	uint32_t name = cp_pb_str_intern(b, cp_jit_name(j, s)[0] ? cp_jit_name(j, s) : CP_JIT_MAPPING);
	cp_pb_line_add(b, &b->locs[id - 1], cp_pb_function_id(b, name, name, cp_pb_str_intern(b, file), 0), line);
	b->jitmaps[r - 1].lines |= line != 0;
	b->jitlocs++;
	return id;
}

/* The Location id for the (already adjusted) address addr, creating the
 * Location and its Mapping on first sight (its Lines come later, from
 * cp_pb_symbolize()); 0 with b->err set on failure. */
static uint32_t location_for(struct builder *b, uint64_t addr)
{
	struct part_state *ps = &b->parts[b->cur];
	uint32_t id = idmap_get(&ps->locmap, addr);
	if (id)
		return id;
	const struct cp_symbols *sy = ps->p->syms;
	const struct cp_segment *g = cp_symbols_segment_for(sy, addr);
	/* Code in no file: its JIT may have named it. */
	const struct cp_jit_sym *js = ps->p->jit && (!g || anonymous(g->obj)) ? cp_jit_lookup(ps->p->jit, addr) : NULL;
	if (js)
		return jit_location(b, ps, addr, js, g);
	uint32_t mapping = 0, seg = 0;
	if (g) {
		size_t k = (size_t)(g - sy->segs);
		if (!ps->segmapping[k])
			ps->segmapping[k] = ++b->nmappings;
		mapping = ps->segmapping[k];
		seg = (uint32_t)k + 1;
	}
	id = location_new(b, addr, mapping, seg);
	if (id && idmap_put(&ps->locmap, addr, id) != 0) {
		b->err = ENOMEM;
		return 0;
	}
	return id;
}

/* A Location without mapping or address whose function is `name`. */
static uint32_t pseudo_location(struct builder *b, uint32_t *cache,
				const char *name)
{
	if (!*cache) {
		uint32_t fn = cp_pb_function_unique(b, name);
		*cache = location_new(b, 0, 0, 0);
		if (*cache)
			cp_pb_line_add(b, &b->locs[*cache - 1], fn, 0);
	}
	return *cache;
}

__attribute__((format(printf, 2, 3)))
void cp_pb_add_comment(struct builder *b, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s || cp_array_grow((void **)&b->comments, &b->capcomments, b->ncomments + 1,
				sizeof *b->comments, 8)) {
		free(s);
		b->err = ENOMEM;
		return;
	}
	b->comments[b->ncomments++] = s;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A gzip stream into a file. */
struct gz_out {
	z_stream z;
	unsigned char *out;
	uInt room;
	int fd;
};

/* A gzip stream into fd whose first input is `len` bytes, or NULL (out
 * of memory).  The window (a match cannot reach back past the input's
 * start) and the hash are no bigger than that input needs, so that a
 * short process's small profile, written in one go, does not allocate
 * and clear zlib's full 256 KiB; from 32 KiB of input on they are zlib's
 * defaults. */
static struct gz_out *gz_open(int fd, size_t len)
{
	enum { CHUNK = 1 << 16 };
	int bits = 9;
	while (bits < 15 && ((size_t)1 << bits) < len)
		bits++;
	struct gz_out *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, bits + 16, bits - 7, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return NULL;
	}
	uLong bound = deflateBound(&g->z, (uLong)(len < CHUNK ? len : CHUNK));
	g->room = bound < CHUNK ? (uInt)bound : CHUNK;
	g->fd = fd;
	if (!(g->out = malloc(g->room))) {
		deflateEnd(&g->z);
		free(g);
		return NULL;
	}
	return g;
}

/* Compresses data[0..len) into g's file, and with `finish` ends the
 * stream.  Returns 0 or a negative errno. */
static int gz_put(struct gz_out *g, const uint8_t *data, size_t len, int finish)
{
	int rc = 0, flush;
	size_t off = 0;
	do {
		size_t chunk = len - off > (1u << 30) ? (1u << 30) : len - off;
		g->z.next_in = (unsigned char *)(uintptr_t)(data + off);
		g->z.avail_in = (uInt)chunk;
		off += chunk;
		flush = off < len ? Z_NO_FLUSH : finish ? Z_FINISH : Z_NO_FLUSH;
		do {
			g->z.next_out = g->out;
			g->z.avail_out = g->room;
			deflate(&g->z, flush); /* cannot fail with valid state */
			rc = write_all(g->fd, g->out, g->room - g->z.avail_out);
		} while (rc == 0 && g->z.avail_out == 0);
	} while (rc == 0 && off < len);
	return rc;
}

static void gz_close(struct gz_out *g)
{
	if (!g)
		return;
	deflateEnd(&g->z);
	free(g->out);
	free(g);
}

/* Compresses what the builder holds into its file once that is
 * CP_PB_SPILL bytes, and empties it.  Only between top-level fields:
 * a nested message must not be open. */
static void spill(struct builder *b)
{
	if (b->fd < 0 || b->pb.len < CP_PB_SPILL || b->err || b->pb.err)
		return;
	if (!b->gz && !(b->gz = gz_open(b->fd, b->pb.len))) {
		b->err = ENOMEM;
		return;
	}
	int rc = gz_put(b->gz, b->pb.data, b->pb.len, 0);
	if (rc < 0) {
		b->werr = rc;
		b->err = -rc;
	}
	b->pb.len = 0;
}

/* Compresses the rest into the file and ends it.  0 or a negative
 * errno. */
static int gz_finish(struct builder *b)
{
	if (!b->gz && !(b->gz = gz_open(b->fd, b->pb.len)))
		return -ENOMEM;
	return gz_put(b->gz, b->pb.data, b->pb.len, 1);
}

static void put_value_type(struct pb_buf *pb, uint32_t field,
			   uint32_t type, uint32_t unit)
{
	size_t m = cp_pb_start(pb);
	cp_pb_int64_opt(pb, VALUE_TYPE_TYPE, type);
	cp_pb_int64_opt(pb, VALUE_TYPE_UNIT, unit);
	cp_pb_end(pb, field, m);
}

/* The label strings, once interned. */
struct label_keys {
	uint32_t pid, process, tid, thread;
};

static void put_label(struct pb_buf *pb, uint32_t key, uint32_t str, int64_t num)
{
	size_t m = cp_pb_start(pb);
	cp_pb_int64_opt(pb, LABEL_KEY, key);
	cp_pb_int64_opt(pb, LABEL_STR, str);
	cp_pb_int64_opt(pb, LABEL_NUM, num);
	cp_pb_end(pb, SAMPLE_LABEL, m);
}

/* The times of a sample (times.h), counted from the profile's start. */
static void put_times(struct builder *b, const struct cp_times *t)
{
	if (!t || !t->len || !b->times)
		return;
	b->tlen = 0;
	if (cp_times_rebase(cp_times_bytes(t), t->len, b->times_shift, &b->tbuf, &b->tlen, &b->tcap) < 0)
		b->err = ENOMEM;
	else
		cp_pb_bytes(&b->pb, SAMPLE_TIMES, b->tbuf, b->tlen);
}

/* The string of thread tid's name in part ps, or 0 if it has none: asked
 * of the part once per thread, not once per stack (the library reads it
 * from /proc, a file opened per call). */
static uint32_t thread_name_str(struct builder *b, struct part_state *ps, uint32_t tid)
{
	struct idmap *m = &ps->tidname;
	uint32_t v = idmap_get(m, tid);
	if (v)
		return v - 1;
	const char *name = ps->p->thread_name ? ps->p->thread_name(ps->p->arg, tid) : NULL;
	uint32_t str = name && name[0] ? cp_pb_str_intern(b, name) : 0;
	if (!b->err && idmap_put(m, tid, str + 1) != 0)
		b->err = ENOMEM;
	return str;
}

/* A sample of part ps, sampled in thread tid (0: none in particular):
 * `count` samples of `ns` CPU, or (off) `ns` off the CPU, taken at the
 * times t (NULL: none kept). */
static void put_sample(struct builder *b, struct part_state *ps, const struct label_keys *k,
		       const uint64_t *ids, size_t n, uint64_t count, uint64_t ns, int off, uint32_t tid,
		       const struct cp_times *t)
{
	struct pb_buf *pb = &b->pb;
	/* samples, cpu, off_cpu, wall */
	int64_t values[4] = { off ? 0 : (int64_t)count, off ? 0 : (int64_t)ns, off ? (int64_t)ns : 0, (int64_t)ns };
	const struct cp_profile_part *p = ps ? ps->p : NULL;
	size_t m = cp_pb_start(pb);
	cp_pb_packed_uint64(pb, SAMPLE_LOCATION_ID, ids, n);
	cp_pb_packed_int64(pb, SAMPLE_VALUE, values, b->nvalues);
	if (p && p->pid)
		put_label(pb, k->pid, 0, p->pid);
	if (p && ps->pid_str)
		put_label(pb, k->process, ps->pid_str, 0);
	if (p && tid) {
		put_label(pb, k->tid, 0, tid);
		uint32_t name = thread_name_str(b, ps, tid);
		if (name)
			put_label(pb, k->thread, name, 0);
	}
	put_times(b, t);
	cp_pb_end(pb, PROFILE_SAMPLE, m);
}

/* A sample whose only frame is the pseudo-function ps->name. */
static void put_pseudo(struct builder *b, struct part_state *ps, const struct label_keys *k,
		       const struct cp_pseudo_sample *x)
{
	if (x->count == 0 && x->ns == 0)
		return;
	uint32_t fn = cp_pb_function_unique(b, x->name);
	uint64_t id = location_new(b, 0, 0, 0);
	if (id)
		cp_pb_line_add(b, &b->locs[id - 1], fn, 0);
	put_sample(b, ps, k, &id, 1, x->count, x->ns, 0, 0, NULL);
}

/* The string indexes of the sample types' names that the profile's
 * period and default sample type name again. */
struct type_strs {
	uint32_t samples, count, cpu, ns, wall;
};

/* The sample types: samples and cpu, and with off-CPU time off_cpu and
 * wall (last: what pprof shows by default, as the default sample type says
 * to readers that look).  Sets b->nvalues and t->wall. */
static void put_sample_types(struct builder *b, const struct cp_profile_meta *meta, struct type_strs *t)
{
	struct pb_buf *pb = &b->pb;
	put_value_type(pb, PROFILE_SAMPLE_TYPE, t->samples, t->count);
	put_value_type(pb, PROFILE_SAMPLE_TYPE, t->cpu, t->ns);
	b->nvalues = 2;
	t->wall = 0;
	if (meta->off_cpu) {
		put_value_type(pb, PROFILE_SAMPLE_TYPE, cp_pb_str_intern(b, "off_cpu"), t->ns);
		put_value_type(pb, PROFILE_SAMPLE_TYPE, t->wall = cp_pb_str_intern(b, "wall"), t->ns);
		b->nvalues = 4;
	}
}

/* The Location ids of stack s of the current part into ids (room for
 * s->n + 2), leaf first, its pcs decoded into pcs (room for s->n);
 * returns how many. */
static size_t stack_ids(struct builder *b, const struct part_state *ps, const struct cp_stack *s, uint64_t *ids,
			uintptr_t *pcs)
{
	size_t n = 0;
	cp_stack_pcs(s, pcs);
	/* Waiting for a CPU: a leaf of its own, where every reader shows it. */
	if (s->flags & CP_STACK_RUNNABLE)
		ids[n++] = pseudo_location(b, &b->waiting_loc, "[waiting to run]");
	for (uint32_t k = 0; k < s->n; k++) {
		uint64_t pc = pcs[k];
		if (k == 1 && (s->flags & CP_STACK_LINK_REG) &&
		    !cp_symbols_code_outside_function(ps->p->syms, pcs[0], pc - 1))
			continue;
		/* A caller's frame: point into the call instruction. */
		ids[n++] = location_for(b, k > 0 && pc > 0 ? pc - 1 : pc);
	}
	/* pprof hides a sample without locations from its reports (it only
	 * counts in the total): give it a frame. */
	if (s->n == 0 && (s->flags & CP_STACK_BEFORE))
		ids[n++] = pseudo_location(b, &b->before_loc, "[off-CPU: since before the profile started]");
	else if (n == 0)
		ids[n++] = pseudo_location(b, &b->nostack_loc, "[no stack]");
	if (s->flags & CP_STACK_TRUNCATED)
		ids[n++] = pseudo_location(b, &b->truncated_loc, "[truncated]");
	return n;
}

/* Every part's samples and pseudo-samples, then the profile's own
 * pseudo-samples.  Returns 0 or -ENOMEM. */
static int put_samples(struct builder *b, const struct cp_profile_meta *meta, const struct label_keys *keys)
{
	size_t maxn = 3;
	for (size_t p = 0; p < b->nparts; p++)
		for (size_t i = 0; i < b->parts[p].p->tab->len; i++)
			if ((size_t)b->parts[p].p->tab->items[i]->n + 2 > maxn)
				maxn = (size_t)b->parts[p].p->tab->items[i]->n + 2;
	uint64_t *ids = malloc(maxn * sizeof *ids);
	uintptr_t *pcs = malloc(maxn * sizeof *pcs);
	if (!ids || !pcs) {
		free(ids);
		free(pcs);
		return -ENOMEM;
	}
	for (b->cur = 0; b->cur < b->nparts; b->cur++) {
		struct part_state *ps = &b->parts[b->cur];
		const struct cp_stacktab *tab = ps->p->tab;
		if (ps->p->process && ps->p->process[0])
			ps->pid_str = cp_pb_str_intern(b, ps->p->process);
		for (size_t i = 0; i < tab->len && !b->err && !b->pb.err; i++) {
			const struct cp_stack *s = tab->items[i];
			int off = (s->flags & CP_STACK_OFF_CPU) != 0;
			if ((off && !meta->off_cpu) || (s->count == 0 && s->ns == 0))
				continue;
			size_t n = stack_ids(b, ps, s, ids, pcs);
			put_sample(b, ps, keys, ids, n, s->count, s->ns, off, s->tid, &s->times);
			spill(b);
		}
		for (size_t i = 0; i < ps->p->npseudo; i++)
			put_pseudo(b, ps, keys, &ps->p->pseudo[i]);
	}
	free(ids);
	free(pcs);
	for (size_t i = 0; i < meta->npseudo; i++)
		put_pseudo(b, NULL, keys, &meta->pseudo[i]);
	return 0;
}

/* A Mapping per segment that some Location is in. */
static void put_mappings(struct builder *b)
{
	struct pb_buf *pb = &b->pb;
	for (size_t p = 0; p < b->nparts; p++) {
		const struct part_state *ps = &b->parts[p];
		const struct cp_symbols *sy = ps->p->syms;
		for (size_t i = 0; i < sy->nsegs; i++) {
			const struct cp_segment *g = &sy->segs[i];
			if (!ps->segmapping[i])
				continue;
			size_t m = cp_pb_start(pb);
			cp_pb_uint64(pb, MAPPING_ID, ps->segmapping[i]);
			cp_pb_uint64_opt(pb, MAPPING_MEMORY_START, g->start);
			cp_pb_uint64_opt(pb, MAPPING_MEMORY_LIMIT, g->limit);
			cp_pb_uint64_opt(pb, MAPPING_FILE_OFFSET, g->file_offset);
			cp_pb_int64_opt(pb, MAPPING_FILENAME, cp_pb_str_intern(b, g->obj->path));
			cp_pb_int64_opt(pb, MAPPING_BUILD_ID, cp_pb_str_intern(b, g->obj->build_id));
			cp_pb_bool(pb, MAPPING_HAS_FUNCTIONS, 1);
			/* True where some Location has them, as pprof's own
			 * symbolizer sets them. */
			cp_pb_bool(pb, MAPPING_HAS_FILENAMES, ps->mapflags[i].filenames);
			cp_pb_bool(pb, MAPPING_HAS_LINE_NUMBERS, ps->mapflags[i].line_numbers);
			cp_pb_bool(pb, MAPPING_HAS_INLINE_FRAMES, ps->mapflags[i].inline_frames);
			cp_pb_end(pb, PROFILE_MAPPING, m);
			spill(b);
		}
	}
	/* JIT code: "[jit]", a name in brackets, which pprof readers take for
	 * memory no file backs ("[vdso]", "[heap]"): they keep the names the
	 * profile gives, never look for a binary to symbolize it, and never
	 * take it for the main program. */
	for (size_t i = 0; i < b->njitmaps; i++) {
		const struct jitmap *jm = &b->jitmaps[i];
		size_t m = cp_pb_start(pb);
		cp_pb_uint64(pb, MAPPING_ID, jm->id);
		cp_pb_uint64_opt(pb, MAPPING_MEMORY_START, jm->lo);
		cp_pb_uint64_opt(pb, MAPPING_MEMORY_LIMIT, jm->hi);
		cp_pb_int64_opt(pb, MAPPING_FILENAME, cp_pb_str_intern(b, CP_JIT_MAPPING));
		cp_pb_bool(pb, MAPPING_HAS_FUNCTIONS, 1);
		cp_pb_bool(pb, MAPPING_HAS_FILENAMES, jm->lines);
		cp_pb_bool(pb, MAPPING_HAS_LINE_NUMBERS, jm->lines);
		cp_pb_end(pb, PROFILE_MAPPING, m);
	}
}

/* The Locations with their Lines, and the Functions. */
static void put_locations_functions(struct builder *b)
{
	struct pb_buf *pb = &b->pb;
	for (size_t i = 0; i < b->nlocs; i++) {
		const struct location *l = &b->locs[i];
		size_t m = cp_pb_start(pb);
		cp_pb_uint64(pb, LOCATION_ID, i + 1);
		cp_pb_uint64_opt(pb, LOCATION_MAPPING_ID, l->mapping);
		cp_pb_uint64_opt(pb, LOCATION_ADDRESS, l->addr);
		for (uint32_t k = 0; k < l->nlines; k++) {
			const struct line *ln = &b->lines[l->line0 + k];
			size_t line = cp_pb_start(pb);
			cp_pb_uint64(pb, LINE_FUNCTION_ID, ln->function);
			cp_pb_int64_opt(pb, LINE_LINE, ln->line);
			cp_pb_end(pb, LOCATION_LINE, line);
		}
		cp_pb_end(pb, PROFILE_LOCATION, m);
		spill(b);
	}
	for (size_t i = 0; i < b->nfns; i++) {
		const struct function *f = &b->fns[i];
		size_t m = cp_pb_start(pb);
		cp_pb_uint64(pb, FUNCTION_ID, i + 1);
		cp_pb_int64_opt(pb, FUNCTION_NAME, f->name);
		cp_pb_int64_opt(pb, FUNCTION_SYSTEM_NAME, f->system_name);
		cp_pb_int64_opt(pb, FUNCTION_FILENAME, f->filename);
		cp_pb_int64_opt(pb, FUNCTION_START_LINE, f->start_line);
		cp_pb_end(pb, PROFILE_FUNCTION, m);
		spill(b);
	}
}

/* The comments: the caller's, then the builder's own.  Returns 0 or
 * -ENOMEM. */
static int put_comments(struct builder *b, const struct cp_profile_meta *meta)
{
	size_t nc = meta->ncomments + b->ncomments;
	if (!nc)
		return 0;
	int64_t *c = malloc(nc * sizeof *c);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < meta->ncomments; i++)
		c[i] = cp_pb_str_intern(b, meta->comments[i] ? meta->comments[i] : "");
	for (size_t i = 0; i < b->ncomments; i++)
		c[meta->ncomments + i] = cp_pb_str_intern(b, b->comments[i]);
	cp_pb_packed_int64(&b->pb, PROFILE_COMMENT, c, nc);
	free(c);
	return 0;
}

/* Encodes the whole profile into b->pb.  Returns 0 or -ENOMEM. */
static int build(struct builder *b, const struct cp_profile_meta *meta)
{
	struct pb_buf *pb = &b->pb;
	struct type_strs t = { cp_pb_str_intern(b, "samples"), cp_pb_str_intern(b, "count"), cp_pb_str_intern(b, "cpu"),
			       cp_pb_str_intern(b, "nanoseconds"), 0 };
	struct label_keys keys = { cp_pb_str_intern(b, "pid"), cp_pb_str_intern(b, "process"), cp_pb_str_intern(b, "tid"),
				   cp_pb_str_intern(b, "thread") };
	put_sample_types(b, meta, &t);
	if (cp_times_dropped())
		cp_pb_add_comment(b, "times=none: the samples' times passed %u MiB, and no time is written "
				  "(record --every keeps long runs in windows)", CP_TIMES_MAX_BYTES >> 20);
	else if ((b->times = cp_times_base()) != NULL) {
		uint64_t start = meta->start_mono_ns ? meta->start_mono_ns : b->times->t0_ns;
		b->times_shift = start > b->times->t0_ns ? (start - b->times->t0_ns) / b->times->unit_ns : 0;
	}
	if (put_samples(b, meta, &keys) < 0)
		return -ENOMEM;
	/* The stacks are encoded: a table no longer needed goes now, before
	 * the lines child is forked with the process's pages. */
	for (size_t p = 0; p < b->nparts; p++)
		if (b->parts[p].p->spend)
			cp_stacktab_free(b->parts[p].p->spend);
	cp_pb_symbolize(b);
	if (b->jitlocs)
		cp_pb_add_comment(b, "jit=%zu addresses named by their JIT (perf map or jitdump)", b->jitlocs);
	put_mappings(b);
	put_locations_functions(b);
	cp_pb_int64_opt(pb, PROFILE_TIME_NANOS, meta->time_nanos);
	cp_pb_int64_opt(pb, PROFILE_DURATION_NANOS, meta->duration_nanos);
	put_value_type(pb, PROFILE_PERIOD_TYPE, t.cpu, t.ns);
	cp_pb_int64_opt(pb, PROFILE_PERIOD, (int64_t)meta->period_ns);
	cp_pb_int64_opt(pb, PROFILE_DEFAULT_SAMPLE_TYPE, t.wall);
	if (b->times)
		cp_pb_uint64(pb, PROFILE_TIME_UNIT_NS, b->times->unit_ns);
	if (put_comments(b, meta) < 0)
		return -ENOMEM;
	/* Last, now that every string is in it. */
	for (size_t i = 0; i < b->nstrs; i++) {
		cp_pb_string(pb, PROFILE_STRING_TABLE, b->strs[i]);
		spill(b);
	}
	return b->werr ? b->werr : b->err || pb->err ? -ENOMEM : 0;
}

static void builder_free(struct builder *b)
{
	gz_close(b->gz);
	cp_pb_free(&b->pb);
	free(b->tbuf);
	for (size_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	free(b->strindex);
	free(b->locs);
	for (size_t p = 0; b->parts && p < b->nparts; p++) {
		idmap_free(&b->parts[p].locmap);
		idmap_free(&b->parts[p].jitregion);
		idmap_free(&b->parts[p].tidname);
		free(b->parts[p].segmapping);
		free(b->parts[p].mapflags);
	}
	free(b->parts);
	free(b->jitmaps);
	free(b->lines);
	free(b->fns);
	free(b->fnindex);
	for (size_t i = 0; i < b->ncomments; i++)
		free(b->comments[i]);
	free(b->comments);
}

int cp_pprof_write_parts(const char *path, const struct cp_profile_part *parts, size_t nparts,
		      const struct cp_profile_meta *meta, char *err, size_t errlen)
{
	static const struct cp_profile_meta no_meta;
	struct builder b;
	struct cp_outfile out;
	int rc;

	if (!meta)
		meta = &no_meta;
	if (err && errlen)
		err[0] = '\0';
	memset(&b, 0, sizeof b);
	b.fd = -1;
	cp_pb_init(&b.pb);
	int ok = nparts > 0 && (b.parts = calloc(nparts, sizeof *b.parts)) != NULL;
	for (size_t p = 0; ok && p < nparts; p++) {
		b.parts[p].p = &parts[p];
		size_t nsegs = parts[p].syms->nsegs + 1;
		ok = (b.parts[p].segmapping = calloc(nsegs, sizeof *b.parts[p].segmapping)) &&
		     (b.parts[p].mapflags = calloc(nsegs, sizeof *b.parts[p].mapflags));
		b.nparts = p + 1;
	}
	if (!ok || cp_array_grow((void **)&b.strs, &b.capstrs, 1, sizeof *b.strs, 256) || !(b.strs[0] = strdup(""))) {
		rc = -ENOMEM;
		cp_why(err, errlen, "pprof: out of memory");
		goto out;
	}
	b.nstrs = 1;
	/* Written whole, or into a path that is not a regular file
	 * (outfile.h). */
	char why[512];
	if ((rc = cp_outfile_open(&out, path, why, sizeof why)) < 0) {
		cp_why(err, errlen, "pprof: %s", why);
		goto out;
	}
	b.fd = out.fd;
	if ((rc = build(&b, meta)) != 0 || (rc = gz_finish(&b)) != 0) {
		if (rc == -ENOMEM && !b.werr)
			cp_why(err, errlen, "pprof: out of memory");
		else
			cp_why(err, errlen, "pprof: write %s: %s", cp_outfile_name(&out), strerror(-rc));
		cp_outfile_abandon(&out);
		goto out;
	}
	if ((rc = cp_outfile_commit(&out, why, sizeof why)) < 0)
		cp_why(err, errlen, "pprof: %s", why);
out:
	builder_free(&b);
	return rc;
}

int cp_pprof_write(const char *path, const struct cp_stacktab *tab, const struct cp_profile_meta *meta, char *err,
		size_t errlen)
{
	struct cp_profile_part part = { .syms = cp_symbols_load(), .tab = tab };
	if (!part.syms) {
		cp_why(err, errlen, "pprof: out of memory");
		return -ENOMEM;
	}
	int rc = cp_pprof_write_parts(path, &part, 1, meta, err, errlen);
	cp_symbols_free((struct cp_symbols *)part.syms);
	return rc;
}
