/*
 * profile.c -- reads pprof profiles for the CLI.  Three stages: the file is
 * read whole (at most PROFILE_MAX_FILE bytes) and gunzipped with zlib if it
 * starts with the gzip magic; a bounds-checked protobuf decoder turns the
 * bytes into "raw" records that still hold string indexes and ids (every
 * read is checked against the end of its enclosing message, unknown fields
 * are skipped, repeated scalars may be packed or not); then a resolve pass
 * checks every string index and id and builds the pointer-linked struct
 * profile of profile.h.  Field numbers are those of profile.proto.
 */
#include "profile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/profile_proto.h"

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
__attribute__((format(printf, 2, 3))) static int
fail(struct ctx *c, const char *fmt, ...)
{
	if (!c->failed && c->errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	c->failed = true;
	return -1;
}

/* ---- growable arrays ---------------------------------------------------- */

struct vec {
	void *a;
	size_t n, cap;
};

/* Appends one zeroed element of `size` bytes to v and returns it, or fails
 * with "out of memory" and returns NULL. */
static void *vec_push(struct ctx *c, struct vec *v, size_t size)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		if (cap > SIZE_MAX / size) {
			fail(c, "out of memory");
			return NULL;
		}
		void *a = realloc(v->a, cap * size);
		if (!a) {
			fail(c, "out of memory");
			return NULL;
		}
		v->a = a;
		v->cap = cap;
	}
	void *e = (char *)v->a + v->n * size;
	memset(e, 0, size);
	v->n++;
	return e;
}

/* Hands v's storage to the caller (a valid pointer even when v is empty, so
 * that `array + 0` is always defined) and resets v.  NULL if out of memory. */
static void *vec_take(struct ctx *c, struct vec *v)
{
	void *a = v->a ? v->a : malloc(1);
	if (!a)
		fail(c, "out of memory");
	v->a = NULL;
	v->n = v->cap = 0;
	return a;
}

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

/* The offset of r's position in the whole decoded buffer. */
static size_t offset_of(const struct reader *r)
{
	return (size_t)(r->p - r->base);
}

/* Reads a base-128 varint of at most 10 bytes that fits 64 bits. */
static int read_varint(struct ctx *c, struct reader *r, uint64_t *v)
{
	size_t start = offset_of(r);
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end)
			return fail(c, "truncated varint at offset %zu", start);
		uint8_t b = *r->p++;
		if (shift == 63 && b > 1)
			return fail(c, "varint overflows 64 bits at offset %zu",
				    start);
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return fail(c, "varint longer than 10 bytes at offset %zu", start);
}

/* Reads `n` (4 or 8) little-endian bytes. */
static int read_fixed(struct ctx *c, struct reader *r, unsigned n,
		      uint64_t *v)
{
	if ((size_t)(r->end - r->p) < n)
		return fail(c, "truncated %u-byte field at offset %zu", n,
			    offset_of(r));
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		x |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	*v = x;
	return 0;
}

/* Reads the next key and value from r into f.  Any wire type other than
 * varint, 64-bit, length-delimited and 32-bit is an error (groups are not
 * used by profile.proto). */
static int next_field(struct ctx *c, struct reader *r, struct field *f)
{
	uint64_t key, len;
	f->off = offset_of(r);
	if (read_varint(c, r, &key))
		return -1;
	if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return fail(c, "invalid field number %llu at offset %zu",
			    (unsigned long long)(key >> 3), f->off);
	f->num = (uint32_t)(key >> 3);
	f->wt = (int)(key & 7);
	f->data = NULL;
	f->len = 0;
	f->u = 0;
	switch (f->wt) {
	case WT_VARINT:
		return read_varint(c, r, &f->u);
	case WT_I64:
		return read_fixed(c, r, 8, &f->u);
	case WT_I32:
		return read_fixed(c, r, 4, &f->u);
	case WT_LEN:
		if (read_varint(c, r, &len))
			return -1;
		if (len > (uint64_t)(r->end - r->p))
			return fail(c, "field %u at offset %zu: length %llu runs "
				    "past the end of its message (truncated?)",
				    f->num, f->off, (unsigned long long)len);
		f->data = r->p;
		f->len = (size_t)len;
		r->p += len;
		return 0;
	default:
		return fail(c, "unsupported wire type %d for field %u at offset "
			    "%zu", f->wt, f->num, f->off);
	}
}

/* Fails unless field f has wire type wt; `what` names it for the message. */
static int expect(struct ctx *c, const struct field *f, int wt,
		  const char *what)
{
	if (f->wt == wt)
		return 0;
	return fail(c, "%s at offset %zu has wire type %d, expected %d", what,
		    f->off, f->wt, wt);
}

/* A reader over the contents of length-delimited field f. */
static struct reader sub_reader(const struct reader *r, const struct field *f)
{
	struct reader s = { f->data, f->data + f->len, r->base };
	return s;
}

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
	struct raw_vt period_type;
};

/* Frees the builder's arrays (not the builder itself). */
static void builder_free(struct builder *b)
{
	free(b->sample_types.a);
	free(b->samples.a);
	free(b->loc_ids.a);
	free(b->values.a);
	free(b->labels.a);
	free(b->mappings.a);
	free(b->locations.a);
	free(b->lines.a);
	free(b->functions.a);
	free(b->strings.a);
	free(b->comments.a);
}

/* Appends the integer(s) of repeated scalar field f to v (uint64_t
 * elements): one varint, or a packed run of varints. */
static int push_ints(struct ctx *c, const struct reader *r,
		     const struct field *f, struct vec *v, const char *what)
{
	uint64_t *e;
	if (f->wt == WT_VARINT) {
		if (!(e = vec_push(c, v, sizeof *e)))
			return -1;
		*e = f->u;
		return 0;
	}
	if (f->wt != WT_LEN)
		return expect(c, f, WT_VARINT, what);
	struct reader s = sub_reader(r, f);
	while (s.p < s.end) {
		uint64_t x;
		if (read_varint(c, &s, &x))
			return -1;
		if (!(e = vec_push(c, v, sizeof *e)))
			return -1;
		*e = x;
	}
	return 0;
}

/* How the decoder treats a field of a message: a varint stored at an
 * offset of the message's record (U64, I64, BOOL), integers appended to a
 * vec of the builder (INTS: one varint or a packed run), a string appended
 * to a vec of the builder (STRING), a message whose record is appended to
 * a vec of the builder (RECORD) or lies in the message's own record
 * (EMBED), decoded by its own rules, or a message decoded by a function of
 * its own (MESSAGE).  Fields a message's rules do not name are skipped. */
enum rule_kind { R_U64, R_I64, R_BOOL, R_EMBED, R_INTS, R_STRING, R_RECORD, R_MESSAGE };

struct rule {
	uint32_t num;   /* profile_proto.h */
	uint8_t kind;   /* enum rule_kind */
	const char *what;
	size_t off;     /* in the record (U64 to EMBED) or the builder (INTS to RECORD) */
	/* R_RECORD, R_EMBED: the message's record size and rules. */
	size_t size;
	const struct rule *sub;
	size_t nsub;
	/* R_MESSAGE: decodes field f (length-delimited) of the message
	 * whose record is `rec`. */
	int (*decode)(struct ctx *c, struct builder *b, void *rec, struct reader r, const struct field *f);
};

#define RULES(t) t, sizeof t / sizeof t[0]
#define SCALAR(num, kind, what, type, member) { num, kind, what, offsetof(type, member), 0, NULL, 0, NULL }
#define RECORD(num, what, vec, type, rules) \
	{ num, R_RECORD, what, offsetof(struct builder, vec), sizeof(type), RULES(rules), NULL }

/* Decodes the fields of one message in r by its rules; scalars go into
 * `rec`, the message's record. */
static int decode_fields(struct ctx *c, struct builder *b, struct reader r, const struct rule *rules, size_t nrules,
			 void *rec)
{
	struct field f;
	while (r.p < r.end) {
		if (next_field(c, &r, &f))
			return -1;
		const struct rule *ru = NULL;
		for (size_t i = 0; i < nrules && !ru; i++)
			if (rules[i].num == f.num)
				ru = &rules[i];
		if (!ru)
			continue;
		char *at = (char *)(ru->kind <= R_EMBED ? rec : b) + ru->off;
		void *e;
		if (ru->kind == R_INTS) {
			if (push_ints(c, &r, &f, (struct vec *)at, ru->what))
				return -1;
			continue;
		}
		if (expect(c, &f, ru->kind <= R_BOOL ? WT_VARINT : WT_LEN, ru->what))
			return -1;
		switch (ru->kind) {
		case R_U64:
		case R_I64:
			memcpy(at, &f.u, sizeof f.u); /* int64 fields keep the two's complement bits */
			break;
		case R_BOOL:
			*(bool *)at = f.u != 0;
			break;
		case R_EMBED:
			if (decode_fields(c, b, sub_reader(&r, &f), ru->sub, ru->nsub, at))
				return -1;
			break;
		case R_STRING:
			if (!(e = vec_push(c, (struct vec *)at, sizeof(struct raw_string))))
				return -1;
			((struct raw_string *)e)->p = f.data;
			((struct raw_string *)e)->len = f.len;
			break;
		case R_RECORD:
			if (!(e = vec_push(c, (struct vec *)at, ru->size)) ||
			    decode_fields(c, b, sub_reader(&r, &f), ru->sub, ru->nsub, e))
				return -1;
			break;
		case R_MESSAGE:
			if (ru->decode(c, b, rec, sub_reader(&r, &f), &f))
				return -1;
			break;
		}
	}
	return 0;
}

static const struct rule value_type_rules[] = {
	SCALAR(VALUE_TYPE_TYPE, R_I64, "ValueType.type", struct raw_vt, type),
	SCALAR(VALUE_TYPE_UNIT, R_I64, "ValueType.unit", struct raw_vt, unit),
};

static const struct rule label_rules[] = {
	SCALAR(LABEL_KEY, R_I64, "Label.key", struct raw_label, key),
	SCALAR(LABEL_STR, R_I64, "Label.str", struct raw_label, str),
	SCALAR(LABEL_NUM, R_I64, "Label.num", struct raw_label, num),
	SCALAR(LABEL_NUM_UNIT, R_I64, "Label.num_unit", struct raw_label, num_unit),
};

/* A Sample's location ids, values and labels go to the builder's shared
 * pools; its record says where its part of each is. */
static const struct rule sample_rules[] = {
	{ SAMPLE_LOCATION_ID, R_INTS, "Sample.location_id", offsetof(struct builder, loc_ids), 0, NULL, 0, NULL },
	{ SAMPLE_VALUE, R_INTS, "Sample.value", offsetof(struct builder, values), 0, NULL, 0, NULL },
	RECORD(SAMPLE_LABEL, "Sample.label", labels, struct raw_label, label_rules),
};

static int decode_sample(struct ctx *c, struct builder *b, void *profile, struct reader r, const struct field *f)
{
	(void)profile;
	if (!vec_push(c, &b->samples, sizeof(struct raw_sample)))
		return -1;
	size_t si = b->samples.n - 1;
	size_t loc_off = b->loc_ids.n, val_off = b->values.n, label_off = b->labels.n;
	if (decode_fields(c, b, r, RULES(sample_rules), NULL))
		return -1;
	struct raw_sample *s = (struct raw_sample *)b->samples.a + si;
	s->loc_off = (uint32_t)loc_off;
	s->nloc = (uint32_t)(b->loc_ids.n - loc_off);
	s->val_off = (uint32_t)val_off;
	s->nval = (uint32_t)(b->values.n - val_off);
	s->label_off = (uint32_t)label_off;
	s->nlabel = (uint32_t)(b->labels.n - label_off);
	s->off = (uint32_t)f->off;
	return 0;
}

static const struct rule mapping_rules[] = {
	SCALAR(MAPPING_ID, R_U64, "Mapping.id", struct raw_mapping, id),
	SCALAR(MAPPING_MEMORY_START, R_U64, "Mapping.memory_start", struct raw_mapping, start),
	SCALAR(MAPPING_MEMORY_LIMIT, R_U64, "Mapping.memory_limit", struct raw_mapping, limit),
	SCALAR(MAPPING_FILE_OFFSET, R_U64, "Mapping.file_offset", struct raw_mapping, file_offset),
	SCALAR(MAPPING_FILENAME, R_I64, "Mapping.filename", struct raw_mapping, filename),
	SCALAR(MAPPING_BUILD_ID, R_I64, "Mapping.build_id", struct raw_mapping, build_id),
	SCALAR(MAPPING_HAS_FUNCTIONS, R_BOOL, "Mapping.has_functions", struct raw_mapping, has_functions),
	SCALAR(MAPPING_HAS_FILENAMES, R_BOOL, "Mapping.has_filenames", struct raw_mapping, has_filenames),
	SCALAR(MAPPING_HAS_LINE_NUMBERS, R_BOOL, "Mapping.has_line_numbers", struct raw_mapping, has_line_numbers),
	SCALAR(MAPPING_HAS_INLINE_FRAMES, R_BOOL, "Mapping.has_inline_frames", struct raw_mapping, has_inline_frames),
};

static const struct rule line_rules[] = {
	SCALAR(LINE_FUNCTION_ID, R_U64, "Line.function_id", struct raw_line, function_id),
	SCALAR(LINE_LINE, R_I64, "Line.line", struct raw_line, line),
};

static const struct rule location_rules[] = {
	SCALAR(LOCATION_ID, R_U64, "Location.id", struct raw_location, id),
	SCALAR(LOCATION_MAPPING_ID, R_U64, "Location.mapping_id", struct raw_location, mapping_id),
	SCALAR(LOCATION_ADDRESS, R_U64, "Location.address", struct raw_location, address),
	RECORD(LOCATION_LINE, "Location.line", lines, struct raw_line, line_rules),
	SCALAR(LOCATION_IS_FOLDED, R_BOOL, "Location.is_folded", struct raw_location, is_folded),
};

/* A Location, appended to b->locations; its lines go to b->lines. */
static int decode_location(struct ctx *c, struct builder *b, void *profile, struct reader r, const struct field *f)
{
	(void)profile, (void)f;
	if (!vec_push(c, &b->locations, sizeof(struct raw_location)))
		return -1;
	struct raw_location loc = { .line_off = b->lines.n };
	if (decode_fields(c, b, r, RULES(location_rules), &loc))
		return -1;
	loc.nline = b->lines.n - loc.line_off;
	((struct raw_location *)b->locations.a)[b->locations.n - 1] = loc;
	return 0;
}

static const struct rule function_rules[] = {
	SCALAR(FUNCTION_ID, R_U64, "Function.id", struct raw_function, id),
	SCALAR(FUNCTION_NAME, R_I64, "Function.name", struct raw_function, name),
	SCALAR(FUNCTION_SYSTEM_NAME, R_I64, "Function.system_name", struct raw_function, system_name),
	SCALAR(FUNCTION_FILENAME, R_I64, "Function.filename", struct raw_function, filename),
	SCALAR(FUNCTION_START_LINE, R_I64, "Function.start_line", struct raw_function, start_line),
};

/* The Profile's record is the builder itself. */
static const struct rule profile_rules[] = {
	RECORD(PROFILE_SAMPLE_TYPE, "Profile.sample_type", sample_types, struct raw_vt, value_type_rules),
	{ PROFILE_SAMPLE, R_MESSAGE, "Profile.sample", 0, 0, NULL, 0, decode_sample },
	RECORD(PROFILE_MAPPING, "Profile.mapping", mappings, struct raw_mapping, mapping_rules),
	{ PROFILE_LOCATION, R_MESSAGE, "Profile.location", 0, 0, NULL, 0, decode_location },
	RECORD(PROFILE_FUNCTION, "Profile.function", functions, struct raw_function, function_rules),
	{ PROFILE_STRING_TABLE, R_STRING, "Profile.string_table", offsetof(struct builder, strings), 0, NULL, 0, NULL },
	SCALAR(PROFILE_DROP_FRAMES, R_I64, "Profile.drop_frames", struct builder, drop_frames),
	SCALAR(PROFILE_KEEP_FRAMES, R_I64, "Profile.keep_frames", struct builder, keep_frames),
	SCALAR(PROFILE_TIME_NANOS, R_I64, "Profile.time_nanos", struct builder, time_nanos),
	SCALAR(PROFILE_DURATION_NANOS, R_I64, "Profile.duration_nanos", struct builder, duration_nanos),
	{ PROFILE_PERIOD_TYPE, R_EMBED, "Profile.period_type", offsetof(struct builder, period_type), 0,
	  RULES(value_type_rules), NULL },
	SCALAR(PROFILE_PERIOD, R_I64, "Profile.period", struct builder, period),
	{ PROFILE_COMMENT, R_INTS, "Profile.comment", offsetof(struct builder, comments), 0, NULL, 0, NULL },
	SCALAR(PROFILE_DEFAULT_SAMPLE_TYPE, R_I64, "Profile.default_sample_type", struct builder, default_sample_type),
};

/* Decodes the top-level Profile message in r into b. */
static int decode_profile(struct ctx *c, struct builder *b, struct reader r)
{
	return decode_fields(c, b, r, RULES(profile_rules), b);
}

/* ---- resolving indexes and ids ------------------------------------------ */

/* An id and the position of the object that has it, for binary search. */
struct idref {
	uint64_t id;
	size_t i;
};

/* qsort order of struct idref: by id. */
static int idref_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct idref *)a)->id;
	uint64_t y = ((const struct idref *)b)->id;
	return x < y ? -1 : x > y;
}

/* Builds a sorted id index over n objects of `stride` bytes at arr whose
 * uint64_t id is at byte `idoff`.  Fails on id 0 or a duplicate id; `what`
 * names the kind of object.  Returns NULL on failure. */
static struct idref *index_ids(struct ctx *c, const void *arr, size_t n,
			       size_t stride, size_t idoff, const char *what)
{
	struct idref *ix = malloc((n ? n : 1) * sizeof *ix);
	if (!ix) {
		fail(c, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *e = (const char *)arr + i * stride + idoff;
		memcpy(&ix[i].id, e, sizeof ix[i].id);
		ix[i].i = i;
		if (ix[i].id == 0) {
			fail(c, "%s #%zu has id 0", what, i + 1);
			free(ix);
			return NULL;
		}
	}
	if (n > 1)
		qsort(ix, n, sizeof *ix, idref_cmp);
	for (size_t i = 1; i < n; i++) {
		if (ix[i].id == ix[i - 1].id) {
			fail(c, "duplicate %s id %llu", what,
			     (unsigned long long)ix[i].id);
			free(ix);
			return NULL;
		}
	}
	return ix;
}

/* Position of the object with `id` in an index of n entries, or SIZE_MAX. */
static size_t lookup_id(const struct idref *ix, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix[mid].id == id)
			return ix[mid].i;
		if (ix[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/* Resolves string index idx of p's string table into *out; `what` names
 * the field for the message. */
static int get_string(struct ctx *c, const struct profile *p, int64_t idx,
		      const char **out, const char *what)
{
	if (idx < 0 || (uint64_t)idx >= p->nstrings)
		return fail(c, "%s: string index %lld out of range (the string "
			    "table has %zu entries)", what, (long long)idx,
			    p->nstrings);
	*out = p->strings[idx];
	return 0;
}

/* Copies the string table into one NUL-separated block. */
static int resolve_strings(struct ctx *c, struct profile *p,
			   struct builder *b)
{
	const struct raw_string *rs = b->strings.a;
	size_t n = b->strings.n, total = 0;
	if (n == 0)
		return fail(c, "the string table is empty (not a pprof "
			    "profile?)");
	if (rs[0].len != 0)
		return fail(c, "string_table[0] is not the empty string (not a "
			    "pprof profile?)");
	for (size_t i = 0; i < n; i++)
		total += rs[i].len + 1; /* bounded by the decoded size */
	char *text = malloc(total);
	p->strings = malloc(n * sizeof *p->strings);
	p->priv_.text = text;
	if (!text || !p->strings)
		return fail(c, "out of memory");
	p->nstrings = n;
	for (size_t i = 0; i < n; i++) {
		memcpy(text, rs[i].p, rs[i].len);
		text[rs[i].len] = '\0';
		p->strings[i] = text;
		text += rs[i].len + 1;
	}
	return 0;
}

/* Resolves the two string indexes of a ValueType. */
static int resolve_value_type(struct ctx *c, struct profile *p,
			      const struct raw_vt *in,
			      struct profile_value_type *out, const char *what)
{
	if (get_string(c, p, in->type, &out->type, what) ||
	    get_string(c, p, in->unit, &out->unit, what))
		return -1;
	return 0;
}

/* Builds p->functions (ids are checked when locations are linked). */
static int resolve_functions(struct ctx *c, struct profile *p,
			     struct builder *b)
{
	const struct raw_function *rf = b->functions.a;
	size_t n = b->functions.n;
	p->functions = calloc(n ? n : 1, sizeof *p->functions);
	if (!p->functions)
		return fail(c, "out of memory");
	p->nfunctions = n;
	for (size_t i = 0; i < n; i++) {
		struct profile_function *f = &p->functions[i];
		f->id = rf[i].id;
		f->start_line = rf[i].start_line;
		if (get_string(c, p, rf[i].name, &f->name, "Function.name") ||
		    get_string(c, p, rf[i].system_name, &f->system_name,
			       "Function.system_name") ||
		    get_string(c, p, rf[i].filename, &f->filename,
			       "Function.filename"))
			return -1;
	}
	return 0;
}

/* Builds p->mappings (ids are checked when locations are linked). */
static int resolve_mappings(struct ctx *c, struct profile *p,
			    struct builder *b)
{
	const struct raw_mapping *rm = b->mappings.a;
	size_t n = b->mappings.n;
	p->mappings = calloc(n ? n : 1, sizeof *p->mappings);
	if (!p->mappings)
		return fail(c, "out of memory");
	p->nmappings = n;
	for (size_t i = 0; i < n; i++) {
		struct profile_mapping *m = &p->mappings[i];
		m->id = rm[i].id;
		m->memory_start = rm[i].start;
		m->memory_limit = rm[i].limit;
		m->file_offset = rm[i].file_offset;
		m->has_functions = rm[i].has_functions;
		m->has_filenames = rm[i].has_filenames;
		m->has_line_numbers = rm[i].has_line_numbers;
		m->has_inline_frames = rm[i].has_inline_frames;
		if (get_string(c, p, rm[i].filename, &m->filename,
			       "Mapping.filename") ||
		    get_string(c, p, rm[i].build_id, &m->build_id,
			       "Mapping.build_id"))
			return -1;
	}
	return 0;
}

/* Links locations to their mapping and their lines to functions. */
static int resolve_locations(struct ctx *c, struct profile *p,
			     struct builder *b)
{
	const struct raw_location *rl = b->locations.a;
	const struct raw_line *rline = b->lines.a;
	size_t n = b->locations.n, nlines = b->lines.n;
	int rc = -1;
	struct idref *fix = NULL, *mix = NULL;
	struct profile_line *lines = calloc(nlines ? nlines : 1, sizeof *lines);
	p->priv_.lines = lines;
	p->locations = calloc(n ? n : 1, sizeof *p->locations);
	if (!lines || !p->locations) {
		fail(c, "out of memory");
		goto out;
	}
	p->nlocations = n;
	fix = index_ids(c, p->functions, p->nfunctions, sizeof *p->functions,
			offsetof(struct profile_function, id), "function");
	mix = index_ids(c, p->mappings, p->nmappings, sizeof *p->mappings,
			offsetof(struct profile_mapping, id), "mapping");
	if (!fix || !mix)
		goto out;
	for (size_t i = 0; i < nlines; i++) {
		lines[i].line = rline[i].line;
		if (rline[i].function_id == 0)
			continue;
		size_t k = lookup_id(fix, p->nfunctions, rline[i].function_id);
		if (k == SIZE_MAX) {
			fail(c, "a location refers to function id %llu, which "
			     "is not defined",
			     (unsigned long long)rline[i].function_id);
			goto out;
		}
		lines[i].function = &p->functions[k];
	}
	for (size_t i = 0; i < n; i++) {
		struct profile_location *l = &p->locations[i];
		l->id = rl[i].id;
		l->address = rl[i].address;
		l->is_folded = rl[i].is_folded;
		l->lines = lines + rl[i].line_off;
		l->nlines = rl[i].nline;
		if (rl[i].mapping_id == 0)
			continue;
		size_t k = lookup_id(mix, p->nmappings, rl[i].mapping_id);
		if (k == SIZE_MAX) {
			fail(c, "location id %llu refers to mapping id %llu, "
			     "which is not defined",
			     (unsigned long long)rl[i].id,
			     (unsigned long long)rl[i].mapping_id);
			goto out;
		}
		l->mapping = &p->mappings[k];
	}
	rc = 0;
out:
	free(fix);
	free(mix);
	return rc;
}

/* Resolves the labels of all samples into one array. */
static int resolve_labels(struct ctx *c, struct profile *p,
			  struct builder *b)
{
	const struct raw_label *rl = b->labels.a;
	size_t n = b->labels.n;
	struct profile_label *labels = calloc(n ? n : 1, sizeof *labels);
	p->priv_.labels = labels;
	if (!labels)
		return fail(c, "out of memory");
	for (size_t i = 0; i < n; i++) {
		labels[i].num = rl[i].num;
		if (get_string(c, p, rl[i].key, &labels[i].key, "Label.key") ||
		    get_string(c, p, rl[i].str, &labels[i].str, "Label.str") ||
		    get_string(c, p, rl[i].num_unit, &labels[i].num_unit,
			       "Label.num_unit"))
			return -1;
	}
	return 0;
}

/* Links samples to their locations and labels, checks one value per
 * sample type, and counts the frames of all samples against the bound
 * PROFILE_FRAMES_PER_BYTE per byte of the `decoded` bytes of protobuf. */
static int resolve_samples(struct ctx *c, struct profile *p,
			   struct builder *b, size_t decoded)
{
	const struct raw_sample *rs = b->samples.a;
	const uint64_t *ids = b->loc_ids.a;
	size_t n = b->samples.n, nids = b->loc_ids.n;
	int rc = -1;
	const struct profile_location **ptrs =
		malloc((nids ? nids : 1) * sizeof *ptrs);
	p->priv_.locptrs = ptrs;
	p->samples = calloc(n ? n : 1, sizeof *p->samples);
	if (!ptrs || !p->samples)
		return fail(c, "out of memory");
	if (resolve_labels(c, p, b))
		return -1;
	struct idref *lix = index_ids(c, p->locations, p->nlocations,
				      sizeof *p->locations,
				      offsetof(struct profile_location, id),
				      "location");
	if (!lix)
		return -1;
	uint64_t frames = 0;
	uint64_t max_frames = (uint64_t)decoded * PROFILE_FRAMES_PER_BYTE +
			      PROFILE_FRAMES_SLACK;
	for (size_t i = 0; i < nids; i++) {
		size_t k = lookup_id(lix, p->nlocations, ids[i]);
		if (k == SIZE_MAX) {
			fail(c, "a sample refers to location id %llu, which is "
			     "not defined", (unsigned long long)ids[i]);
			goto out;
		}
		ptrs[i] = &p->locations[k];
		frames += p->locations[k].nlines ? p->locations[k].nlines : 1;
		if (frames > max_frames) {
			fail(c, "the samples' stacks hold more than %llu frames "
			     "(inlined lines included), over %d per byte of "
			     "protobuf (%zu bytes): a location with very many "
			     "lines listed very often?  Refusing",
			     (unsigned long long)max_frames,
			     PROFILE_FRAMES_PER_BYTE, decoded);
			goto out;
		}
	}
	p->nframes = (size_t)frames;
	int64_t *values = vec_take(c, &b->values);
	p->priv_.values = values;
	if (!values)
		goto out;
	const struct profile_label *labels = p->priv_.labels;
	p->nsamples = n;
	for (size_t i = 0; i < n; i++) {
		if (rs[i].nval != p->nsample_types) {
			fail(c, "sample #%zu (offset %u) has %u values for "
			     "%zu sample types", i + 1, rs[i].off, rs[i].nval,
			     p->nsample_types);
			goto out;
		}
		p->samples[i].locations = ptrs + rs[i].loc_off;
		p->samples[i].nlocations = rs[i].nloc;
		p->samples[i].values = values + rs[i].val_off;
		p->samples[i].labels = labels + rs[i].label_off;
		p->samples[i].nlabels = rs[i].nlabel;
	}
	rc = 0;
out:
	free(lix);
	return rc;
}

/* Turns the decoded records into p, checking every reference. */
static int resolve(struct ctx *c, struct profile *p, struct builder *b,
		   size_t decoded)
{
	if (resolve_strings(c, p, b))
		return -1;
	size_t n = b->sample_types.n;
	const struct raw_vt *vt = b->sample_types.a;
	p->sample_types = calloc(n ? n : 1, sizeof *p->sample_types);
	if (!p->sample_types)
		return fail(c, "out of memory");
	p->nsample_types = n;
	for (size_t i = 0; i < n; i++)
		if (resolve_value_type(c, p, &vt[i], &p->sample_types[i],
				       "Profile.sample_type"))
			return -1;
	if (resolve_value_type(c, p, &b->period_type, &p->period_type,
			       "Profile.period_type") ||
	    get_string(c, p, b->drop_frames, &p->drop_frames,
		       "Profile.drop_frames") ||
	    get_string(c, p, b->keep_frames, &p->keep_frames,
		       "Profile.keep_frames") ||
	    get_string(c, p, b->default_sample_type, &p->default_sample_type,
		       "Profile.default_sample_type"))
		return -1;
	const uint64_t *cm = b->comments.a;
	p->comments = calloc(b->comments.n ? b->comments.n : 1,
			     sizeof *p->comments);
	if (!p->comments)
		return fail(c, "out of memory");
	p->ncomments = b->comments.n;
	for (size_t i = 0; i < b->comments.n; i++)
		if (get_string(c, p, (int64_t)cm[i], &p->comments[i],
			       "Profile.comment"))
			return -1;
	p->time_nanos = b->time_nanos;
	p->duration_nanos = b->duration_nanos;
	p->period = b->period;
	if (resolve_functions(c, p, b) || resolve_mappings(c, p, b) ||
	    resolve_locations(c, p, b) || resolve_samples(c, p, b, decoded))
		return -1;
	return 0;
}

/* ---- gzip --------------------------------------------------------------- */

/* True if d starts with the gzip magic bytes. */
static bool is_gzip(const uint8_t *d, size_t len)
{
	return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

/* Inflates the gzip data at in[inlen] (one or more members, nothing after
 * them) into a new buffer *out of *outlen bytes, refusing to produce more
 * than PROFILE_MAX_RATIO times inlen plus PROFILE_RATIO_SLACK bytes (a
 * gzip bomb), or more than PROFILE_MAX_DECODED. */
static int gunzip(struct ctx *c, const uint8_t *in, size_t inlen,
		  uint8_t **out, size_t *outlen)
{
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	if (inlen > UINT_MAX)
		return fail(c, "compressed input too large");
	uint64_t limit = (uint64_t)inlen * PROFILE_MAX_RATIO + PROFILE_RATIO_SLACK;
	bool by_ratio = limit < PROFILE_MAX_DECODED;
	if (!by_ratio)
		limit = PROFILE_MAX_DECODED;
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return fail(c, "zlib initialisation failed");
	size_t cap = inlen < (1u << 20) ? 64u << 10 : inlen * 4;
	if (cap > limit)
		cap = (size_t)limit;
	size_t n = 0;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		inflateEnd(&zs);
		return fail(c, "out of memory");
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	for (;;) {
		if (n == cap) {
			if (cap >= limit) {
				if (by_ratio)
					fail(c, "gzip data inflates to more than "
					     "%d times its %zu bytes (a gzip "
					     "bomb?); refusing.  If the profile "
					     "is genuine, gunzip it and report "
					     "the plain protobuf",
					     PROFILE_MAX_RATIO, inlen);
				else
					fail(c, "gzip data inflates to more than "
					     "%llu GiB; refusing",
					     (unsigned long long)(PROFILE_MAX_DECODED >> 30));
				goto err;
			}
			size_t ncap = cap * 2;
			if (ncap > limit)
				ncap = (size_t)limit;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				fail(c, "out of memory");
				goto err;
			}
			buf = nb;
			cap = ncap;
		}
		size_t room = cap - n;
		zs.next_out = buf + n;
		zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
		uInt before = zs.avail_out;
		int rc = inflate(&zs, Z_NO_FLUSH);
		n += before - zs.avail_out;
		switch (rc) {
		case Z_OK:
			continue;
		case Z_STREAM_END:
			if (zs.avail_in == 0)
				goto done;
			if (!is_gzip(zs.next_in, zs.avail_in)) {
				fail(c, "unexpected data after the end of the "
				     "gzip stream");
				goto err;
			}
			inflateReset(&zs); /* another gzip member follows */
			continue;
		case Z_BUF_ERROR:
			if (zs.avail_out == 0)
				continue; /* grow the buffer */
			fail(c, "truncated gzip data");
			goto err;
		case Z_MEM_ERROR:
			fail(c, "out of memory");
			goto err;
		default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
			fail(c, "corrupt gzip data (%s)",
			     zs.msg ? zs.msg : "bad stream");
			goto err;
		}
	}
done:
	inflateEnd(&zs);
	*out = buf;
	*outlen = n;
	return 0;
err:
	inflateEnd(&zs);
	free(buf);
	return -1;
}

/* ---- public entry points ------------------------------------------------ */

/* Whether bytes[0..n) start as gperftools' own CPU profile does: the
 * header words 0, 3, 0 (then the period and 0), in 64- or 32-bit words. */
static bool is_gperftools(const uint8_t *bytes, size_t n)
{
	static const uint8_t w64[24] = { [8] = 3 }, w32[12] = { [4] = 3 };
	return (n >= 40 && memcmp(bytes, w64, sizeof w64) == 0) || (n >= 20 && memcmp(bytes, w32, sizeof w32) == 0);
}

int profile_parse(const void *data, size_t len, struct profile **out,
		  char *err, size_t errlen)
{
	struct ctx c = { err, errlen, false };
	struct builder b;
	uint8_t *plain = NULL;
	size_t plen = len;
	const uint8_t *bytes = data;
	bool gz = is_gzip(bytes, len);
	struct profile *p = NULL;

	*out = NULL;
	if (errlen > 0)
		err[0] = '\0';
	memset(&b, 0, sizeof b);
	if (len > PROFILE_MAX_FILE)
		return fail(&c, "input larger than %llu GiB; refusing",
			    (unsigned long long)(PROFILE_MAX_FILE >> 30));
	if (gz) {
		if (gunzip(&c, bytes, len, &plain, &plen))
			return -1;
		bytes = plain;
	}
	struct reader r = { bytes, bytes + plen, bytes };
	if (plen == 0) {
		fail(&c, gz ? "gzip data decompresses to nothing"
			    : "empty file");
		goto err;
	}
	p = calloc(1, sizeof *p);
	if (!p) {
		fail(&c, "out of memory");
		goto err;
	}
	if (decode_profile(&c, &b, r) || resolve(&c, p, &b, plen))
		goto err;
	builder_free(&b);
	free(plain);
	*out = p;
	return 0;
err:
	if (p && p->nstrings == 0 && errlen > 0 && is_gperftools(bytes, plen)) {
		snprintf(err, errlen, "a gperftools CPU profile (its own binary format, not pprof's protobuf): "
			 "`google-pprof --text PROGRAM FILE` or `go tool pprof PROGRAM FILE` reads it");
	} else if (p && p->nstrings == 0 && errlen > 0) {
		/* Failed before the string table: most likely not a profile
		 * at all, so say that first. */
		char why[256];
		snprintf(why, sizeof why, "%s", err);
		snprintf(err, errlen, "%s: %s",
			 gz ? "the gzip data is not a valid pprof protobuf"
			    : "not gzip-compressed and not a valid pprof protobuf",
			 why);
	}
	builder_free(&b);
	free(plain);
	profile_free(p);
	return -1;
}

int profile_read_file(const char *path, struct profile **out, char *err,
		      size_t errlen)
{
	struct ctx c = { err, errlen, false };
	struct stat st;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(&c, "%s", strerror(errno));
	if (fstat(fd, &st) < 0) {
		fail(&c, "%s", strerror(errno));
		goto err;
	}
	if (S_ISDIR(st.st_mode)) {
		fail(&c, "is a directory");
		goto err;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > PROFILE_MAX_FILE) {
		fail(&c, "file larger than %llu GiB; refusing",
		     (unsigned long long)(PROFILE_MAX_FILE >> 30));
		goto err;
	}
	if (S_ISREG(st.st_mode))
		cap = (size_t)st.st_size + 1; /* +1 sees growth at EOF */
	for (;;) {
		if (n == cap) {
			if (cap > PROFILE_MAX_FILE) {
				fail(&c, "file larger than %llu GiB; refusing",
				     (unsigned long long)(PROFILE_MAX_FILE >> 30));
				goto err;
			}
			size_t ncap = cap < 65536 ? 65536 : cap * 2;
			if (ncap > PROFILE_MAX_FILE + 1)
				ncap = PROFILE_MAX_FILE + 1;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				fail(&c, "out of memory");
				goto err;
			}
			buf = nb;
			cap = ncap;
		}
		if (!buf && !(buf = malloc(cap))) {
			fail(&c, "out of memory");
			goto err;
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			fail(&c, "%s", strerror(errno));
			goto err;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	fd = -1;
	if (n == 0) {
		free(buf);
		return fail(&c, "empty file");
	}
	int rc = profile_parse(buf, n, out, err, errlen);
	free(buf);
	return rc;
err:
	if (fd >= 0)
		close(fd);
	free(buf);
	return -1;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->sample_types);
	free(p->samples);
	free(p->mappings);
	free(p->locations);
	free(p->functions);
	free(p->strings);
	free(p->comments);
	free(p->priv_.text);
	free(p->priv_.lines);
	free(p->priv_.locptrs);
	free(p->priv_.values);
	free(p->priv_.labels);
	free(p);
}

const char *profile_comment(const struct profile *p, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < p->ncomments; i++) {
		const char *s = p->comments[i];
		if (strncmp(s, key, klen) == 0 && s[klen] == '=')
			return s + klen + 1;
	}
	return NULL;
}

const struct profile_label *profile_label(const struct profile_sample *s,
					  const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].key, key) == 0)
			return &s->labels[i];
	return NULL;
}

int profile_find_sample_type(const struct profile *p, const char *type,
			     const char *unit)
{
	for (size_t i = 0; i < p->nsample_types && i < INT_MAX; i++)
		if (strcmp(p->sample_types[i].type, type) == 0 &&
		    strcmp(p->sample_types[i].unit, unit) == 0)
			return (int)i;
	return -1;
}
