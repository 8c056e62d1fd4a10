/*
 * protobuf.c -- the minimal protocol-buffer encoder of protobuf.h.  Fields
 * are appended to one growable buffer; a nested message is encoded in
 * place and its key and length are inserted in front of it when it ends
 * (nested messages in a profile are small, so the move is cheap).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "protobuf.h"

void cp_pb_init(struct pb_buf *b)
{
	memset(b, 0, sizeof *b);
}

void cp_pb_free(struct pb_buf *b)
{
	free(b->data);
	cp_pb_init(b);
}

/* Makes room for `more` bytes past b->len; returns 0, or -1 with the sticky
 * error set. */
static int pb_reserve(struct pb_buf *b, size_t more)
{
	if (b->err)
		return -1;
	if (more > SIZE_MAX - b->len ||
	    cp_array_grow((void **)&b->data, &b->cap, b->len + more, 1, 4096)) {
		b->err = ENOMEM;
		return -1;
	}
	return 0;
}

/* Bytes a varint encoding of v takes. */
static size_t pb_varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t cp_pb_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void cp_pb_varint(struct pb_buf *b, uint64_t v)
{
	if (pb_reserve(b, 10) == 0)
		b->len += cp_pb_put_varint(b->data + b->len, v);
}

static void pb_key(struct pb_buf *b, uint32_t field, int wire)
{
	cp_pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void cp_pb_uint64(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_key(b, field, PB_WIRE_VARINT);
	cp_pb_varint(b, v);
}

void cp_pb_uint64_opt(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (v)
		cp_pb_uint64(b, field, v);
}

/* int64 is encoded as the two's-complement uint64 (not zigzag). */
void cp_pb_int64(struct pb_buf *b, uint32_t field, int64_t v)
{
	cp_pb_uint64(b, field, (uint64_t)v);
}

void cp_pb_int64_opt(struct pb_buf *b, uint32_t field, int64_t v)
{
	if (v)
		cp_pb_int64(b, field, v);
}

void cp_pb_bool(struct pb_buf *b, uint32_t field, int v)
{
	cp_pb_uint64(b, field, v ? 1 : 0);
}

void cp_pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n)
{
	pb_key(b, field, PB_WIRE_BYTES);
	cp_pb_varint(b, n);
	if (n && pb_reserve(b, n) == 0) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
	}
}

void cp_pb_string(struct pb_buf *b, uint32_t field, const char *s)
{
	cp_pb_bytes(b, field, s, strlen(s));
}

void cp_pb_packed_uint64(struct pb_buf *b, uint32_t field, const uint64_t *v,
		      size_t n)
{
	if (n == 0)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += pb_varint_len(v[i]);
	pb_key(b, field, PB_WIRE_BYTES);
	cp_pb_varint(b, len);
	if (pb_reserve(b, len) != 0)
		return;
	for (size_t i = 0; i < n; i++)
		b->len += cp_pb_put_varint(b->data + b->len, v[i]);
}

void cp_pb_packed_int64(struct pb_buf *b, uint32_t field, const int64_t *v,
		     size_t n)
{
	/* Same bits, same encoding. */
	cp_pb_packed_uint64(b, field, (const uint64_t *)(const void *)v, n);
}

size_t cp_pb_start(struct pb_buf *b)
{
	return b->len;
}

void cp_pb_end(struct pb_buf *b, uint32_t field, size_t start)
{
	uint8_t head[20];
	size_t body = b->len - start;
	size_t h = cp_pb_put_varint(head, (uint64_t)field << 3 | PB_WIRE_BYTES);
	h += cp_pb_put_varint(head + h, body);
	if (pb_reserve(b, h) != 0)
		return;
	memmove(b->data + start + h, b->data + start, body);
	memcpy(b->data + start, head, h);
	b->len += h;
}
