/*
 * records.c -- the sample layout, decoding and time order of the perf
 * rings' records (records.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "records.h"
#include "switches.h"
#include "base/array.h"

void cp_perf_sampling_attr(struct perf_event_attr *a, int use_read, uint32_t stack_bytes)
{
	a->sample_type = CP_PERF_SAMPLE_TYPE | (use_read ? PERF_SAMPLE_READ : 0);
	a->sample_regs_user = CP_PERF_REGS_MASK;
	a->sample_stack_user = stack_bytes;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

void cp_perf_sampler_attr(struct perf_event_attr *a, uint32_t type, uint64_t config, uint64_t period, int kernel,
			  int use_read)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = type;
	a->config = config;
	a->sample_period = period;
	a->exclude_kernel = (unsigned)!kernel;
	a->exclude_hv = 1;
	cp_perf_sampling_attr(a, use_read, CP_PERF_STACK_COPY);
	a->inherit = 1;
	a->inherit_stat = 1;
	a->task = 1;
	a->comm = 1;
}

void cp_perf_kernel_chain_attr(struct perf_event_attr *a)
{
	a->exclude_kernel = 0;
	a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->exclude_callchain_user = 1;
	/* sample_max_stack 0: kernel.perf_event_max_stack's (asking for more
	 * than it allows is refused). */
}

int cp_perf_ring_join(struct cp_perf_ring *r, int fd, unsigned *pages)
{
	if (r->fd < 0)
		return cp_perf_ring_map(r, fd, pages);
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0 ? -errno : 0;
}

int cp_perf_fds_keep(struct cp_perf_fds *l, int fd)
{
	if (cp_array_grow((void **)&l->fd, &l->cap, l->n + 1, sizeof *l->fd, 16))
		return -ENOMEM;
	l->fd[l->n++] = fd;
	return 0;
}

void cp_perf_fds_drop_last(struct cp_perf_fds *l, int fd)
{
	if (l->n && l->fd[l->n - 1] == fd)
		l->n--;
}

void cp_perf_fds_disable(const struct cp_perf_fds *l)
{
	for (size_t i = 0; i < l->n; i++)
		ioctl(l->fd[i], PERF_EVENT_IOC_DISABLE, 0);
}

void cp_perf_fds_close(struct cp_perf_fds *l, int release)
{
	for (size_t i = 0; i < l->n; i++)
		close(l->fd[i]);
	l->n = 0;
	if (release) {
		free(l->fd);
		l->fd = NULL;
		l->cap = 0;
	}
}

void cp_perf_take_name(struct cp_perf_rec *r, char *name, size_t size)
{
	size_t n = 0;
	while (n < size - 1 && r->p + n < r->end && r->p[n])
		n++;
	memcpy(name, r->p, n);
	name[n] = '\0';
}

/* sample_id_all's fields at the end of a record other than a sample:
 * pid and tid, time, CPU, id (CP_PERF_SAMPLE_TYPE's order). */
#define SAMPLE_ID_BYTES 32

/* The callchain at r into ev (its markers, PERF_CONTEXT_*, kept: the
 * reader skips them).  0 if it is short. */
static int take_chain(struct cp_perf_rec *r, struct cp_perf_event *ev)
{
	uint64_t nr;
	if (!cp_perf_take(r, &nr, 8) || nr > (uint64_t)(r->end - r->p) / 8)
		return 0;
	ev->chain = nr ? (const uint64_t *)(const void *)r->p : NULL; /* 8-aligned in the record */
	ev->nchain = (uint32_t)nr;
	r->p += 8 * nr;
	return 1;
}

static int decode_sample(struct cp_perf_rec *r, int use_read, int chain, const struct cp_switches *sw,
			 struct cp_perf_event *ev)
{
	uint32_t pt[2], cr[2];
	ev->id = cp_perf_u64(r);
	if (!cp_perf_take(r, pt, sizeof pt) || !cp_perf_take(r, &ev->time, 8) || !cp_perf_take(r, cr, sizeof cr))
		return 0;
	ev->pid = (pid_t)pt[0];
	ev->tid = (pid_t)pt[1];
	/* A context-switch event's samples carry no count (cp_switches_attr). */
	ev->is_switch = sw && cp_switches_is_switch(sw, ev->id);
	ev->value = use_read && !ev->is_switch ? cp_perf_u64(r) : 0;
	if (chain && !ev->is_switch && !take_chain(r, ev))
		return 0;
	const uint8_t *stack;
	uint64_t dyn;
	int user = cp_perf_take_user(r, ev->regs, CP_PERF_NREGS, &stack, &dyn);
	if (user < 0)
		return 0;
	ev->user = user;
	ev->data = stack;
	ev->len = (size_t)dyn;
	return 1;
}

int cp_perf_decode(const struct perf_event_header *h, int cpu, int use_read, const struct cp_switches *sw,
		   struct cp_perf_event *ev)
{
	return cp_perf_decode_chain(h, cpu, use_read, 0, sw, ev);
}

int cp_perf_decode_chain(const struct perf_event_header *h, int cpu, int use_read, int chain,
			 const struct cp_switches *sw, struct cp_perf_event *ev)
{
	const uint8_t *body = (const uint8_t *)(h + 1), *end = (const uint8_t *)h + h->size;
	struct cp_perf_rec r = { body, end };
	*ev = (struct cp_perf_event){ .type = h->type, .misc = h->misc, .cpu = cpu };
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return decode_sample(&r, use_read, chain, sw, ev);
	case PERF_RECORD_LOST:
		cp_perf_u64(&r); /* the event's id */
		ev->lost = cp_perf_u64(&r);
		return 1;
	case PERF_RECORD_THROTTLE:
		return 1;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_READ:
	case PERF_RECORD_SWITCH:
		break;
	default:
		return 0;
	}
	if ((size_t)(end - body) < SAMPLE_ID_BYTES)
		return 0;
	struct cp_perf_rec id = { end - SAMPLE_ID_BYTES, end };
	uint32_t pt[2];
	cp_perf_take(&id, pt, sizeof pt);
	ev->pid = (pid_t)pt[0];
	ev->tid = (pid_t)pt[1];
	ev->time = cp_perf_u64(&id);
	r.end = end - SAMPLE_ID_BYTES;
	if (h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT) {
		uint32_t v[4]; /* pid, ppid, tid, ptid, then the time */
		if (!cp_perf_take(&r, v, sizeof v))
			return 0;
		ev->pid = (pid_t)v[0];
		ev->ppid = (pid_t)v[1];
		ev->tid = (pid_t)v[2];
		ev->ptid = (pid_t)v[3];
		ev->time = cp_perf_u64(&r);
	} else if (h->type != PERF_RECORD_SWITCH) {
		/* MMAP2, COMM and READ lead with the task (pid, tid). */
		uint32_t v[2];
		struct cp_perf_rec at = r;
		if (!cp_perf_take(&at, v, sizeof v))
			return 0;
		ev->pid = (pid_t)v[0];
		ev->tid = (pid_t)v[1];
		if (h->type == PERF_RECORD_READ)
			ev->value = cp_perf_u64(&at);
	}
	ev->data = r.p;
	ev->len = (size_t)(r.end - r.p);
	return 1;
}

/* ---- the queue ---- */

/* An entry's bytes: the event, its chain, then its data, 8-aligned. */
static size_t entry_bytes(const struct cp_perf_event *ev)
{
	return (sizeof(struct cp_perf_event) + 8 * (size_t)ev->nchain + ev->len + 7) & ~(size_t)7;
}

int cp_perf_queue_push(struct cp_perf_queue *q, const struct cp_perf_event *ev)
{
	size_t n = entry_bytes(ev);
	if (cp_array_grow((void **)&q->buf, &q->capbuf, q->nbuf + n, 1, 256u << 10) ||
	    cp_array_grow((void **)&q->q, &q->cap, q->n + 1, sizeof *q->q, 1024))
		return -ENOMEM;
	uint8_t *at = q->buf + q->nbuf;
	memcpy(at, ev, sizeof *ev);
	size_t chain = 8 * (size_t)ev->nchain;
	if (chain)
		memcpy(at + sizeof *ev, ev->chain, chain);
	if (ev->len)
		memcpy(at + sizeof *ev + chain, ev->data, ev->len);
	q->q[q->n++] = (struct cp_perf_qent){ ev->time, q->seq++, q->nbuf, n };
	q->nbuf += n;
	if (q->nbuf > q->most)
		q->most = q->nbuf;
	if (ev->time > q->newest)
		q->newest = ev->time;
	return 0;
}

static int qent_cmp(const void *a, const void *b)
{
	const struct cp_perf_qent *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int qent_off_cmp(const void *a, const void *b)
{
	const struct cp_perf_qent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void deliver(const struct cp_perf_queue *q, const struct cp_perf_qent *e, cp_perf_deliver_fn *fn, void *arg)
{
	struct cp_perf_event ev;
	memcpy(&ev, q->buf + e->off, sizeof ev);
	size_t chain = 8 * (size_t)ev.nchain;
	ev.chain = chain ? (const uint64_t *)(const void *)(q->buf + e->off + sizeof ev) : NULL;
	ev.data = ev.len ? q->buf + e->off + sizeof ev + chain : NULL;
	fn(arg, &ev);
}

void cp_perf_queue_flush(struct cp_perf_queue *q, uint64_t until, cp_perf_deliver_fn *fn, void *arg)
{
	if (!q->n)
		return;
	qsort(q->q, q->n, sizeof *q->q, qent_cmp);
	size_t i = 0;
	for (; i < q->n && q->q[i].time < until; i++)
		deliver(q, &q->q[i], fn, arg);
	if (i == 0)
		return; /* nothing handed on: every entry's copy stays where it is */
	if (i == q->n) {
		q->n = q->nbuf = 0;
		return;
	}
	/* What is left moves to the front of the buffer: in the order of
	 * their copies, each to where the one before it ends, which is never
	 * past where it is (the next flush sorts them by time again). */
	size_t left = q->n - i, bytes = 0;
	memmove(q->q, q->q + i, left * sizeof *q->q);
	qsort(q->q, left, sizeof *q->q, qent_off_cmp);
	for (size_t j = 0; j < left; j++) {
		struct cp_perf_qent *e = &q->q[j];
		if (e->off != bytes)
			memmove(q->buf + bytes, q->buf + e->off, e->len);
		e->off = bytes;
		bytes += e->len;
	}
	q->nbuf = bytes;
	q->n = left;
}

void cp_perf_queue_free(struct cp_perf_queue *q)
{
	free(q->q);
	free(q->buf);
	memset(q, 0, sizeof *q);
}

/* The time before which ring `i`'s records not yet read cannot be (its
 * records come in time order, but for the slack between CPUs' clocks
 * and writers), or UINT64_MAX if it has none left to read this pass. */
static uint64_t ring_floor(const struct cp_perf_mark *m)
{
	if (!m->more)
		return UINT64_MAX;
	return m->last > CP_PERF_ORDER_SLACK_NS ? m->last - CP_PERF_ORDER_SLACK_NS : 0;
}

void cp_perf_drain_ordered(const struct cp_perf_drain *d, uint64_t until, cp_perf_deliver_fn *fn, void *arg)
{
	struct cp_perf_queue *q = d->q;
	size_t batch = d->budget / (d->n ? d->n : 1);
	if (batch < CP_PERF_STACK_COPY + 4096)
		batch = CP_PERF_STACK_COPY + 4096;
	for (size_t i = 0; i < d->n; i++)
		d->mark[i] = (struct cp_perf_mark){ cp_perf_ring_head(&d->rings[i]), 0, 1 };
	for (;;) {
		/* The ring read least far in time, which holds back the
		 * flush the most. */
		size_t at = d->n;
		for (size_t i = 0; i < d->n; i++)
			if (d->mark[i].more && (at == d->n || d->mark[i].last < d->mark[at].last))
				at = i;
		if (at == d->n)
			break;
		struct cp_perf_mark *m = &d->mark[at];
		q->newest = m->last;
		m->more = cp_perf_ring_drain_to(&d->rings[at], m->end, batch, d->bounce, d->bounce_size, d->rec,
						d->rec_arg);
		m->last = q->newest;
		uint64_t safe = until;
		for (size_t i = 0; i < d->n; i++) {
			uint64_t f = ring_floor(&d->mark[i]);
			if (f < safe)
				safe = f;
		}
		cp_perf_queue_flush(q, safe, fn, arg);
	}
	cp_perf_queue_flush(q, until, fn, arg);
}
