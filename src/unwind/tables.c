/*
 * tables.c -- the unwind tables of the loaded objects (tables.h).
 * dl_iterate_phdr lists the objects and where each has code.  For the
 * perf engines a table is built only when a walk first needs it (the walk
 * notes the object in cp_sig.unwind_want and falls back to frame pointers
 * for that frame; the keeper builds the table and walks the kernel's copy
 * of the stack again), so that a process pays for the objects its samples
 * run in, not for every object it loads.  The signal engines' handler
 * walks the live stack, which is gone by the time a table could be built:
 * a frame walked by frame pointers instead loses callers (a frameless
 * leaf's caller, on aarch64 every leaf's) and the sample would keep that
 * stack, so there every object's table is built as soon as the object is
 * listed, before a sample can need it ("eager").  To build one, the
 * object's .eh_frame_hdr
 * (PT_GNU_EH_FRAME) leads to its .eh_frame, which is copied out of the
 * object's memory while the loader's lock is held (so a concurrent dlclose
 * cannot unmap it under the parser), then parsed and encoded with the
 * lock released.  Objects already known keep their tables.  A new set is
 * published with one atomic pointer store; the set and tables it replaces
 * wait in a retire list until the handlers' in-flight count has been seen
 * at zero after the store: a handler that could have loaded the old
 * pointer had already counted itself in.  The dlpi_adds / dlpi_subs
 * counters of dl_iterate_phdr say cheaply whether anything changed.
 * Tables outlive a profile: the next one reuses those of objects still
 * loaded (same name, address, headers and .eh_frame_hdr checksum).  And
 * they outlive the process: an object with a build ID has its table kept
 * on disk (table_cache.h, shared with `cpuprof record`, which builds from
 * files), in the object's link-time addresses, so that the next process
 * that needs libc's table reads 37 KB back instead of encoding 3,700 FDEs.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "ehframe.h"
#include "base/elf.h"
#include "base/loader.h"
#include "sig/sigstate.h"
#include "tables.h"
#include "encode.h"
#include "table_cache.h"
#include "sig/clock.h"

/* How often cp_unwind_tick() looks for objects loaded or unloaded, and how
 * soon after a sample whose pc no table covers. */
#define CHECK_NS 100000000ll
#define MISS_CHECK_NS 10000000ll

/* Most executable segments an object is described with. */
#define MAX_TEXT 8

struct uobj {
	char *key;             /* identity: dlpi_name, load bias, program headers, */
	uintptr_t addr;
	const void *phdr;
	uint64_t hdr_sum;      /* and a checksum of its .eh_frame_hdr */
	char *name;            /* for people: the main program gets its path */
	int state;             /* enum cp_urange_state */
	struct cp_utab *tab;   /* CP_UR_TABLE */
	size_t tab_bytes, eh_bytes, fdes, rows;
	uint64_t build_ns;
	char why[192];
	int rejected;
	int cached;            /* its table came from the table cache */
	char build_id[2 * CP_ELF_BUILD_ID_MAX + 1];

	/* Where its .eh_frame and .eh_frame_hdr are (CP_UR_LAZY), and their
	 * copies between the copying (under the loader's lock) and the
	 * parse. */
	uint8_t *eh_copy, *hdr_copy;
	size_t eh_copy_size, hdr_size;
	uintptr_t eh_addr;
	const uint8_t *hdr_mem;
	size_t fde_count;
	struct ehf_range text[MAX_TEXT];
	size_t ntext;
	int reused;            /* in the listing: the entry of a known object */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct uobj *objs;
	size_t n;
	unsigned long long adds, subs;
	int have_counts;
	struct cp_unwind_set *set;  /* what cp_sig.unwind points to */
	int eager;                  /* every table built when listed */
	void **retired;             /* to free once no handler can see them */
	size_t nretired, capretired;
} loaded; /* the loaded objects and their tables */
/* When cp_unwind_tick() last looked, and last looked because of a miss
 * (CLOCK_MONOTONIC ns): the first miss is looked into at once, later ones
 * at most every MISS_CHECK_NS. */
static _Atomic uint64_t last_check, last_miss_check;

/* Queues p to be freed once no handler can see it; frees it now if the
 * queue cannot grow (after waiting for the handlers). */
static void retire(void *p)
{
	if (!p)
		return;
	if (cp_array_grow((void **)&loaded.retired, &loaded.capretired, loaded.nretired + 1, sizeof *loaded.retired, 16)) {
		/* Out of memory: wait for a moment with no handler. */
		for (int i = 0; i < 100000 && atomic_load(&cp_sig.inflight); i++)
			sched_yield();
		if (atomic_load(&cp_sig.inflight) == 0)
			free(p);
		return; /* else leak it: never free what a handler may read */
	}
	loaded.retired[loaded.nretired++] = p;
}

/* Finds the object with this identity among the current ones. */
static struct uobj *find_obj(uintptr_t addr, const void *phdr, const char *key, uint64_t hdr_sum)
{
	for (size_t i = 0; i < loaded.n; i++)
		if (loaded.objs[i].addr == addr && loaded.objs[i].phdr == phdr && loaded.objs[i].hdr_sum == hdr_sum &&
		    !strcmp(loaded.objs[i].key, key))
			return &loaded.objs[i];
	return NULL;
}

/* The object's .eh_frame_hdr in memory (its PT_GNU_EH_FRAME, if that lies
 * inside a readable loaded segment) into *hdr, *size; 0 if none. */
static int find_hdr(const struct dl_phdr_info *info, const ElfW(Phdr) **eh, const uint8_t **hdr, size_t *size)
{
	*eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			*eh = &info->dlpi_phdr[i];
	if (!*eh)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && (*eh)->p_vaddr >= ph->p_vaddr &&
		    (*eh)->p_vaddr + (*eh)->p_memsz <= ph->p_vaddr + ph->p_filesz) {
			*hdr = (const uint8_t *)(info->dlpi_addr + (*eh)->p_vaddr);
			*size = (*eh)->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* A hash of the .eh_frame_hdr (FNV-1a's steps, a word at a time: it is
 * hashed again at every load and unload, and a start hashes every
 * object's): a library unloaded and another (or a rebuilt one) loaded at
 * the same address gets a new table. */
static uint64_t hdr_checksum(const struct dl_phdr_info *info)
{
	const ElfW(Phdr) *eh;
	const uint8_t *hdr;
	size_t size;
	uint64_t h = 0xcbf29ce484222325ull;
	if (!find_hdr(info, &eh, &hdr, &size))
		return h;
	size_t i = 0;
	for (uint64_t w; i + sizeof w <= size; i += sizeof w) {
		memcpy(&w, hdr + i, sizeof w);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < size; i++)
		h = (h ^ hdr[i]) * 0x100000001b3ull;
	return h;
}

/* The main program's path (dl_iterate_phdr names it ""), malloc'd. */
static char *exe_name(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return strdup("[main program]");
	buf[n] = '\0';
	return strdup(buf);
}

/* Listing state for dl_iterate_phdr. */
struct listing {
	struct uobj *objs;     /* new list under construction */
	size_t n, cap;
	int oom;
	unsigned long long adds, subs;
	int have_counts;
	int counts_only;       /* only read the counters */
};

/* Fills o (a new object) from its program headers: executable ranges and
 * a copy of its .eh_frame.  Runs under the loader's lock: copies only. */
static void take_object(struct uobj *o, const struct dl_phdr_info *info)
{
	const ElfW(Phdr) *eh = NULL;
	const uint8_t *hdr_mem;
	size_t hdr_size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz && o->ntext < MAX_TEXT) {
			o->text[o->ntext].lo = info->dlpi_addr + ph->p_vaddr;
			o->text[o->ntext].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			o->ntext++;
		}
		if (ph->p_type == PT_NOTE && !o->build_id[0] && ph->p_filesz <= (1u << 16))
			cp_elf_notes_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_filesz,
					      ph->p_align == 8 ? 8 : 4, o->build_id);
	}
	o->state = CP_UR_NONE;
	int have_hdr = find_hdr(info, &eh, &hdr_mem, &hdr_size);
	if (!eh) {
		snprintf(o->why, sizeof o->why, "no .eh_frame_hdr");
		return;
	}
	if (!have_hdr) {
		snprintf(o->why, sizeof o->why, ".eh_frame_hdr outside its readable segments");
		o->rejected = 1;
		return;
	}
	uintptr_t hdr = (uintptr_t)hdr_mem;
	const ElfW(Phdr) *eh_seg = NULL;
	uint64_t eh_frame;
	char err[128];
	if (cp_ehframe_hdr_parse(hdr_mem, hdr_size, hdr, &eh_frame, &o->fde_count, err, sizeof err) < 0) {
		snprintf(o->why, sizeof o->why, "%s", err);
		o->rejected = 1;
		return;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && eh_frame >= lo && eh_frame < lo + ph->p_filesz)
			eh_seg = ph;
	}
	if (!eh_seg) {
		snprintf(o->why, sizeof o->why, ".eh_frame outside its readable segments");
		o->rejected = 1;
		return;
	}
	/* .eh_frame's size is not recorded anywhere in memory: up to the end
	 * of its segment; the parser stops at its terminator. */
	o->eh_copy_size = (size_t)(info->dlpi_addr + eh_seg->p_vaddr + eh_seg->p_filesz - eh_frame);
	o->eh_addr = (uintptr_t)eh_frame;
	o->hdr_mem = hdr_mem;
	o->hdr_size = hdr_size;
	o->state = CP_UR_LAZY;
}

/* Copies o's .eh_frame and .eh_frame_hdr out of its memory.  Runs under
 * the loader's lock, while the object is listed there: copies only. */
static void copy_eh_frame(struct uobj *o)
{
	o->eh_copy = malloc(o->eh_copy_size ? o->eh_copy_size : 1);
	o->hdr_copy = malloc(o->hdr_size ? o->hdr_size : 1);
	if (!o->eh_copy || !o->hdr_copy) {
		free(o->eh_copy);
		free(o->hdr_copy);
		o->eh_copy = o->hdr_copy = NULL;
		snprintf(o->why, sizeof o->why, "out of memory");
		o->state = CP_UR_NONE;
		return;
	}
	memcpy(o->eh_copy, (const void *)o->eh_addr, o->eh_copy_size);
	memcpy(o->hdr_copy, o->hdr_mem, o->hdr_size);
}

/* dl_iterate_phdr callback: the counters, then one listing entry per
 * object (a known one keeps its table; a new one notes where its
 * .eh_frame is).  Runs under the loader's lock: no parsing here. */
static int list_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct listing *l = arg;
	if (!l->have_counts && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		l->adds = info->dlpi_adds;
		l->subs = info->dlpi_subs;
		l->have_counts = 1;
	}
	if (l->counts_only)
		return 1;
	if (l->oom)
		return 0;
	if (cp_array_grow((void **)&l->objs, &l->cap, l->n + 1, sizeof *l->objs, 32)) {
		l->oom = 1;
		return 0;
	}
	const char *key = info->dlpi_name ? info->dlpi_name : "";
	uint64_t sum = hdr_checksum(info);
	struct uobj *old = find_obj(info->dlpi_addr, info->dlpi_phdr, key, sum);
	struct uobj *o = &l->objs[l->n];
	if (old) {
		*o = *old;
		o->reused = 1;
		o->name = strdup(old->name);
	} else {
		memset(o, 0, sizeof *o);
		o->addr = info->dlpi_addr;
		o->phdr = info->dlpi_phdr;
		o->hdr_sum = sum;
		o->name = key[0] ? strdup(key) : exe_name();
		take_object(o, info);
	}
	o->key = strdup(key);
	l->n++;
	if (!o->key || !o->name)
		l->oom = 1;
	return 0;
}

/* Frees a listing's own parts (not tables). */
static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->objs[i].key);
		free(l->objs[i].name);
		free(l->objs[i].eh_copy);
		free(l->objs[i].hdr_copy);
	}
	free(l->objs);
}

/* Parses and encodes the copied .eh_frame of o, or takes its table from
 * the table cache; frees the copies.  The cache holds tables as built from
 * the file, in link-time addresses, and made from the bytes and code
 * ranges the file has there: o's are its run-time ones less its load
 * bias.  Only the table's bounds are addresses; the rest is offsets from
 * them. */
static void build_object(struct uobj *o)
{
	if (!o->eh_copy)
		return;
	uint64_t t0 = cp_mono_ns();
	struct ehf_result r;
	char err[160];
	struct ehf_range link[MAX_TEXT];
	struct cp_utab_source src;
	if (o->build_id[0]) {
		for (size_t k = 0; k < o->ntext; k++)
			link[k] = (struct ehf_range){ o->text[k].lo - o->addr, o->text[k].hi - o->addr };
		cp_utab_source_init(&src, o->hdr_copy, o->hdr_size, o->eh_copy, o->eh_copy_size, link,
				    o->ntext * sizeof link[0]);
	}
	o->eh_bytes = o->eh_copy_size;
	if (o->build_id[0] && (o->tab = cp_utab_cache_load(o->build_id, &src, &o->tab_bytes))) {
		o->tab->start += o->addr;
		o->tab->end += o->addr;
		o->cached = 1;
	} else if (cp_ehframe_parse(o->eh_copy, o->eh_copy_size, o->eh_addr, o->fde_count, o->text, o->ntext, &r, err,
			  sizeof err) < 0) {
		snprintf(o->why, sizeof o->why, "%s", err);
		o->rejected = 1;
	} else {
		o->eh_bytes = r.used;
		o->fdes = r.nfdes;
		o->rows = r.nrows;
		o->tab = cp_unwind_build(&r, &o->tab_bytes, err, sizeof err);
		if (!o->tab) {
			snprintf(o->why, sizeof o->why, "%s", err);
		} else if (o->build_id[0]) {
			o->tab->start -= o->addr; /* not published yet */
			o->tab->end -= o->addr;
			cp_utab_cache_save(o->build_id, &src, o->tab, o->tab_bytes);
			o->tab->start += o->addr;
			o->tab->end += o->addr;
		}
		cp_ehframe_free(&r);
	}
	o->state = o->tab ? CP_UR_TABLE : CP_UR_NONE;
	free(o->eh_copy);
	free(o->hdr_copy);
	o->eh_copy = o->hdr_copy = NULL;
	o->build_ns = cp_mono_ns() - t0;
}

/* qsort order of ranges: by start address. */
static int range_cmp(const void *a, const void *b)
{
	const struct cp_urange *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Publishes a new set for loaded.objs and retires the one it replaces.  Under
 * lock.  0, or -1 if out of memory (the old set stays). */
static int publish_locked(void)
{
	size_t n = 0;
	for (size_t i = 0; i < loaded.n; i++)
		n += loaded.objs[i].ntext;
	struct cp_unwind_set *set = malloc(sizeof *set + (n ? n : 1) * sizeof set->r[0]);
	if (!set)
		return -1;
	static uint64_t generation;
	set->gen = ++generation;
	set->n = 0;
	for (size_t i = 0; i < loaded.n; i++) {
		const struct uobj *o = &loaded.objs[i];
		for (size_t k = 0; k < o->ntext; k++)
			set->r[set->n++] = (struct cp_urange){ .lo = o->text[k].lo, .hi = o->text[k].hi, .tab = o->tab,
							     .obj = (uint32_t)i, .state = (uint32_t)o->state };
	}
	qsort(set->r, set->n, sizeof set->r[0], range_cmp);
	size_t k = 0;
	for (size_t i = 0; i < set->n; i++)
		if (set->r[i].hi > set->r[i].lo && (!k || set->r[i].lo >= set->r[k - 1].hi))
			set->r[k++] = set->r[i];
	set->n = k;
	atomic_store_explicit(&cp_sig.unwind, set, memory_order_seq_cst);
	retire(loaded.set);
	loaded.set = set;
	return 0;
}

static void build_all_locked(void);

/* Lists the objects (building their tables if eager), publishes the new
 * set and retires the tables of the objects that are gone.  Under lock. */
static void rebuild_locked(void)
{
	struct listing l = { 0 };
	cp_loader_walk(list_cb, &l);
	if (l.oom) {
		listing_free(&l);
		return; /* keep the old set; the next look tries again */
	}
	struct uobj *old = loaded.objs;
	size_t nold = loaded.n;
	loaded.objs = l.objs;
	loaded.n = l.n;
	/* Before the set is published: no walk sees these objects lazy. */
	if (loaded.eager)
		build_all_locked();
	if (publish_locked() < 0) {
		loaded.objs = old;
		loaded.n = nold;
		/* Tables just built, never published: no walk can see them. */
		for (size_t i = 0; i < l.n; i++) {
			int known = 0;
			for (size_t j = 0; j < nold && !known; j++)
				known = old[j].tab == l.objs[i].tab;
			if (!known)
				free(l.objs[i].tab);
		}
		listing_free(&l);
		return;
	}
	for (size_t j = 0; j < nold; j++) {
		int kept = 0;
		for (size_t i = 0; i < l.n && !kept; i++)
			kept = old[j].tab && l.objs[i].tab == old[j].tab;
		if (!kept)
			retire(old[j].tab);
		free(old[j].key);
		free(old[j].name);
	}
	for (size_t i = 0; i < l.n; i++)
		l.objs[i].reused = 0;
	free(old);
	loaded.adds = l.adds;
	loaded.subs = l.subs;
	loaded.have_counts = l.have_counts;
}

/* dl_iterate_phdr callback of build_wanted_locked(): copies the .eh_frame
 * of each object that is still loaded and marked wanted (arg). */
static int copy_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	const uint8_t *wanted = arg;
	for (size_t i = 0; i < loaded.n; i++) {
		struct uobj *o = &loaded.objs[i];
		if (wanted[i] && o->state == CP_UR_LAZY && !o->eh_copy && o->addr == info->dlpi_addr &&
		    o->phdr == (const void *)info->dlpi_phdr)
			copy_eh_frame(o);
	}
	return 0;
}

/* Copies and builds the tables of the objects of loaded.objs marked in wanted
 * (loaded.n entries; only those not built yet count).  Under lock; publishes
 * nothing.  Returns how many it built. */
static size_t build_marked_locked(uint8_t *wanted)
{
	size_t n = 0;
	for (size_t i = 0; i < loaded.n; i++) {
		wanted[i] = wanted[i] && loaded.objs[i].state == CP_UR_LAZY;
		n += wanted[i];
	}
	if (!n)
		return 0;
	cp_loader_walk(copy_cb, wanted);
	for (size_t i = 0; i < loaded.n; i++)
		if (wanted[i])
			build_object(&loaded.objs[i]);
	return n;
}

/* Eager: builds every table of loaded.objs not built yet.  Under lock; publishes
 * nothing.  Out of memory, they stay to be built when wanted. */
static void build_all_locked(void)
{
	uint8_t *all = loaded.n ? malloc(loaded.n) : NULL;
	if (!all)
		return;
	memset(all, 1, loaded.n);
	build_marked_locked(all);
	free(all);
}

/* Builds the tables the walks asked for (cp_sig.unwind_want) and
 * publishes them.  Under lock.  Returns 1 if it built any. */
static int build_wanted_locked(void)
{
	uint64_t want[CP_UNWIND_WANT_WORDS];
	int any = 0;
	for (int i = 0; i < CP_UNWIND_WANT_WORDS; i++)
		any |= (want[i] = atomic_exchange(&cp_sig.unwind_want[i], 0)) != 0;
	if (!any || !loaded.n)
		return 0;
	int all = (want[CP_UNWIND_WANT_ANY / 64] >> (CP_UNWIND_WANT_ANY % 64)) & 1;
	uint8_t *wanted = calloc(loaded.n, 1);
	if (!wanted)
		return 0;
	for (size_t i = 0; i < loaded.n; i++)
		wanted[i] = all || (i < CP_UNWIND_WANT_ANY && (want[i / 64] >> (i % 64)) & 1);
	size_t n = build_marked_locked(wanted);
	if (n)
		publish_locked();
	free(wanted);
	return n > 0;
}

int cp_unwind_build_wanted(void)
{
	pthread_mutex_lock(&lock);
	int built = cp_sig.unwind_mode != CP_UNWIND_FP && build_wanted_locked();
	pthread_mutex_unlock(&lock);
	return built;
}

void cp_unwind_start(int mode, int eager)
{
	pthread_mutex_lock(&lock);
	cp_sig.unwind_mode = mode;
	loaded.eager = eager;
	atomic_store(&cp_sig.unwind_miss, 0);
	atomic_store(&last_check, cp_mono_ns());
	atomic_store(&last_miss_check, 0);
	if (mode != CP_UNWIND_FP) {
		/* Without the cache (no memory) every lookup searches. */
		void *c = mmap(NULL, sizeof(struct cp_ucache), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		cp_sig.ucache = c == MAP_FAILED ? NULL : c;
		rebuild_locked();
	}
	pthread_mutex_unlock(&lock);
}

int cp_unwind_refresh(void)
{
	int changed = 0;
	pthread_mutex_lock(&lock);
	if (cp_sig.unwind_mode != CP_UNWIND_FP) {
		struct listing l = { .counts_only = 1 };
		cp_loader_walk(list_cb, &l);
		if (!l.have_counts || !loaded.have_counts || l.adds != loaded.adds || l.subs != loaded.subs) {
			rebuild_locked();
			changed = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	return changed;
}

void cp_unwind_reclaim(void)
{
	pthread_mutex_lock(&lock);
	if (loaded.nretired && atomic_load_explicit(&cp_sig.inflight, memory_order_seq_cst) == 0) {
		for (size_t i = 0; i < loaded.nretired; i++)
			free(loaded.retired[i]);
		loaded.nretired = 0;
	}
	pthread_mutex_unlock(&lock);
}

int cp_unwind_tick(void)
{
	int changed = 0;
	uint64_t now = cp_mono_ns();
	int periodic = now - atomic_load(&last_check) >= CHECK_NS;
	int missed = atomic_load(&cp_sig.unwind_miss) && now - atomic_load(&last_miss_check) >= MISS_CHECK_NS;
	if (periodic || missed) {
		atomic_store(&last_check, now);
		if (missed) {
			atomic_store(&last_miss_check, now);
			/* Cleared first: a miss after this look asks for another. */
			atomic_store(&cp_sig.unwind_miss, 0);
		}
		changed = cp_unwind_refresh();
	}
	changed |= cp_unwind_build_wanted();
	cp_unwind_reclaim();
	return changed;
}

int cp_unwind_timeout_ms(int max)
{
	if (!atomic_load(&cp_sig.unwind_miss))
		return max;
	int64_t left = (int64_t)(atomic_load(&last_miss_check) + MISS_CHECK_NS - cp_mono_ns());
	int ms = left > 0 ? (int)(left / 1000000) + 1 : 0;
	return ms < max ? ms : max;
}

void cp_unwind_stop(int quiet)
{
	pthread_mutex_lock(&lock);
	atomic_store(&cp_sig.unwind, NULL);
	if (!quiet) {
		/* A stuck handler may still read any of it: leak it all. */
		cp_sig.ucache = NULL;
		free(loaded.retired);
		for (size_t i = 0; i < loaded.n; i++) {
			free(loaded.objs[i].key);
			free(loaded.objs[i].name);
		}
		free(loaded.objs);
		memset(&loaded, 0, sizeof loaded);
		pthread_mutex_unlock(&lock);
		return;
	}
	/* No handler can see anything now.  The objects' tables stay for
	 * the next profile to reuse (those of objects still loaded then):
	 * starting again parses nothing twice. */
	if (cp_sig.ucache)
		munmap(cp_sig.ucache, sizeof(struct cp_ucache));
	cp_sig.ucache = NULL;
	for (size_t i = 0; i < loaded.nretired; i++)
		free(loaded.retired[i]);
	free(loaded.retired);
	loaded.retired = NULL;
	loaded.nretired = loaded.capretired = 0;
	free(loaded.set);
	loaded.set = NULL;
	loaded.have_counts = 0;
	pthread_mutex_unlock(&lock);
}

void cp_unwind_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	atomic_store(&cp_sig.unwind, NULL);
	cp_sig.ucache = NULL;
	memset(&loaded, 0, sizeof loaded); /* the parent's tables leak in the child */
}

void cp_unwind_each_object(void (*fn)(const struct unwind_object *o, void *arg), void *arg)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < loaded.n; i++) {
		const struct uobj *u = &loaded.objs[i];
		struct unwind_object o = {
			.name = u->name,
			.has_table = u->tab != NULL,
			.table_bytes = u->tab_bytes,
			.eh_frame_bytes = u->eh_bytes,
			.fdes = u->fdes,
			.rows = u->rows,
			.build_ns = u->build_ns,
			.cached = u->cached,
			.why = u->tab ? "" : u->why,
			.rejected = u->rejected,
		};
		fn(&o, arg);
	}
	pthread_mutex_unlock(&lock);
}
