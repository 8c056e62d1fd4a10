/*
 * pprof_int.h -- the inside of the pprof reader (pprof_read.h), shared by
 * its two stages: pprof_decode.c turns the protobuf bytes into raw
 * records that still hold string indexes and ids, pprof_read.c resolves
 * them into the struct profile the commands read.
 */
#ifndef CPUPROF_CLI_PPROF_INT_H
#define CPUPROF_CLI_PPROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Where an error message goes; fail() fills it once. */
struct ctx {
	char *err;
	size_t errlen;
	bool failed;
};

/* Formats the first error into c->err; later ones are dropped so the
 * innermost (most precise) reason wins.  Always returns -1. */
__attribute__((format(printf, 2, 3))) int pprof_fail(struct ctx *c, const char *fmt, ...);

/* ---- growable arrays ---------------------------------------------------- */

struct vec {
	void *a;
	size_t n, cap;
};

/* Appends one zeroed element of `size` bytes to v and returns it, or fails
 * with "out of memory" and returns NULL. */
void *pprof_vec_push(struct ctx *c, struct vec *v, size_t size);
/* v's array, handed over (v is left empty). */
void *pprof_vec_take(struct ctx *c, struct vec *v);

/* ---- protobuf decoding -------------------------------------------------- */

/* A window [p, end) of the decoded buffer; base is the buffer's start, for
 * offsets in error messages. */
struct reader {
	const uint8_t *p, *end, *base;
};

/* One decoded field: its number, wire type and value (u for numeric wire
 * types, data/len for length-delimited ones). */
struct field {
	uint32_t num;
	int wt;
	uint64_t u;
	const uint8_t *data;
	size_t len;
	size_t off; /* offset of the field's key, for messages */
};

/* ---- raw records: what the decoder produces ----------------------------- */

struct raw_vt {
	int64_t type, unit;
};

/* Offsets and counts fit 32 bits: the decoded buffer is at most
 * PROFILE_MAX_DECODED (1 GiB) and every element takes at least a byte of
 * it.  (Kept small: an empty sample is two bytes of protobuf.) */
struct raw_sample {
	uint32_t loc_off, nloc;     /* into builder.loc_ids */
	uint32_t val_off, nval;     /* into builder.values */
	uint32_t label_off, nlabel; /* into builder.labels */
	uint32_t off;               /* file offset, for messages */
	const uint8_t *times;       /* its SAMPLE_TIMES bytes (in the decoded buffer), or NULL */
	uint32_t ntimes_bytes;
};

struct raw_label {
	int64_t key, str, num, num_unit;
};

struct raw_mapping {
	uint64_t id, start, limit, file_offset;
	int64_t filename, build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct raw_location {
	uint64_t id, mapping_id, address;
	size_t line_off, nline; /* into builder.lines */
	bool is_folded;
};

struct raw_line {
	uint64_t function_id;
	int64_t line;
};

struct raw_function {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

struct raw_string {
	const uint8_t *p;
	size_t len;
};

/* Everything decoded from one Profile message. */
struct builder {
	struct vec sample_types; /* struct raw_vt */
	struct vec samples;      /* struct raw_sample */
	struct vec loc_ids;      /* uint64_t, all samples' location ids */
	struct vec values;       /* uint64_t (int64 bits), all samples' values */
	struct vec labels;       /* struct raw_label, all samples' labels */
	struct vec mappings;     /* struct raw_mapping */
	struct vec locations;    /* struct raw_location */
	struct vec lines;        /* struct raw_line, all locations' lines */
	struct vec functions;    /* struct raw_function */
	struct vec strings;      /* struct raw_string */
	struct vec comments;     /* uint64_t (int64 string indexes) */
	int64_t drop_frames, keep_frames, default_sample_type;
	int64_t time_nanos, duration_nanos, period;
	uint64_t time_unit_ns;
	struct raw_vt period_type;
	/* The sample being decoded, for the fields kept in its record. */
	struct raw_sample cur_sample;
	/* Samples with the same labels (cpuprof's: one list per thread)
	 * share one list: an open-addressing table of the samples whose
	 * list is in `labels`, as index + 1, 0 for an empty slot. */
	uint32_t *label_lists;
	size_t nlabel_lists, caplabel_lists;
	/* The decoded protobuf when the reader owns it; its strings and
	 * times point into it, and it is freed once they are copied. */
	void *buffer;
};

/* Frees the builder's arrays (not the builder itself). */
void pprof_builder_free(struct builder *b);
/* Decodes the top-level Profile message in r into b: 0, or -1 with the
 * reason in c. */
int pprof_decode(struct ctx *c, struct builder *b, struct reader r);

#endif
