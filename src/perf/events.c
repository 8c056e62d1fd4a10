/*
 * events.c -- the kernel's perf_event rings (events.h): opening, sizing,
 * mapping and reading them, and the per-thread counts that weigh samples.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events.h"
#include "base/hash.h"
#include "base/testhooks.h"

#define MAX_CPUS 4096

int cp_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group, unsigned long flags)
{
	if (cp_test_no_callchain() && (a->sample_type & PERF_SAMPLE_CALLCHAIN))
		return -EINVAL;
	long fd = syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
	return fd < 0 ? -errno : (int)fd;
}

int cp_perf_paranoid(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return atoi(buf);
}

int cp_perf_rings(struct cp_perf_ring **rings, size_t *nrings)
{
	char buf[4096];
	size_t n = 0;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, buf, sizeof buf - 1);
		n = r > 0 ? (size_t)r : 0;
		close(fd);
	}
	buf[n] = '\0';
	int cpus[MAX_CPUS];
	size_t ncpu = 0;
	for (char *p = buf; *p && ncpu < MAX_CPUS;) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < MAX_CPUS && ncpu < MAX_CPUS; c++)
			cpus[ncpu++] = (int)c;
		p = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	if (ncpu == 0) {
		long conf = sysconf(_SC_NPROCESSORS_CONF);
		for (long c = 0; c < (conf > 0 ? conf : 1) && c < MAX_CPUS; c++)
			cpus[ncpu++] = (int)c;
	}
	struct cp_perf_ring *r = calloc(ncpu, sizeof *r);
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < ncpu; i++) {
		r[i].cpu = cpus[i];
		r[i].fd = -1;
	}
	*rings = r;
	*nrings = ncpu;
	return 0;
}

unsigned cp_perf_ring_pages(size_t n, unsigned want)
{
	unsigned pages = CP_PERF_RING_PAGES_MIN;
	while (pages < want && pages < CP_PERF_RING_PAGES_MAX)
		pages *= 2;
	if (geteuid() == 0)
		return pages;
	char buf[32] = "";
	int fd = open("/proc/sys/kernel/perf_event_mlock_kb", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, buf, sizeof buf - 1);
		buf[r > 0 ? r : 0] = '\0';
		close(fd);
	}
	uint64_t kb = buf[0] ? strtoull(buf, NULL, 10) : 516;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t budget = kb * 1024u * (uint64_t)(cpus > 0 ? cpus : 1);
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
		budget += rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX / 2 : rl.rlim_cur;
	while (pages > CP_PERF_RING_PAGES_MIN && (uint64_t)(pages + 1) * 4096u * n > budget)
		pages /= 2;
	return pages;
}

int cp_perf_ring_map(struct cp_perf_ring *r, int fd, unsigned *pages)
{
	void *p;
	while ((p = mmap(NULL, (size_t)(*pages + 1) * 4096u, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		if (*pages <= CP_PERF_RING_PAGES_MIN || (errno != EPERM && errno != ENOMEM))
			return -errno;
		*pages /= 2; /* the next rings need not try more */
	}
	r->page = p;
	r->fd = fd;
	r->map_bytes = (size_t)(*pages + 1) * 4096u;
	r->size = r->page->data_size ? r->page->data_size : (uint64_t)*pages * 4096u;
	r->data = (uint8_t *)p + (r->page->data_offset ? r->page->data_offset : 4096u);
	return 0;
}

void cp_perf_ring_unmap(struct cp_perf_ring *r)
{
	if (r->page)
		munmap(r->page, r->map_bytes);
	r->page = NULL;
	r->data = NULL;
}

uint64_t cp_perf_ring_used(const struct cp_perf_ring *r)
{
	if (!r->page)
		return 0;
	uint64_t head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
	return head - r->page->data_tail;
}

int cp_perf_take(struct cp_perf_rec *r, void *out, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return 0;
	memcpy(out, r->p, n);
	r->p += n;
	return 1;
}

uint64_t cp_perf_u64(struct cp_perf_rec *r)
{
	uint64_t v = 0;
	cp_perf_take(r, &v, sizeof v);
	return v;
}

int cp_perf_take_user(struct cp_perf_rec *r, uint64_t *regs, size_t nregs, const uint8_t **stack, uint64_t *dyn)
{
	uint64_t abi = cp_perf_u64(r);
	if (abi != PERF_SAMPLE_REGS_ABI_NONE && !cp_perf_take(r, regs, nregs * sizeof regs[0]))
		return -1;
	uint64_t size = cp_perf_u64(r);
	*stack = r->p;
	*dyn = 0;
	if (size) {
		if ((uint64_t)(r->end - r->p) < size + 8)
			return -1;
		r->p += size;
		*dyn = cp_perf_u64(r);
		if (*dyn > size)
			*dyn = size;
	}
	return abi != PERF_SAMPLE_REGS_ABI_NONE;
}

uint64_t cp_perf_ring_head(const struct cp_perf_ring *rg)
{
	return rg->page ? __atomic_load_n(&rg->page->data_head, __ATOMIC_ACQUIRE) : 0;
}

void cp_perf_ring_drain(struct cp_perf_ring *rg, uint8_t *bounce, size_t bounce_size, cp_perf_record_fn *fn,
			void *arg)
{
	cp_perf_ring_drain_to(rg, cp_perf_ring_head(rg), SIZE_MAX, bounce, bounce_size, fn, arg);
}

int cp_perf_ring_drain_to(struct cp_perf_ring *rg, uint64_t end, size_t most, uint8_t *bounce, size_t bounce_size,
			  cp_perf_record_fn *fn, void *arg)
{
	if (!rg->page)
		return 0;
	uint64_t head = cp_perf_ring_head(rg);
	uint64_t tail = rg->page->data_tail, start = tail;
	uint64_t mask = rg->size - 1;
	if (end < head)
		head = end;
	while (tail < head && head - tail <= rg->size && tail - start < most) {
		struct perf_event_header h;
		uint64_t off = tail & mask;
		if (head - tail < sizeof h)
			break;
		if (off + sizeof h <= rg->size) {
			memcpy(&h, rg->data + off, sizeof h);
		} else {
			size_t first = (size_t)(rg->size - off);
			memcpy(&h, rg->data + off, first);
			memcpy((uint8_t *)&h + first, rg->data, sizeof h - first);
		}
		if (h.size < sizeof h || h.size > head - tail)
			break;
		const uint8_t *rec = rg->data + off;
		if (off + h.size > rg->size) {
			/* It wraps: read it whole from the bounce buffer. */
			if (h.size > bounce_size) {
				tail += h.size;
				continue;
			}
			size_t first = (size_t)(rg->size - off);
			memcpy(bounce, rg->data + off, first);
			memcpy(bounce + first, rg->data, h.size - first);
			rec = bounce;
		}
		fn((const struct perf_event_header *)rec, rg->cpu, arg);
		tail += h.size;
	}
	if (head > tail && head - tail > rg->size)
		tail = head;
	__atomic_store_n(&rg->page->data_tail, tail, __ATOMIC_RELEASE);
	return tail < head && tail - start >= most;
}

static uint64_t count_key(const void *e)
{
	return ((const struct cp_perf_count *)e)->key;
}

/* The entry of thread tid on cpu, made if new; NULL if out of memory. */
static struct cp_perf_count *count_get(struct cp_perf_counts *c, pid_t tid, int cpu)
{
	c->t.size = sizeof(struct cp_perf_count);
	c->t.key_of = count_key;
	uint64_t key = (uint64_t)(unsigned)tid << 32 | (unsigned)cpu;
	int made;
	struct cp_perf_count *e = cp_table_get(&c->t, key, &made);
	if (made)
		e->key = key;
	return e;
}

uint64_t cp_perf_counts_weigh(struct cp_perf_counts *c, pid_t tid, int cpu, uint64_t value, int have_value,
			      uint64_t period, uint64_t *kernel)
{
	struct cp_perf_count *e = count_get(c, tid, cpu);
	uint64_t units = period;
	if (e) {
		if (have_value) {
			units = value >= e->accounted ? value - e->accounted : value;
			e->accounted = value;
		} else {
			e->accounted += period;
		}
	}
	if (kernel) {
		/* The clock fires a little late, so a sample holds a little
		 * more than its period: only whole periods past the first
		 * half are ones that found the thread in the kernel. */
		uint64_t missed = have_value && period && units > period ? (units - period / 2) / period : 0;
		*kernel = missed * period;
		units -= *kernel;
		*kernel += *kernel * cp_test_clock_ahead_pct() / 100;
	}
	return units + units * cp_test_clock_ahead_pct() / 100;
}

uint64_t cp_perf_counts_tail(struct cp_perf_counts *c, pid_t tid, int cpu, uint64_t value)
{
	struct cp_perf_count *e = count_get(c, tid, cpu);
	if (!e || value <= e->accounted)
		return 0;
	uint64_t tail = value - e->accounted;
	e->accounted = value;
	return tail;
}

uint64_t cp_perf_unseen(int64_t gap_ns, int64_t switches)
{
	if (gap_ns <= 0 || switches <= 0)
		return 0;
	uint64_t most = (uint64_t)switches * CP_PERF_SWITCH_UNSEEN_MAX_NS;
	return (uint64_t)gap_ns < most ? (uint64_t)gap_ns : most;
}

uint64_t cp_perf_counts_accounted(const struct cp_perf_counts *c)
{
	const struct cp_perf_count *e = c->t.e;
	uint64_t sum = 0;
	for (size_t i = 0; i < c->t.cap; i++)
		sum += e[i].key ? e[i].accounted : 0;
	return sum;
}

void cp_perf_counts_free(struct cp_perf_counts *c)
{
	cp_table_free(&c->t);
}
