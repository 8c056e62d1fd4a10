/*
 * tally.c -- record's stack tables as `cpuprof top` shows them (tally.h).
 *
 * For each epoch of each image, the stacks seen so far: how much CPU each
 * held at the last take, and its functions, named once (the leaf first,
 * each function once however often it recurses).  A take walks the
 * stacks and adds each one's gain to its leaf's flat CPU, to every one of
 * its functions' cumulative CPU and to its thread's.  The names are the
 * writer's: the symbol tables' (versions cut, C++ and Rust demangled), a
 * JIT's, or the object and offset; inlined functions are not split out
 * (that needs the DWARF, which report reads from the profile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/table.h"
#include "record/record_write.h"
#include "symbolize/demangle.h"
#include "symbolize/jit.h"
#include "symbolize/symbols.h"
#include "tally.h"

/* A stack as last taken: its CPU then, its functions fns[off .. off + n)
 * of the pool (0 n: not named yet), its thread's row. */
struct stack_seen {
	uint64_t ns;
	uint32_t off, n;
	uint32_t thread;
};

/* An address's function, in one epoch's symbols. */
struct addr_fn {
	uint64_t key; /* the address + 1 */
	uint32_t fn;
};

/* One epoch of one image. */
struct epoch_seen {
	struct cp_symbols *syms; /* built when a stack is first named, again when objects were added */
	uint32_t syms_nobjs;     /* the image's objects when they were built */
	struct cp_table addrs;   /* of struct addr_fn */
	struct stack_seen *stacks;
	size_t nstacks, capstacks;
};

struct image_seen {
	struct epoch_seen *epochs;
	size_t nepochs;
};

struct fn {
	char *name;
	int64_t flat, cum, tflat, tcum;
};

struct thread {
	uint32_t image;
	int32_t tid;
	int64_t ns, tns;
};

/* A thread's row, by image and tid. */
struct thread_key {
	uint64_t key; /* (image + 1) << 32 | tid */
	uint32_t row;
};

struct tally {
	struct image_seen *images;
	size_t nimages;
	struct fn *fns;
	size_t nfns, capfns;
	uint32_t *byname;         /* open addressing: 1 + index into fns, 0 empty */
	size_t nbyname;           /* a power of two, at least twice nfns */
	uint32_t *pool;           /* the stacks' functions */
	size_t npool, cappool;
	uintptr_t *pcs;           /* the stack being named, decoded */
	size_t cappcs;
	struct thread *threads;
	size_t nthreads, capthreads;
	struct cp_table thread_rows; /* of struct thread_key */
	int64_t interval_ns, total_ns;
	struct tally_fn *fnrows;
	size_t capfnrows;
	struct tally_thread *threadrows;
	size_t capthreadrows;
};

static uint64_t addr_key(const void *e)
{
	return ((const struct addr_fn *)e)->key;
}

static uint64_t thread_key_of(const void *e)
{
	return ((const struct thread_key *)e)->key;
}

struct tally *tally_new(void)
{
	struct tally *t = calloc(1, sizeof *t);
	if (t) {
		t->thread_rows.size = sizeof(struct thread_key);
		t->thread_rows.key_of = thread_key_of;
	}
	return t;
}

void tally_free(struct tally *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nimages; i++) {
		for (size_t e = 0; e < t->images[i].nepochs; e++) {
			struct epoch_seen *es = &t->images[i].epochs[e];
			cp_symbols_free(es->syms);
			cp_table_free(&es->addrs);
			free(es->stacks);
		}
		free(t->images[i].epochs);
	}
	free(t->images);
	for (size_t i = 0; i < t->nfns; i++)
		free(t->fns[i].name);
	free(t->fns);
	free(t->byname);
	free(t->pool);
	free(t->pcs);
	free(t->threads);
	cp_table_free(&t->thread_rows);
	free(t->fnrows);
	free(t->threadrows);
	free(t);
}

static size_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return cp_hash64(h);
}

/* The index of the function named `name` (taken over: freed here if it
 * is one already), or -1 if out of memory. */
static long fn_of(struct tally *t, char *name)
{
	if ((t->nfns + 1) * 2 > t->nbyname) {
		size_t n = t->nbyname ? t->nbyname * 2 : 256;
		uint32_t *b = calloc(n, sizeof *b);
		if (!b) {
			free(name);
			return -1;
		}
		for (size_t i = 0; i < t->nfns; i++) {
			size_t j = hash_name(t->fns[i].name) & (n - 1);
			while (b[j])
				j = (j + 1) & (n - 1);
			b[j] = (uint32_t)i + 1;
		}
		free(t->byname);
		t->byname = b;
		t->nbyname = n;
	}
	size_t j = hash_name(name) & (t->nbyname - 1);
	for (; t->byname[j]; j = (j + 1) & (t->nbyname - 1))
		if (strcmp(t->fns[t->byname[j] - 1].name, name) == 0) {
			free(name);
			return (long)t->byname[j] - 1;
		}
	if (cp_array_grow((void **)&t->fns, &t->capfns, t->nfns + 1, sizeof *t->fns, 64)) {
		free(name);
		return -1;
	}
	t->fns[t->nfns] = (struct fn){ .name = name };
	t->byname[j] = (uint32_t)++t->nfns;
	return (long)t->nfns - 1;
}

/* The name of the code at addr (a leaf's PC, or a caller's return address
 * less one) in image m's epoch of symbols sy: its symbol, else its JIT's
 * name, else where it is ("libfoo.so+0x1234", or the address).  malloc'd,
 * or NULL. */
static char *name_at(const struct cp_image *m, const struct cp_symbols *sy, uintptr_t addr)
{
	const struct cp_segment *g = cp_symbols_segment_for(sy, addr);
	int anon = !g || cp_jit_is_anon_path(g->obj->path);
	if (anon && m->jit && m->jit->finished) {
		const struct cp_jit_sym *js = cp_jit_lookup(m->jit, addr);
		if (js)
			return strdup(cp_jit_name(m->jit, js)[0] ? cp_jit_name(m->jit, js) : CP_JIT_MAPPING);
	}
	const char *sym = g ? cp_symbols_name_for(sy, addr, NULL) : NULL;
	if (sym)
		return cp_symbol_readable(sym);
	char *s = NULL;
	if (g && cp_jit_is_anon_path(g->obj->path)) {
		s = strdup(CP_JIT_MAPPING);
	} else if (g) {
		const char *base = strrchr(g->obj->path, '/');
		if (asprintf(&s, "%s+0x%llx", base ? base + 1 : g->obj->path,
			     (unsigned long long)(addr - g->start + g->file_offset)) < 0)
			s = NULL;
	} else if (asprintf(&s, "0x%llx", (unsigned long long)addr) < 0) {
		s = NULL;
	}
	return s;
}

/* The function of addr in epoch es of image m (each address named once).
 * -1 if out of memory. */
static long fn_at(struct tally *t, struct epoch_seen *es, const struct cp_image *m, uintptr_t addr)
{
	uint64_t key = (uint64_t)addr + 1;
	struct addr_fn *a = key ? cp_table_find(&es->addrs, key) : NULL;
	if (a)
		return a->fn;
	char *name = name_at(m, es->syms, addr);
	long fn = name ? fn_of(t, name) : -1;
	int made;
	if (fn >= 0 && key && (a = cp_table_get(&es->addrs, key, &made)) != NULL) {
		a->key = key;
		a->fn = (uint32_t)fn;
	}
	return fn;
}

/* The row of thread tid of image i.  -1 if out of memory. */
static long thread_of(struct tally *t, size_t i, int32_t tid)
{
	int made;
	struct thread_key *k = cp_table_get(&t->thread_rows, (uint64_t)(i + 1) << 32 | (uint32_t)tid, &made);
	if (!k)
		return -1;
	if (!made)
		return k->row;
	if (cp_array_grow((void **)&t->threads, &t->capthreads, t->nthreads + 1, sizeof *t->threads, 16)) {
		/* Left as an empty slot would break the probing: keep it, lost. */
		k->key = (uint64_t)(i + 1) << 32 | (uint32_t)tid;
		k->row = UINT32_MAX;
		return -1;
	}
	k->key = (uint64_t)(i + 1) << 32 | (uint32_t)tid;
	k->row = (uint32_t)t->nthreads;
	t->threads[t->nthreads++] = (struct thread){ .image = (uint32_t)i, .tid = tid };
	return k->row;
}

/* Whether fn is among fns[0 .. n). */
static int has(const uint32_t *fns, uint32_t n, uint32_t fn)
{
	for (uint32_t i = 0; i < n; i++)
		if (fns[i] == fn)
			return 1;
	return 0;
}

/* Names stack s of image i (m), epoch es, into seen: its functions,
 * leaf first, each once, as the writer makes its Locations (a caller's
 * frame points into its call; a link register that is not a call site is
 * no frame).  0, or -1 if out of memory. */
static int name_stack(struct tally *t, size_t i, const struct cp_image *m, struct epoch_seen *es,
		      const struct cp_stack *s, struct stack_seen *seen)
{
	if (!es->syms || es->syms_nobjs != m->nobjs) {
		cp_symbols_free(es->syms);
		cp_table_free(&es->addrs);
		es->addrs = (struct cp_table){ .size = sizeof(struct addr_fn), .key_of = addr_key };
		es->syms = record_epoch_symbols(m, (size_t)(es - t->images[i].epochs), NULL);
		es->syms_nobjs = m->nobjs;
		if (!es->syms)
			return -1;
	}
	if (cp_array_grow((void **)&t->pool, &t->cappool, t->npool + (size_t)s->n + 1, sizeof *t->pool, 1024) ||
	    cp_array_grow((void **)&t->pcs, &t->cappcs, (size_t)s->n + 1, sizeof *t->pcs, 256))
		return -1;
	const uintptr_t *pcs = t->pcs;
	cp_stack_pcs(s, t->pcs);
	uint32_t *fns = t->pool + t->npool, n = 0;
	if (s->n == 0) {
		long fn = fn_of(t, strdup("[no stack]"));
		if (fn < 0)
			return -1;
		fns[n++] = (uint32_t)fn;
	}
	for (uint32_t k = 0; k < s->n; k++) {
		uintptr_t pc = pcs[k];
		if (k == 1 && (s->flags & CP_STACK_LINK_REG) &&
		    !cp_symbols_code_outside_function(es->syms, pcs[0], pc - 1))
			continue;
		long fn = fn_at(t, es, m, k > 0 && pc > 0 ? pc - 1 : pc);
		if (fn < 0)
			return -1;
		if (!has(fns, n, (uint32_t)fn))
			fns[n++] = (uint32_t)fn;
	}
	long row = thread_of(t, i, (int32_t)s->tid);
	if (row < 0)
		return -1;
	seen->off = (uint32_t)t->npool;
	seen->n = n;
	seen->thread = (uint32_t)row;
	t->npool += n;
	return 0;
}

/* Adds what the stacks of epoch e of image i gained since the last take.
 * 0 or -1 (out of memory: the rest waits for the next take). */
static int take_epoch(struct tally *t, size_t i, const struct cp_image *m, size_t e, int baseline)
{
	struct epoch_seen *es = &t->images[i].epochs[e];
	const struct cp_stacktab *tab = &m->epochs[e].tab;
	/* A table that was emptied (cp_stacktab_clear) starts again. */
	if (tab->len < es->nstacks)
		es->nstacks = 0;
	if (cp_array_grow((void **)&es->stacks, &es->capstacks, tab->len, sizeof *es->stacks, 64))
		return -1;
	for (size_t j = 0; j < tab->len; j++) {
		const struct cp_stack *s = tab->items[j];
		struct stack_seen *seen = &es->stacks[j];
		if (j >= es->nstacks) {
			*seen = (struct stack_seen){ 0 };
			es->nstacks = j + 1;
		}
		if (s->flags & CP_STACK_OFF_CPU)
			continue;
		/* Scaled down at the end (held to the kernel's count): a gain
		 * below zero. */
		int64_t gain = (int64_t)(s->ns - seen->ns);
		if (gain == 0)
			continue;
		if (baseline) {
			seen->ns = s->ns;
			continue;
		}
		if (!seen->n && name_stack(t, i, m, es, s, seen) < 0)
			return -1;
		seen->ns = s->ns;
		const uint32_t *fns = t->pool + seen->off;
		t->fns[fns[0]].flat += gain;
		for (uint32_t k = 0; k < seen->n; k++)
			t->fns[fns[k]].cum += gain;
		if (seen->thread != UINT32_MAX)
			t->threads[seen->thread].ns += gain;
		t->interval_ns += gain;
	}
	return 0;
}

int tally_take(struct tally *t, const struct cp_tree *tree, int baseline)
{
	for (size_t k = 0; k < t->nfns; k++)
		t->fns[k].flat = t->fns[k].cum = 0;
	for (size_t k = 0; k < t->nthreads; k++)
		t->threads[k].ns = 0;
	t->interval_ns = 0;
	int rc = 0;
	if (tree->nimages > t->nimages) {
		struct image_seen *im = realloc(t->images, tree->nimages * sizeof *im);
		if (im) {
			memset(im + t->nimages, 0, (tree->nimages - t->nimages) * sizeof *im);
			t->images = im;
			t->nimages = tree->nimages;
		} else {
			rc = -1;
		}
	}
	for (size_t i = 0; i < t->nimages && rc == 0; i++) {
		const struct cp_image *m = tree->images[i];
		struct image_seen *is = &t->images[i];
		if (m->nepochs > is->nepochs) {
			struct epoch_seen *es = realloc(is->epochs, m->nepochs * sizeof *es);
			if (!es) {
				rc = -1;
				break;
			}
			memset(es + is->nepochs, 0, (m->nepochs - is->nepochs) * sizeof *es);
			is->epochs = es;
			is->nepochs = m->nepochs;
		}
		for (size_t e = 0; e < m->nepochs && rc == 0; e++)
			rc = take_epoch(t, i, m, e, baseline);
	}
	/* The interval's gains are in the totals as soon as they are shown. */
	for (size_t k = 0; k < t->nfns; k++) {
		t->fns[k].tflat += t->fns[k].flat;
		t->fns[k].tcum += t->fns[k].cum;
	}
	for (size_t k = 0; k < t->nthreads; k++)
		t->threads[k].tns += t->threads[k].ns;
	t->total_ns += t->interval_ns;
	return rc;
}

int64_t tally_interval_ns(const struct tally *t)
{
	return t->interval_ns;
}

int64_t tally_total_ns(const struct tally *t)
{
	return t->total_ns;
}

/* The order of the rows, most first: by the interval's value, then the
 * total's (by_total: the other way round), then by name (tid), so that
 * equal rows keep their places from one view to the next. */
static int by_total;

static int cmp64(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b;
}

static int fn_order(const void *pa, const void *pb)
{
	const struct tally_fn *a = pa, *b = pb;
	int c = by_total ? cmp64(a->tflat, b->tflat) : cmp64(a->flat, b->flat);
	if (!c)
		c = by_total ? cmp64(a->tcum, b->tcum) : cmp64(a->cum, b->cum);
	if (!c)
		c = by_total ? cmp64(a->flat, b->flat) : cmp64(a->tflat, b->tflat);
	return c ? c : strcmp(a->name, b->name);
}

static int thread_order(const void *pa, const void *pb)
{
	const struct tally_thread *a = pa, *b = pb;
	int c = by_total ? cmp64(a->tns, b->tns) : cmp64(a->ns, b->ns);
	if (!c)
		c = by_total ? cmp64(a->ns, b->ns) : cmp64(a->tns, b->tns);
	if (!c)
		c = a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : (a->tid > b->tid) - (a->tid < b->tid);
	return c;
}

size_t tally_functions(struct tally *t, int total_first, const struct tally_fn **out)
{
	size_t n = 0;
	*out = NULL;
	if (cp_array_grow((void **)&t->fnrows, &t->capfnrows, t->nfns, sizeof *t->fnrows, 64))
		return 0;
	for (size_t k = 0; k < t->nfns; k++) {
		const struct fn *f = &t->fns[k];
		if (f->flat > 0 || f->cum > 0 || f->tflat > 0 || f->tcum > 0)
			t->fnrows[n++] = (struct tally_fn){ f->name, f->flat, f->cum, f->tflat, f->tcum };
	}
	by_total = total_first;
	qsort(t->fnrows, n, sizeof *t->fnrows, fn_order);
	*out = t->fnrows;
	return n;
}

size_t tally_threads(struct tally *t, const struct cp_tree *tree, int total_first, const struct tally_thread **out)
{
	size_t n = 0;
	*out = NULL;
	if (cp_array_grow((void **)&t->threadrows, &t->capthreadrows, t->nthreads, sizeof *t->threadrows, 16))
		return 0;
	for (size_t k = 0; k < t->nthreads; k++) {
		const struct thread *th = &t->threads[k];
		if (th->ns <= 0 && th->tns <= 0)
			continue;
		const struct cp_image *m = th->image < tree->nimages ? tree->images[th->image] : NULL;
		struct tally_thread *r = &t->threadrows[n++];
		*r = (struct tally_thread){ .pid = m ? m->pid : 0, .tid = th->tid, .ns = th->ns, .tns = th->tns };
		snprintf(r->name, sizeof r->name, "%s", m ? cp_image_thread_name(m, th->tid) : "");
	}
	by_total = total_first;
	qsort(t->threadrows, n, sizeof *t->threadrows, thread_order);
	*out = t->threadrows;
	return n;
}
