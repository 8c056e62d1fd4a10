/*
 * protobuf.h -- a minimal protocol-buffer encoder: a growable byte buffer
 * and functions that append one field each (varint, length-delimited,
 * packed repeated) plus cp_pb_start/cp_pb_end that wrap a nested message.  Only
 * what a pprof writer needs.  An allocation failure is sticky in the
 * buffer (pb->err = ENOMEM, later appends do nothing): check it once at
 * the end.
 */
#ifndef CPUPROF_PROTOBUF_H
#define CPUPROF_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

/* Wire types (the low three bits of a field's key). */
#define PB_WIRE_VARINT 0
#define PB_WIRE_BYTES 2

struct pb_buf {
	uint8_t *data;
	size_t len, cap;
	int err; /* 0, or ENOMEM once any append failed */
};

void cp_pb_init(struct pb_buf *b);
void cp_pb_free(struct pb_buf *b);

/* Encodes v as a base-128 varint into p (room for 10 bytes); returns the
 * bytes written. */
size_t cp_pb_put_varint(uint8_t *p, uint64_t v);
/* Appends v as a base-128 varint (no key). */
void cp_pb_varint(struct pb_buf *b, uint64_t v);

/* Single fields: key (field number `field`, wire type implied) + value.
 * The *_opt forms write nothing for zero, the proto3 default. */
void cp_pb_uint64(struct pb_buf *b, uint32_t field, uint64_t v);
void cp_pb_uint64_opt(struct pb_buf *b, uint32_t field, uint64_t v);
void cp_pb_int64(struct pb_buf *b, uint32_t field, int64_t v);
void cp_pb_int64_opt(struct pb_buf *b, uint32_t field, int64_t v);
void cp_pb_bool(struct pb_buf *b, uint32_t field, int v);
void cp_pb_string(struct pb_buf *b, uint32_t field, const char *s);
void cp_pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);

/* Packed repeated fields: one length-delimited field holding n varints.
 * Nothing is written for n == 0. */
void cp_pb_packed_uint64(struct pb_buf *b, uint32_t field, const uint64_t *v,
		      size_t n);
void cp_pb_packed_int64(struct pb_buf *b, uint32_t field, const int64_t *v,
		     size_t n);

/* A nested message: `size_t m = cp_pb_start(b);` append its fields, then
 * `cp_pb_end(b, field, m)` inserts the key and length in front of them. */
size_t cp_pb_start(struct pb_buf *b);
void cp_pb_end(struct pb_buf *b, uint32_t field, size_t start);

#endif
