/*
 * collect.c -- `cpuprof record`'s side of the shared memory (collect.h).
 * A slot is read in this order: its image's identity once it is claimed,
 * then at every pass its facts (a seqlock), the objects and names
 * published since, and the samples committed since; a slot whose process
 * said it ended, or died (its pidfd says so), is drained to the end --
 * cells its process claimed and never committed are skipped -- and given
 * back for another process to take.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "sig/ring.h"
#include "symbolize/jit.h"

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

int cp_collect_create(struct cp_collector *c, uint32_t nslots, uint32_t cells, uint32_t depth, char *why,
		      size_t len)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	size_t head = round_up(sizeof(struct cp_shm_header), 4096);
	size_t ring_offset = round_up(sizeof(struct cp_shm_slot), 64);
	size_t slot = round_up(ring_offset + cp_ring_size(cells, depth), 4096);
	c->size = head + (size_t)nslots * slot;
	c->fd = memfd_create("cpuprof-record", MFD_CLOEXEC);
	if (c->fd < 0 || ftruncate(c->fd, (off_t)c->size) < 0) {
		snprintf(why, len, "shared memory for the profiled processes: %s", strerror(errno));
		if (c->fd >= 0)
			close(c->fd);
		return -1;
	}
	void *p = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	c->by_slot = calloc(nslots, sizeof *c->by_slot);
	c->claims_seen = calloc(nslots, sizeof *c->claims_seen);
	if (p == MAP_FAILED || !c->by_slot || !c->claims_seen || (cells & (cells - 1))) {
		snprintf(why, len, "shared memory for the profiled processes: %s", strerror(errno));
		close(c->fd);
		free(c->by_slot);
		free(c->claims_seen);
		return -1;
	}
	c->hdr = p;
	c->hdr->magic = CP_SHM_MAGIC;
	c->hdr->version = CP_SHM_VERSION;
	c->hdr->nslots = nslots;
	c->hdr->slot_size = slot;
	c->hdr->ring_offset = ring_offset;
	c->hdr->ring_cells = cells;
	c->hdr->depth = depth;
	c->hdr->record_pid = (int32_t)getpid();
	c->hdr->slots_offset = head;
	c->geo.nslots = nslots;
	c->geo.cells = cells;
	c->geo.depth = depth;
	c->geo.slot_size = slot;
	c->geo.ring_offset = ring_offset;
	c->geo.slots_offset = head;
	snprintf(c->path, sizeof c->path, "/proc/%d/fd/%d", (int)getpid(), c->fd);
	return 0;
}

static struct cp_shm_slot *slot_at(const struct cp_collector *c, uint32_t i)
{
	return (struct cp_shm_slot *)((uint8_t *)c->hdr + c->geo.slots_offset + (uint64_t)i * c->geo.slot_size);
}

/* The image of slot i, just claimed: who it is. */
static struct cp_image *take_image(struct cp_collector *c, uint32_t i, struct cp_shm_slot *s)
{
	struct cp_image *m = cp_tree_new_image(&c->tree);
	if (!m)
		return NULL;
	m->slot = i;
	m->pid = s->pid;
	m->ppid = s->ppid;
	m->start_ns = s->start_ns;
	memcpy(m->exe, s->exe, sizeof m->exe);
	m->exe[sizeof m->exe - 1] = '\0';
	memcpy(m->comm, s->comm, sizeof m->comm);
	m->comm[sizeof m->comm - 1] = '\0';
	cp_image_add_epoch(m, 0);
	/* An earlier image of the same process exec'd into this one. */
	for (size_t k = 0; k + 1 < c->tree.nimages; k++) {
		struct cp_image *o = c->tree.images[k];
		if (o->pid == m->pid && !o->replaced && !(o->done && o->facts.ended != CP_END_EXEC)) {
			if (o->order + 1 > m->order)
				m->order = o->order + 1;
			if (o->facts.exec_pending)
				o->replaced = o->dead = 1;
		}
	}
	m->pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0);
	if (m->pidfd < 0 && errno == ESRCH)
		m->dead = 1;
	c->by_slot[i] = m;
	return m;
}

static void read_facts(struct cp_image *m, struct cp_shm_slot *s)
{
	for (int tries = 0; tries < 8; tries++) {
		uint32_t a = atomic_load_explicit(&s->facts_seq, memory_order_acquire);
		if (a & 1)
			continue;
		struct cp_facts f;
		memcpy(&f, &s->facts, sizeof f);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->facts_seq, memory_order_relaxed) != a)
			continue;
		if (a == 0)
			return; /* nothing published yet */
		/* Strings from another process: ended where we say. */
		f.engine[sizeof f.engine - 1] = '\0';
		f.engine_reason[sizeof f.engine_reason - 1] = '\0';
		f.stopped_why[sizeof f.stopped_why - 1] = '\0';
		f.unsampled_what[sizeof f.unsampled_what - 1] = '\0';
		for (size_t i = 0; i < sizeof f.unwind_rejected / sizeof f.unwind_rejected[0]; i++)
			f.unwind_rejected[i][sizeof f.unwind_rejected[i] - 1] = '\0';
		m->facts = f;
		m->have_facts = 1;
		return;
	}
}

/* Do two objects' executable segments overlap? */
static int overlap(const struct cp_shm_obj *a, const struct cp_shm_obj *b)
{
	for (uint32_t i = 0; i < a->nsegs; i++)
		for (uint32_t j = 0; j < b->nsegs; j++)
			if (a->segs[i].start < b->segs[j].limit && b->segs[j].start < a->segs[i].limit)
				return 1;
	return 0;
}

static void read_objects(struct cp_image *m, struct cp_shm_slot *s)
{
	uint32_t n = atomic_load_explicit(&s->nobjs, memory_order_acquire);
	if (n > CP_SHM_MAX_OBJS || n <= m->nobjs)
		return;
	struct cp_shm_obj *objs = realloc(m->objs, n * sizeof *objs);
	if (!objs)
		return;
	m->objs = objs;
	for (uint32_t i = m->nobjs; i < n; i++) {
		struct cp_shm_obj *o = &objs[i];
		*o = s->objs[i];
		o->path[sizeof o->path - 1] = '\0';
		o->build_id[sizeof o->build_id - 1] = '\0';
		if (o->nsegs > CP_SHM_MAX_SEGS)
			o->nsegs = 0;
		/* Loaded where another one was: samples from here on belong
		 * to a new set of objects. */
		int clash = 0;
		for (uint32_t k = 0; k < i && !clash; k++)
			clash = overlap(o, &objs[k]);
		if (clash && m->epochs && m->epochs[m->nepochs - 1].gen < o->gen)
			cp_image_add_epoch(m, o->gen);
	}
	m->nobjs = n;
}

static void read_names(struct cp_image *m, struct cp_shm_slot *s)
{
	uint32_t n = atomic_load_explicit(&s->nnames, memory_order_acquire);
	if (n > CP_SHM_MAX_NAMES || n <= m->nnames)
		return;
	if (n > m->capnames) {
		struct cp_image_name *names = realloc(m->names, n * sizeof *names);
		if (!names)
			return;
		m->names = names;
		m->capnames = n;
	}
	for (uint32_t i = (uint32_t)m->nnames; i < n; i++) {
		m->names[i].tid = s->names[i].tid;
		memcpy(m->names[i].name, s->names[i].name, sizeof m->names[i].name);
		m->names[i].name[sizeof m->names[i].name - 1] = '\0';
	}
	m->nnames = n;
}

/* Moves the slot's committed samples into m.  If the process is gone,
 * cells it claimed and never committed are skipped.  0, or -1 if the ring
 * is not what record laid out. */
static int drain(struct cp_collector *c, struct cp_image *m, struct cp_shm_slot *s, int gone)
{
	struct cp_ring *r = (struct cp_ring *)((uint8_t *)s + c->geo.ring_offset);
	uint32_t depth = c->geo.depth;
	if (r->cells != c->geo.cells)
		return -1;
	if (r->depth != depth || r->cell_size < sizeof(struct cp_sample) + depth * sizeof(uintptr_t) ||
	    (uint8_t *)r + sizeof *r + (uint64_t)r->cells * r->cell_size > (uint8_t *)s + c->geo.slot_size)
		return -1;
	for (;;) {
		struct cp_sample *x = cp_ring_peek(r);
		if (!x) {
			if (gone && cp_ring_skip(r))
				continue;
			return 0;
		}
		uint32_t n = x->n <= depth ? x->n : depth;
		struct cp_epoch *e = m->epochs ? cp_image_epoch_for(m, x->gen) : NULL;
		if (!e || cp_stacktab_add_at(&e->tab, x->tid, x->pcs, n, x->flags & 3u, x->weight_ns, x->time) < 0) {
			m->dropped++;
			m->dropped_ns += x->weight_ns;
		} else {
			m->samples++;
			m->sampled_ns += x->weight_ns;
		}
		cp_ring_release(r, x);
	}
}

/* The image is done: its slot goes back. */
static void give_back(struct cp_collector *c, struct cp_image *m, struct cp_shm_slot *s)
{
	m->done = 1;
	/* What its JIT named, now that it has ended (or exec'd). */
	if (!m->jit)
		m->jit = cp_jit_load(m->pid);
	if (m->pidfd >= 0 && !m->dead) {
		struct pollfd p = { m->pidfd, POLLIN, 0 };
		m->dead = poll(&p, 1, 0) == 1;
	}
	c->by_slot[m->slot] = NULL;
	atomic_store_explicit(&s->state, CP_SLOT_FREE, memory_order_release);
}

void cp_collect_poll(struct cp_collector *c)
{
	for (uint32_t i = 0; i < c->geo.nslots; i++) {
		struct cp_shm_slot *s = slot_at(c, i);
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		struct cp_image *m = c->by_slot[i];
		if (state == CP_SLOT_FREE)
			continue;
		if (!m) {
			/* Claimed: wait until its identity is written (the
			 * count moves last). */
			uint32_t claims = atomic_load_explicit(&s->claims, memory_order_acquire);
			if (claims == c->claims_seen[i])
				continue;
			c->claims_seen[i] = claims;
			if (!(m = take_image(c, i, s)))
				continue;
		}
		read_facts(m, s);
		read_objects(m, s);
		read_names(m, s);
		if (!m->dead && m->pidfd >= 0) {
			struct pollfd p = { m->pidfd, POLLIN, 0 };
			m->dead = poll(&p, 1, 0) == 1;
		}
		int ended = atomic_load_explicit(&s->state, memory_order_acquire) == CP_SLOT_ENDED;
		if (ended)
			read_facts(m, s);
		if (drain(c, m, s, m->dead && !ended) < 0) {
			snprintf(m->corrupt, sizeof m->corrupt, "its ring in the shared memory was overwritten");
			give_back(c, m, s);
			continue;
		}
		if (ended || m->dead)
			give_back(c, m, s);
	}
	struct cp_shm_header *h = c->hdr;
	uint32_t n = atomic_load_explicit(&h->nreaped, memory_order_acquire);
	if (n > CP_SHM_MAX_REAPED)
		n = CP_SHM_MAX_REAPED;
	for (; c->reaped_seen < n; c->reaped_seen++) {
		struct cp_shm_reaped *r = &h->reaped[c->reaped_seen];
		if (!atomic_load_explicit(&r->ready, memory_order_acquire))
			break;
		cp_tree_status(&c->tree, r->pid, r->status, r->cpu_ns);
	}
	c->tree.no_slot = atomic_load(&h->no_slot);
}

/* The CPU the kernel has charged to process pid so far, or 0. */
static int64_t process_cpu_ns(pid_t pid)
{
	clockid_t id;
	struct timespec ts;
	if (clock_getcpuclockid(pid, &id) != 0 || clock_gettime(id, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void cp_collect_finish(struct cp_collector *c)
{
	cp_collect_poll(c);
	/* What still runs (a daemon the command left behind) is taken as it
	 * is now: its samples, and the kernel's count of its CPU (what it
	 * published last is up to 0.2 s older than its samples). */
	for (uint32_t i = 0; i < c->geo.nslots; i++) {
		struct cp_image *m = c->by_slot[i];
		if (m) {
			struct cp_shm_slot *s = slot_at(c, i);
			read_facts(m, s);
			if (!m->dead)
				m->live_cpu_ns = process_cpu_ns(m->pid);
			if (!m->jit)
				m->jit = cp_jit_load(m->pid);
			drain(c, m, s, 0);
		}
	}
	/* A perf engine's samples that held more than their threads' CPU
	 * clocks: the library took nothing off (they were ours already) and
	 * says how much was too much. */
	for (size_t i = 0; i < c->tree.nimages; i++) {
		struct cp_image *m = c->tree.images[i];
		/* The periods that ended in the kernel (user-mode samples only)
		 * are in the engine's count of what the threads' samples held. */
		uint64_t held = m->sampled_ns + m->dropped_ns + m->facts.kernel_ns;
		if (m->have_facts && m->facts.ahead_ns && held) {
			double f = m->facts.ahead_ns < held ? 1.0 - (double)m->facts.ahead_ns / (double)held : 0.0;
			cp_image_scale(m, f);
			m->facts.kernel_ns = (uint64_t)((double)m->facts.kernel_ns * f + 0.5);
		}
	}
}

void cp_collect_free(struct cp_collector *c)
{
	cp_tree_free(&c->tree);
	free(c->by_slot);
	free(c->claims_seen);
	if (c->hdr)
		munmap(c->hdr, c->size);
	if (c->fd >= 0)
		close(c->fd);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}
