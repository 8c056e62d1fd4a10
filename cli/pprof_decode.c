/*
 * pprof_decode.c -- the pprof reader's first stage (pprof_int.h): a
 * bounds-checked protobuf decoder that turns the bytes into "raw" records
 * that still hold string indexes and ids.  Every read is checked against
 * the end of its enclosing message, unknown fields are skipped, repeated
 * scalars may be packed or not.  Field numbers are those of profile.proto.
 */
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

#include "pprof_int.h"
#include "profile/profile_proto.h"

/* Formats the first error into c->err; later ones are dropped so the
 * innermost (most precise) reason wins.  Always returns -1. */
int pprof_fail(struct ctx *c, const char *fmt, ...)
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

/* Appends one zeroed element of `size` bytes to v and returns it, or fails
 * with "out of memory" and returns NULL. */
void *pprof_vec_push(struct ctx *c, struct vec *v, size_t size)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		if (cap > SIZE_MAX / size) {
			pprof_fail(c, "out of memory");
			return NULL;
		}
		void *a = realloc(v->a, cap * size);
		if (!a) {
			pprof_fail(c, "out of memory");
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
void *pprof_vec_take(struct ctx *c, struct vec *v)
{
	void *a = v->a ? v->a : malloc(1);
	if (!a)
		pprof_fail(c, "out of memory");
	v->a = NULL;
	v->n = v->cap = 0;
	return a;
}

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
			return pprof_fail(c, "truncated varint at offset %zu", start);
		uint8_t b = *r->p++;
		if (shift == 63 && b > 1)
			return pprof_fail(c, "varint overflows 64 bits at offset %zu",
				    start);
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return pprof_fail(c, "varint longer than 10 bytes at offset %zu", start);
}

/* Reads `n` (4 or 8) little-endian bytes. */
static int read_fixed(struct ctx *c, struct reader *r, unsigned n,
		      uint64_t *v)
{
	if ((size_t)(r->end - r->p) < n)
		return pprof_fail(c, "truncated %u-byte field at offset %zu", n,
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
		return pprof_fail(c, "invalid field number %llu at offset %zu",
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
			return pprof_fail(c, "field %u at offset %zu: length %llu runs "
				    "past the end of its message (truncated?)",
				    f->num, f->off, (unsigned long long)len);
		f->data = r->p;
		f->len = (size_t)len;
		r->p += len;
		return 0;
	default:
		return pprof_fail(c, "unsupported wire type %d for field %u at offset "
			    "%zu", f->wt, f->num, f->off);
	}
}

/* Fails unless field f has wire type wt; `what` names it for the message. */
static int expect(struct ctx *c, const struct field *f, int wt,
		  const char *what)
{
	if (f->wt == wt)
		return 0;
	return pprof_fail(c, "%s at offset %zu has wire type %d, expected %d", what,
		    f->off, f->wt, wt);
}

/* A reader over the contents of length-delimited field f. */
static struct reader sub_reader(const struct reader *r, const struct field *f)
{
	struct reader s = { f->data, f->data + f->len, r->base };
	return s;
}

/* Frees the builder's arrays (not the builder itself). */
void pprof_builder_free(struct builder *b)
{
	free(b->sample_types.a);
	free(b->samples.a);
	free(b->loc_ids.a);
	free(b->values.a);
	free(b->labels.a);
	free(b->label_lists);
	free(b->buffer);
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
		if (!(e = pprof_vec_push(c, v, sizeof *e)))
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
		if (!(e = pprof_vec_push(c, v, sizeof *e)))
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
			if (!(e = pprof_vec_push(c, (struct vec *)at, sizeof(struct raw_string))))
				return -1;
			((struct raw_string *)e)->p = f.data;
			((struct raw_string *)e)->len = f.len;
			break;
		case R_RECORD:
			if (!(e = pprof_vec_push(c, (struct vec *)at, ru->size)) ||
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

/* A Sample's times (profile/times.h), read once the sample types are
 * known: where they are. */
static int decode_times(struct ctx *c, struct builder *b, void *rec, struct reader r, const struct field *f)
{
	(void)c;
	(void)rec;
	(void)r;
	b->cur_sample.times = f->data;
	b->cur_sample.ntimes_bytes = (uint32_t)f->len;
	return 0;
}

/* A Sample's location ids, values and labels go to the builder's shared
 * pools; its record says where its part of each is. */
static const struct rule sample_rules[] = {
	{ SAMPLE_LOCATION_ID, R_INTS, "Sample.location_id", offsetof(struct builder, loc_ids), 0, NULL, 0, NULL },
	{ SAMPLE_VALUE, R_INTS, "Sample.value", offsetof(struct builder, values), 0, NULL, 0, NULL },
	RECORD(SAMPLE_LABEL, "Sample.label", labels, struct raw_label, label_rules),
	{ SAMPLE_TIMES, R_MESSAGE, "Sample.times", 0, 0, NULL, 0, decode_times },
};

/* The hash of the label list of n raw labels at l. */
static uint64_t labels_hash(const struct raw_label *l, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (size_t i = 0; i < n; i++) {
		const int64_t v[4] = { l[i].key, l[i].str, l[i].num, l[i].num_unit };
		for (int k = 0; k < 4; k++)
			h = (h ^ (uint64_t)v[k]) * 0x100000001b3ull;
	}
	return h ^ h >> 29;
}

/* How far share_labels() looks for an equal list: past it, a list is kept
 * as a copy of its own (a table full of collisions costs no more). */
#define LABEL_PROBES 32

/* Puts sample si in the table of label lists at its hash, a copy
 * beyond LABEL_PROBES slots is left out.  The table doubles at half
 * full; 0, or -1 out of memory. */
static int label_list_add(struct ctx *c, struct builder *b, uint32_t si)
{
	const struct raw_sample *rs = b->samples.a;
	const struct raw_label *l = b->labels.a;
	if (2 * (b->nlabel_lists + 1) > b->caplabel_lists) {
		size_t cap = b->caplabel_lists ? 2 * b->caplabel_lists : 64;
		uint32_t *old = b->label_lists, *t = calloc(cap, sizeof *t);
		if (!t)
			return pprof_fail(c, "out of memory");
		size_t oldcap = b->caplabel_lists;
		b->label_lists = t;
		b->caplabel_lists = cap;
		b->nlabel_lists = 0;
		for (size_t j = 0; j < oldcap; j++)
			if (old[j])
				label_list_add(c, b, old[j] - 1); /* cannot grow again */
		free(old);
	}
	size_t mask = b->caplabel_lists - 1;
	size_t j = labels_hash(l + rs[si].label_off, rs[si].nlabel) & mask;
	for (int probe = 0; probe < LABEL_PROBES; probe++, j = (j + 1) & mask) {
		if (!b->label_lists[j]) {
			b->label_lists[j] = si + 1;
			b->nlabel_lists++;
			return 0;
		}
	}
	return 0;
}

/* Sample si's labels, just decoded at the end of `labels`: if an earlier
 * sample has the same list, si's record points to it and its copy is
 * dropped; else it is entered in the table. */
static int share_labels(struct ctx *c, struct builder *b, uint32_t si)
{
	struct raw_sample *rs = b->samples.a;
	const struct raw_label *l = b->labels.a;
	size_t n = rs[si].nlabel;
	if (!n)
		return 0; /* (and l may be NULL) */
	const struct raw_label *mine = l + rs[si].label_off;
	size_t mask = b->caplabel_lists - 1;
	size_t j = b->caplabel_lists ? labels_hash(mine, n) & mask : 0;
	for (int probe = 0; b->caplabel_lists && probe < LABEL_PROBES && b->label_lists[j]; probe++, j = (j + 1) & mask) {
		const struct raw_sample *o = &rs[b->label_lists[j] - 1];
		if (o->nlabel == n && !memcmp(l + o->label_off, mine, n * sizeof *mine)) {
			b->labels.n = rs[si].label_off;
			rs[si].label_off = o->label_off;
			return 0;
		}
	}
	return label_list_add(c, b, si);
}

static int decode_sample(struct ctx *c, struct builder *b, void *profile, struct reader r, const struct field *f)
{
	(void)profile;
	if (!pprof_vec_push(c, &b->samples, sizeof(struct raw_sample)))
		return -1;
	size_t si = b->samples.n - 1;
	size_t loc_off = b->loc_ids.n, val_off = b->values.n, label_off = b->labels.n;
	b->cur_sample = (struct raw_sample){ 0 };
	if (decode_fields(c, b, r, RULES(sample_rules), NULL))
		return -1;
	struct raw_sample *s = (struct raw_sample *)b->samples.a + si;
	s->times = b->cur_sample.times;
	s->ntimes_bytes = b->cur_sample.ntimes_bytes;
	s->loc_off = (uint32_t)loc_off;
	s->nloc = (uint32_t)(b->loc_ids.n - loc_off);
	s->val_off = (uint32_t)val_off;
	s->nval = (uint32_t)(b->values.n - val_off);
	s->label_off = (uint32_t)label_off;
	s->nlabel = (uint32_t)(b->labels.n - label_off);
	s->off = (uint32_t)f->off;
	return share_labels(c, b, (uint32_t)si);
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
	if (!pprof_vec_push(c, &b->locations, sizeof(struct raw_location)))
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
	SCALAR(PROFILE_TIME_UNIT_NS, R_U64, "Profile.time_unit_ns", struct builder, time_unit_ns),
};

int pprof_decode(struct ctx *c, struct builder *b, struct reader r)
{
	return decode_fields(c, b, r, RULES(profile_rules), b);
}

