/*
 * times.c -- the sample times of times.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "protobuf.h"
#include "times.h"

static struct cp_time_base base;
/* Bytes the lists hold (their capacity), and whether one was refused
 * room past CP_TIMES_MAX_BYTES since they last held none. */
static size_t held;
static int dropped;

void cp_times_begin(uint64_t t0_ns, uint64_t period_ns)
{
	uint64_t unit = period_ns < 1000000 ? period_ns : 1000000;
	base = (struct cp_time_base){ t0_ns, unit < 1000 ? 1000 : unit, period_ns };
}

void cp_times_end(void)
{
	base.unit_ns = 0;
}

int cp_times_dropped(void)
{
	return dropped;
}

const struct cp_time_base *cp_times_base(void)
{
	return base.unit_ns ? &base : NULL;
}

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Room for n more bytes in (buf, len, cap).  0 or -1. */
static int room(uint8_t **buf, size_t len, size_t *cap, size_t n)
{
	return cp_array_grow((void **)buf, cap, len + n, 1, 16);
}

/* Room in t's heap buffer for n more bytes, its list moved there from
 * the struct if it was kept there.  0, -E2BIG past CP_TIMES_MAX_BYTES or
 * -ENOMEM (t unchanged either way). */
static int grow(struct cp_times *t, size_t n)
{
	size_t cap = t->cap;
	uint8_t *buf = cap ? t->buf : NULL;
	if (held + (cap ? cap : 16) > CP_TIMES_MAX_BYTES) {
		dropped = 1;
		return -E2BIG;
	}
	if (t->len + n > UINT32_MAX / 2 || room(&buf, t->len, &cap, n) < 0)
		return -ENOMEM;
	if (!t->cap)
		memcpy(buf, t->small, t->len);
	held += cap - t->cap;
	t->buf = buf;
	t->cap = (uint32_t)cap;
	return 0;
}

int cp_times_add(struct cp_times *t, const struct cp_time_base *b, uint64_t time_ns, uint64_t weight_ns,
		 int irregular)
{
	uint64_t at = time_ns > b->t0_ns ? (time_ns - b->t0_ns) / b->unit_ns : 0;
	if (at < t->last)
		at = t->last;
	uint64_t slack = b->period_ns / 8;
	irregular |= weight_ns + slack < b->period_ns || weight_ns > b->period_ns + slack;
	uint8_t v[20];
	size_t n = cp_pb_put_varint(v, (at - t->last) << 1 | (irregular != 0));
	if (irregular)
		n += cp_pb_put_varint(v + n, (weight_ns + 500) / 1000);
	if (!t->cap && t->len + n <= CP_TIMES_SMALL) {
		memcpy(t->small + t->len, v, n);
	} else {
		int rc = t->len + n > t->cap ? grow(t, n) : 0;
		if (rc < 0)
			return rc;
		memcpy(t->buf + t->len, v, n);
	}
	t->len += (uint32_t)n;
	t->last = at;
	return 0;
}

int cp_times_copy(struct cp_times *dst, const struct cp_times *src)
{
	*dst = (struct cp_times){ .len = src->len, .last = src->last };
	if (src->len <= CP_TIMES_SMALL) {
		memcpy(dst->small, cp_times_bytes(src), src->len);
		return 0;
	}
	if (!(dst->buf = malloc(src->len))) {
		dst->len = 0;
		return -ENOMEM;
	}
	memcpy(dst->buf, src->buf, src->len);
	dst->cap = src->len;
	held += dst->cap;
	return 0;
}

void cp_times_free(struct cp_times *t)
{
	held -= t->cap <= held ? t->cap : held;
	if (!held)
		dropped = 0;
	if (t->cap)
		free(t->buf);
	*t = (struct cp_times){ 0 };
}

int cp_times_next(struct cp_times_reader *r, uint64_t *at, int64_t *weight_us)
{
	if (r->p >= r->end)
		return 0;
	uint64_t d, w;
	if (get_varint(&r->p, r->end, &d) < 0 || (d >> 1) > UINT64_MAX - r->at)
		return -1;
	*weight_us = -1;
	if (d & 1) {
		if (get_varint(&r->p, r->end, &w) < 0 || w > INT64_MAX)
			return -1;
		*weight_us = (int64_t)w;
	}
	*at = r->at += d >> 1;
	return 1;
}

int cp_times_rebase(const uint8_t *src, size_t n, uint64_t shift, uint8_t **out, size_t *len, size_t *cap)
{
	struct cp_times_reader r = { src, src + n, 0 };
	uint64_t at, prev = 0;
	int64_t w;
	int k;
	while ((k = cp_times_next(&r, &at, &w)) == 1) {
		uint64_t t = at > shift ? at - shift : 0;
		if (room(out, *len, cap, 20) < 0)
			return -1;
		*len += cp_pb_put_varint(*out + *len, (t - prev) << 1 | (w >= 0));
		if (w >= 0)
			*len += cp_pb_put_varint(*out + *len, (uint64_t)w);
		prev = t;
	}
	return k;
}
