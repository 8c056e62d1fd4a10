/*
 * writer.c -- a profiled process's side of record's shared memory
 * (writer.h).  The mapping is made once per process and inherited by
 * forked children (it is MAP_SHARED); the descriptor it came from is
 * closed at once, so the program's closefrom() has nothing to take.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/loader.h"
#include "profile/names.h"
#include "shm.h"
#include "writer.h"
#include "sig/sigstate.h"
#include "symbolize/symbols.h"
#include "sig/clock.h"

static struct cp_shm_header *hdr;
static size_t map_size;
static struct cp_shm_slot *slot;

int cp_shm_attach(const char *path, char *why, size_t len)
{
	if (hdr)
		return 0;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof *hdr) {
		snprintf(why, len, "%s is not cpuprof record's shared memory", path);
		close(fd);
		return -1;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(why, len, "cannot map %s: %s", path, strerror(errno));
		return -1;
	}
	struct cp_shm_header *h = p;
	if (h->magic != CP_SHM_MAGIC || h->version != CP_SHM_VERSION ||
	    h->slots_offset + (uint64_t)h->nslots * h->slot_size > (uint64_t)st.st_size) {
		snprintf(why, len, "%s was made by another version of cpuprof record", path);
		munmap(p, (size_t)st.st_size);
		return -1;
	}
	hdr = h;
	map_size = (size_t)st.st_size;
	/* record learns each thread name as it changes. */
	cp_names_observe(cp_shm_name);
	return 0;
}

int cp_shm_attached(void)
{
	return hdr != NULL;
}

int cp_shm_claim(void)
{
	if (!hdr)
		return -1;
	slot = NULL;
	for (uint32_t i = 0; i < hdr->nslots && !slot; i++) {
		struct cp_shm_slot *s = cp_shm_slot_at(hdr, i);
		uint32_t free_ = CP_SLOT_FREE;
		if (atomic_compare_exchange_strong(&s->state, &free_, CP_SLOT_LIVE))
			slot = s;
	}
	if (!slot) {
		atomic_fetch_add(&hdr->no_slot, 1);
		return -1;
	}
	/* What record needs to know the image by, before anything else. */
	slot->pid = (int32_t)getpid();
	slot->ppid = (int32_t)getppid();
	slot->start_ns = cp_clock_ns(CLOCK_MONOTONIC);
	ssize_t n = readlink("/proc/self/exe", slot->exe, sizeof slot->exe - 1);
	slot->exe[n > 0 ? n : 0] = '\0';
	memset(slot->comm, 0, sizeof slot->comm);
	prctl(PR_GET_NAME, slot->comm, 0, 0, 0);
	memset(&slot->facts, 0, sizeof slot->facts);
	atomic_store(&slot->facts_seq, 0);
	atomic_store(&slot->nobjs, 0);
	atomic_store(&slot->objgen, 0);
	atomic_store(&slot->nnames, 0);
	/* A slot never claimed before is as record's memfd made it: zero. */
	cp_ring_init((uint8_t *)slot + hdr->ring_offset, hdr->ring_cells, hdr->depth,
		     atomic_load(&slot->claims) == 0);
	atomic_fetch_add(&slot->claims, 1);
	return 0;
}

struct cp_ring *cp_shm_ring(void)
{
	return slot ? (struct cp_ring *)((uint8_t *)slot + hdr->ring_offset) : NULL;
}

_Atomic uint32_t *cp_shm_wake(void)
{
	return hdr ? &hdr->wake : NULL;
}

unsigned cp_shm_depth(void)
{
	return hdr ? hdr->depth : 0;
}

void cp_shm_facts(const struct cp_facts *f)
{
	if (!slot)
		return;
	/* A seqlock: odd while being written. */
	atomic_fetch_add_explicit(&slot->facts_seq, 1, memory_order_acq_rel);
	atomic_thread_fence(memory_order_release);
	memcpy(&slot->facts, f, sizeof *f);
	atomic_fetch_add_explicit(&slot->facts_seq, 1, memory_order_release);
}

/* dl_iterate_phdr callback: the loader's counts of loads and unloads. */
static int counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

void cp_shm_objects(int always)
{
	static unsigned long long seen[2];
	if (!slot)
		return;
	unsigned long long now[2] = { 0, 0 };
	cp_loader_walk(counts, now);
	if (!always && now[0] && now[0] == seen[0] && now[1] == seen[1])
		return;
	seen[0] = now[0];
	seen[1] = now[1];
	struct cp_symbols *s = cp_symbols_load(); /* no symbol is read */
	if (!s)
		return;
	uint32_t n = atomic_load(&slot->nobjs), added = 0;
	uint32_t gen = atomic_load(&cp_sig.objgen) + 1;
	for (size_t i = 0; i < s->nobjs && n < CP_SHM_MAX_OBJS; i++) {
		const struct cp_object *o = &s->objs[i];
		const char *path = i == s->exe_index ? slot->exe : o->path;
		int known = 0;
		for (uint32_t k = 0; k < n && !known; k++)
			known = slot->objs[k].bias == o->bias && !strncmp(slot->objs[k].path, path, CP_SHM_PATH_MAX - 1);
		if (known)
			continue;
		struct cp_shm_obj *d = &slot->objs[n];
		memset(d, 0, sizeof *d);
		snprintf(d->path, sizeof d->path, "%s", path);
		snprintf(d->build_id, sizeof d->build_id, "%s", o->build_id);
		d->bias = o->bias;
		d->gen = gen;
		for (size_t g = 0; g < s->nsegs && d->nsegs < CP_SHM_MAX_SEGS; g++)
			if (s->segs[g].obj == o)
				d->segs[d->nsegs++] = (struct cp_shm_seg){ s->segs[g].start, s->segs[g].limit,
									   s->segs[g].file_offset };
		n++;
		added++;
	}
	cp_symbols_free(s);
	if (added) {
		atomic_store_explicit(&slot->nobjs, n, memory_order_release);
		atomic_store(&slot->objgen, gen);
		atomic_store(&cp_sig.objgen, gen);
	}
}

void cp_shm_name(pid_t tid, const char *name)
{
	if (!slot)
		return;
	uint32_t n = atomic_load(&slot->nnames);
	if (n >= CP_SHM_MAX_NAMES)
		return;
	slot->names[n].tid = (int32_t)tid;
	snprintf(slot->names[n].name, sizeof slot->names[n].name, "%s", name);
	atomic_store_explicit(&slot->nnames, n + 1, memory_order_release);
}

void cp_shm_reaped(pid_t pid, int status, const struct rusage *ru)
{
	if (!hdr)
		return;
	uint32_t i = atomic_fetch_add(&hdr->nreaped, 1);
	if (i >= CP_SHM_MAX_REAPED)
		return;
	struct cp_shm_reaped *r = &hdr->reaped[i];
	r->pid = (int32_t)pid;
	r->status = status;
	r->cpu_ns = ru ? ((int64_t)ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000 +
				 ((int64_t)ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000
		       : -1;
	atomic_store_explicit(&r->ready, 1, memory_order_release);
	atomic_fetch_add(&hdr->wake, 1);
}

void cp_shm_end(void)
{
	if (!slot)
		return;
	atomic_store_explicit(&slot->state, CP_SLOT_ENDED, memory_order_release);
	slot = NULL;
	cp_wake_reader();
}

void cp_shm_after_fork(void)
{
	slot = NULL;
}
