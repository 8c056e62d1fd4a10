/*
 * unit_queue_bound.c -- the time-order queue holds a bounded part of what
 * the rings hold (issue 32).  Where `record` falls behind, each CPU's
 * ring holds up to 4 MiB of samples, most of it stack copies; a pass that
 * copied every ring whole into the queue before handing any on made that
 * record's peak (9.5 MiB at 16 threads, 10 kHz, on a loaded machine).
 * Here two full rings of 4 MiB (samples of 8 KiB, their times interleaved
 * as two CPUs' are, the second ring's running ahead), with an empty one,
 * are read by cp_perf_drain_ordered: every sample must come out once, in
 * time order, with its bytes whole (the flush moves what it keeps within
 * its buffer), those at or after `until` kept for the next pass, and the
 * queue never holding more than 2 MiB.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "perf/records.h"

#define RING_BYTES (4u << 20)
#define PAYLOAD 8192
#define REC_BYTES (sizeof(struct perf_event_header) + 16 + PAYLOAD)
#define PER_RING (RING_BYTES / REC_BYTES)
#define NRINGS 3 /* the last one empty */
#define STEP_NS 100000ull /* 10 kHz */
#define AHEAD_NS 3000000ull /* the second ring's first sample, 3 ms on */

static struct cp_perf_queue q;
static unsigned char seen[2 * PER_RING];
static size_t handed;
static uint64_t last_time;

static uint64_t time_of(int ring, size_t i)
{
	return 1000000000ull + i * STEP_NS + (ring ? AHEAD_NS + STEP_NS / 2 : 0);
}

static void fill(struct cp_perf_ring *r, int ring)
{
	r->cpu = ring;
	r->fd = -1;
	r->size = RING_BYTES;
	r->page = calloc(1, sizeof *r->page);
	r->data = malloc(RING_BYTES);
	CHECK(r->page && r->data, "malloc");
	if (ring == NRINGS - 1)
		return;
	uint8_t *at = r->data;
	for (size_t i = 0; i < PER_RING; i++) {
		struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, (uint16_t)REC_BYTES };
		uint64_t t = time_of(ring, i), id = (uint64_t)ring * PER_RING + i;
		memcpy(at, &h, sizeof h);
		memcpy(at + sizeof h, &t, 8);
		memcpy(at + sizeof h + 8, &id, 8);
		memset(at + sizeof h + 16, (int)(id * 7 + 1) & 0xff, PAYLOAD);
		at += REC_BYTES;
	}
	r->page->data_head = (uint64_t)(at - r->data);
}

static void rec(const struct perf_event_header *h, int cpu, void *arg)
{
	const uint8_t *p = (const uint8_t *)(h + 1);
	struct cp_perf_event ev = { .type = PERF_RECORD_SAMPLE, .cpu = cpu };
	memcpy(&ev.time, p, 8);
	memcpy(&ev.id, p + 8, 8);
	ev.data = p + 16;
	ev.len = PAYLOAD;
	CHECK_EQ(cp_perf_queue_push(&q, &ev), 0);
}

static void handle(void *arg, const struct cp_perf_event *ev)
{
	uint64_t until = *(const uint64_t *)arg;
	CHECK(ev->time < until, "handed on at %llu, not before the bound %llu", (unsigned long long)ev->time,
	      (unsigned long long)until);
	CHECK(ev->time >= last_time, "out of time order: %llu after %llu", (unsigned long long)ev->time,
	      (unsigned long long)last_time);
	last_time = ev->time;
	CHECK(ev->id < 2 * PER_RING && !seen[ev->id], "sample %llu handed on twice", (unsigned long long)ev->id);
	seen[ev->id] = 1;
	CHECK_EQ(ev->len, (size_t)PAYLOAD);
	const uint8_t *d = ev->data;
	for (size_t i = 0; i < PAYLOAD; i++)
		CHECK(d[i] == ((ev->id * 7 + 1) & 0xff), "sample %llu's bytes changed in the queue",
		      (unsigned long long)ev->id);
	handed++;
}

int main(void)
{
	struct cp_perf_ring rings[NRINGS];
	struct cp_perf_mark marks[NRINGS];
	uint8_t *bounce = malloc(CP_PERF_STACK_COPY + 4096);
	CHECK(bounce, "malloc");
	for (int i = 0; i < NRINGS; i++)
		fill(&rings[i], i);
	struct cp_perf_drain d = { rings, marks, NRINGS, CP_PERF_DRAIN_BUDGET, bounce, CP_PERF_STACK_COPY + 4096,
				   rec, NULL, &q };
	/* A pass up to a moment inside both rings, then one up to the end. */
	uint64_t until = time_of(0, PER_RING - 5);
	cp_perf_drain_ordered(&d, until, handle, &until);
	size_t before = 0;
	for (int ring = 0; ring < 2; ring++)
		for (size_t i = 0; i < PER_RING; i++)
			before += time_of(ring, i) < until;
	CHECK(handed == before, "the first pass handed on %zu samples, %zu were before its bound", handed, before);
	CHECK(q.n == 2 * PER_RING - before, "the first pass kept %zu samples of %zu", q.n, 2 * PER_RING - before);
	until = UINT64_MAX;
	cp_perf_drain_ordered(&d, until, handle, &until);
	CHECK(handed == 2 * PER_RING, "%zu samples of %zu handed on", handed, (size_t)(2 * PER_RING));
	CHECK(q.most <= (2u << 20), "the queue held %zu KiB at most, over 2048 (the rings: %u KiB)", q.most >> 10,
	      2 * RING_BYTES >> 10);
	printf("%zu samples of %zu KiB in rings of %u KiB: in order, the queue held at most %zu KiB\n", handed,
	       (size_t)REC_BYTES >> 10, RING_BYTES >> 10, q.most >> 10);
	cp_perf_queue_free(&q);
	for (int i = 0; i < NRINGS; i++) {
		free(rings[i].page);
		free(rings[i].data);
	}
	free(bounce);
	return 0;
}
