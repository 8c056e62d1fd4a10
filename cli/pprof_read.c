/*
 * pprof_read.c -- reads pprof profiles for the CLI.  Three stages: the file is
 * read whole (at most PROFILE_MAX_FILE bytes) and gunzipped with zlib if it
 * starts with the gzip magic; a bounds-checked protobuf decoder turns the
 * bytes into "raw" records that still hold string indexes and ids
 * (pprof_decode.c); then a resolve pass, here,
 * checks every string index and id and builds the pointer-linked struct
 * profile of pprof_read.h.  Field numbers are those of profile.proto.
 */
#include "pprof_read.h"

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
#include "profile/times.h"

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
		pprof_fail(c, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *e = (const char *)arr + i * stride + idoff;
		memcpy(&ix[i].id, e, sizeof ix[i].id);
		ix[i].i = i;
		if (ix[i].id == 0) {
			pprof_fail(c, "%s #%zu has id 0", what, i + 1);
			free(ix);
			return NULL;
		}
	}
	if (n > 1)
		qsort(ix, n, sizeof *ix, idref_cmp);
	for (size_t i = 1; i < n; i++) {
		if (ix[i].id == ix[i - 1].id) {
			pprof_fail(c, "duplicate %s id %llu", what,
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

/* The array a of n elements of `size` bytes made as small as n (a grown
 * array's spare room given back); a itself if realloc cannot, NULL for
 * NULL. */
static void *trim(void *a, size_t n, size_t size)
{
	void *t = a ? realloc(a, n ? n * size : 1) : NULL;
	return t ? t : a;
}

/* Resolves string index idx of p's string table into *out; `what` names
 * the field for the message. */
static int get_string(struct ctx *c, const struct profile *p, int64_t idx,
		      const char **out, const char *what)
{
	if (idx < 0 || (uint64_t)idx >= p->nstrings)
		return pprof_fail(c, "%s: string index %lld out of range (the string "
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
		return pprof_fail(c, "the string table is empty (not a pprof "
			    "profile?)");
	if (rs[0].len != 0)
		return pprof_fail(c, "string_table[0] is not the empty string (not a "
			    "pprof profile?)");
	for (size_t i = 0; i < n; i++)
		total += rs[i].len + 1; /* bounded by the decoded size */
	char *text = malloc(total);
	p->strings = malloc(n * sizeof *p->strings);
	p->priv_.text = text;
	if (!text || !p->strings)
		return pprof_fail(c, "out of memory");
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
		return pprof_fail(c, "out of memory");
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
		return pprof_fail(c, "out of memory");
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
		pprof_fail(c, "out of memory");
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
			pprof_fail(c, "a location refers to function id %llu, which "
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
			pprof_fail(c, "location id %llu refers to mapping id %llu, "
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
		return pprof_fail(c, "out of memory");
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

/* Decodes the samples' times (profile/times.h) into one array, each
 * regular sample's weight -1 until spread_weights().  At most one time
 * per byte of a list: bounded by the file.  A profile with times but no
 * unit has none. */
static int resolve_times(struct ctx *c, struct profile *p, struct builder *b)
{
	const struct raw_sample *rs = b->samples.a;
	size_t total = 0;
	p->time_unit_ns = b->time_unit_ns;
	for (size_t i = 0; i < b->samples.n; i++)
		total += rs[i].ntimes_bytes;
	if (!total || !p->time_unit_ns)
		return 0;
	if (total > PROFILE_MAX_TIMES)
		return pprof_fail(c, "its samples' times take %zu bytes, more than %llu: refusing", total,
				  (unsigned long long)PROFILE_MAX_TIMES);
	struct profile_time *times = malloc(total * sizeof *times);
	p->priv_.times = times;
	if (!times)
		return pprof_fail(c, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < b->samples.n; i++) {
		if (!rs[i].ntimes_bytes)
			continue; /* no times: times stays NULL (and no arithmetic on a NULL rs[i].times) */
		struct cp_times_reader r = { rs[i].times, rs[i].times + rs[i].ntimes_bytes, 0 };
		uint64_t at;
		int64_t w;
		int got;
		p->samples[i].times = times + k;
		while ((got = cp_times_next(&r, &at, &w)) == 1) {
			if (at > (uint64_t)INT64_MAX / p->time_unit_ns || (w >= 0 && w > INT64_MAX / 1000))
				return pprof_fail(c, "sample #%zu (offset %u): a time out of range", i + 1, rs[i].off);
			times[k++] = (struct profile_time){ (int64_t)(at * p->time_unit_ns), w < 0 ? -1 : w * 1000 };
		}
		if (got < 0)
			return pprof_fail(c, "sample #%zu (offset %u): its times are malformed", i + 1, rs[i].off);
		p->samples[i].ntimes = (size_t)(times + k - p->samples[i].times);
	}
	/* Times are fewer than their bytes: trimmed, then each sample's
	 * pointed to again, in the same order. */
	p->priv_.times = times = trim(times, k, sizeof *times);
	k = 0;
	for (size_t i = 0; i < b->samples.n; i++) {
		p->samples[i].times = p->samples[i].ntimes ? times + k : NULL;
		k += p->samples[i].ntimes;
	}
	return 0;
}

/* A sample's CPU and off-CPU ns: what its times' weights add up to. */
static int64_t sample_ns(const struct profile *p, const struct profile_sample *s)
{
	int64_t ns = 0;
	for (size_t v = 0; v < p->nsample_types; v++)
		if ((!strcmp(p->sample_types[v].type, "cpu") || !strcmp(p->sample_types[v].type, "off_cpu")) &&
		    !strcmp(p->sample_types[v].unit, "nanoseconds") && s->values[v] > 0)
			ns = sat_add(ns, s->values[v]);
	return ns;
}

/* Each regular sample's weight: what the Sample's ns leave over its
 * irregular ones, shared equally (irregular ones scaled down where they
 * hold more than it). */
static void spread_weights(struct profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		struct profile_sample *s = &p->samples[i];
		struct profile_time *t = (struct profile_time *)s->times;
		int64_t total = sample_ns(p, s), irr = 0;
		size_t nreg = 0;
		for (size_t k = 0; k < s->ntimes; k++) {
			if (t[k].weight < 0)
				nreg++;
			else
				irr = sat_add(irr, t[k].weight);
		}
		double scale = irr > total && irr > 0 ? (double)total / (double)irr : 1.0;
		int64_t left = total - (int64_t)((double)irr * scale), given = 0;
		for (size_t k = 0, r = 0; k < s->ntimes; k++) {
			if (t[k].weight >= 0) {
				t[k].weight = (int64_t)((double)t[k].weight * scale);
				continue;
			}
			/* Shares that add up to `left` exactly. */
			int64_t upto = (int64_t)((double)left * (double)++r / (double)nreg);
			t[k].weight = upto - given;
			given = upto;
		}
	}
}

/* Links samples to their locations and labels, checks one value per
 * sample type, and counts the frames of all samples against the bound
 * PROFILE_FRAMES_PER_BYTE per byte of the `decoded` bytes of protobuf. */
static int resolve_samples(struct ctx *c, struct profile *p,
			   struct builder *b, size_t decoded)
{
	const struct raw_sample *rs = b->samples.a;
	size_t n = b->samples.n, nids = b->loc_ids.n;
	int rc = -1;
	/* Each id becomes its Location's pointer in the same slot: the
	 * samples' millions of references are held once, not twice. */
	_Static_assert(sizeof(uint64_t) >= sizeof(const struct profile_location *), "a pointer fits an id's slot");
	uint64_t *ids = trim(pprof_vec_take(c, &b->loc_ids), nids, sizeof *ids);
	const struct profile_location **ptrs = (const struct profile_location **)ids;
	p->priv_.locptrs = ptrs;
	p->samples = calloc(n ? n : 1, sizeof *p->samples);
	if (!ptrs || !p->samples)
		return pprof_fail(c, "out of memory");
	if (resolve_labels(c, p, b))
		return -1;
	struct idref *lix = index_ids(c, p->locations, p->nlocations,
				      sizeof *p->locations,
				      offsetof(struct profile_location, id),
				      "location");
	if (!lix)
		return -1;
	/* Writers number their Locations 1, 2, ... (cpuprof, Go): then a
	 * table by id, no bigger than a few entries per Location, finds each
	 * of the samples' millions of references at once; else the sorted
	 * index. */
	uint64_t maxid = p->nlocations ? lix[p->nlocations - 1].id : 0;
	size_t *byid = NULL;
	if (maxid <= 4 * (uint64_t)p->nlocations + 64 && (byid = malloc((size_t)(maxid + 1) * sizeof *byid))) {
		for (uint64_t id = 0; id <= maxid; id++)
			byid[id] = SIZE_MAX;
		for (size_t k = 0; k < p->nlocations; k++)
			byid[lix[k].id] = lix[k].i;
	}
	uint64_t frames = 0;
	uint64_t max_frames = (uint64_t)decoded * PROFILE_FRAMES_PER_BYTE +
			      PROFILE_FRAMES_SLACK;
	for (size_t i = 0; i < nids; i++) {
		size_t k = !byid ? lookup_id(lix, p->nlocations, ids[i]) : ids[i] <= maxid ? byid[ids[i]] : SIZE_MAX;
		if (k == SIZE_MAX) {
			pprof_fail(c, "a sample refers to location id %llu, which is "
			     "not defined", (unsigned long long)ids[i]);
			goto out;
		}
		/* ids[i] is not read again (nor, where a pointer is
		 * smaller, any id before it) */
		const struct profile_location *loc = &p->locations[k];
		memcpy(&ptrs[i], &loc, sizeof loc);
		frames += p->locations[k].nlines ? p->locations[k].nlines : 1;
		if (frames > max_frames) {
			pprof_fail(c, "the samples' stacks hold more than %llu frames "
			     "(inlined lines included), over %d per byte of "
			     "protobuf (%zu bytes): a location with very many "
			     "lines listed very often?  Refusing",
			     (unsigned long long)max_frames,
			     PROFILE_FRAMES_PER_BYTE, decoded);
			goto out;
		}
	}
	p->nframes = (size_t)frames;
	if (resolve_times(c, p, b))
		goto out;
	free(b->buffer); /* its strings and times are copied */
	b->buffer = NULL;
	size_t nvalues = b->values.n;
	int64_t *values = trim(pprof_vec_take(c, &b->values), nvalues, sizeof *values);
	p->priv_.values = values;
	if (!values)
		goto out;
	const struct profile_label *labels = p->priv_.labels;
	p->nsamples = n;
	for (size_t i = 0; i < n; i++) {
		if (rs[i].nval != p->nsample_types) {
			pprof_fail(c, "sample #%zu (offset %u) has %u values for "
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
	if (p->priv_.times)
		spread_weights(p);
	rc = 0;
out:
	free(byid);
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
		return pprof_fail(c, "out of memory");
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
		return pprof_fail(c, "out of memory");
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

/* The room to inflate gzip data in[inlen] into first, at most limit:
 * the last member's trailer says its size mod 2^32 (ISIZE), for the
 * usual single member all of it, so one buffer of that size (+1, to see
 * the end without growing) holds the whole.  Only a hint: a trailer
 * that lies, or several members, just make the buffer grow. */
static size_t first_room(const uint8_t *in, size_t inlen, uint64_t limit)
{
	uint64_t want = 64u << 10;
	if (inlen >= 18) {
		const uint8_t *t = in + inlen - 4;
		uint64_t isize = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
		if (isize >= want)
			want = isize + 1;
	}
	return (size_t)(want < limit ? want : limit);
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
		return pprof_fail(c, "compressed input too large");
	uint64_t limit = (uint64_t)inlen * PROFILE_MAX_RATIO + PROFILE_RATIO_SLACK;
	bool by_ratio = limit < PROFILE_MAX_DECODED;
	if (!by_ratio)
		limit = PROFILE_MAX_DECODED;
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return pprof_fail(c, "zlib initialisation failed");
	size_t cap = first_room(in, inlen, limit);
	size_t n = 0;
	uint8_t *buf = malloc(cap);
	if (!buf && cap > (64u << 10)) /* the hint too large for now (a lying trailer): grow instead */
		buf = malloc(cap = 64u << 10);
	if (!buf) {
		inflateEnd(&zs);
		return pprof_fail(c, "out of memory");
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	for (;;) {
		if (n == cap) {
			if (cap >= limit) {
				if (by_ratio)
					pprof_fail(c, "gzip data inflates to more than "
					     "%d times its %zu bytes (a gzip "
					     "bomb?); refusing.  If the profile "
					     "is genuine, gunzip it and report "
					     "the plain protobuf",
					     PROFILE_MAX_RATIO, inlen);
				else
					pprof_fail(c, "gzip data inflates to more than "
					     "%llu GiB; refusing",
					     (unsigned long long)(PROFILE_MAX_DECODED >> 30));
				goto err;
			}
			size_t ncap = cap * 2;
			if (ncap > limit)
				ncap = (size_t)limit;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				pprof_fail(c, "out of memory");
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
				pprof_fail(c, "unexpected data after the end of the "
				     "gzip stream");
				goto err;
			}
			inflateReset(&zs); /* another gzip member follows */
			continue;
		case Z_BUF_ERROR:
			if (zs.avail_out == 0)
				continue; /* grow the buffer */
			pprof_fail(c, "truncated gzip data");
			goto err;
		case Z_MEM_ERROR:
			pprof_fail(c, "out of memory");
			goto err;
		default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
			pprof_fail(c, "corrupt gzip data (%s)",
			     zs.msg ? zs.msg : "bad stream");
			goto err;
		}
	}
done:
	inflateEnd(&zs);
	if (cap - n > (64u << 10)) { /* grown past the end: give it back */
		uint8_t *nb = realloc(buf, n ? n : 1);
		buf = nb ? nb : buf;
	}
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

/* profile_parse(); `owned`: data is the caller's malloc'd buffer, handed
 * over, freed as soon as it is inflated (or, plain, decoded). */
static int parse(const void *data, size_t len, bool owned, struct profile **out, char *err, size_t errlen)
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
	if (len > PROFILE_MAX_FILE) {
		if (owned)
			free((void *)data);
		return pprof_fail(&c, "input larger than %llu GiB; refusing",
			    (unsigned long long)(PROFILE_MAX_FILE >> 30));
	}
	if (gz) {
		int rc = gunzip(&c, bytes, len, &plain, &plen);
		if (owned)
			free((void *)data);
		if (rc)
			return -1;
		bytes = plain;
	} else if (owned) {
		plain = (uint8_t *)data;
	}
	struct reader r = { bytes, bytes + plen, bytes };
	if (plen == 0) {
		pprof_fail(&c, gz ? "gzip data decompresses to nothing"
			    : "empty file");
		goto err;
	}
	p = calloc(1, sizeof *p);
	if (!p) {
		pprof_fail(&c, "out of memory");
		goto err;
	}
	b.buffer = plain; /* freed as soon as it is read */
	plain = NULL;
	if (pprof_decode(&c, &b, r) || resolve(&c, p, &b, plen))
		goto err;
	pprof_builder_free(&b);
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
	pprof_builder_free(&b);
	free(plain);
	profile_free(p);
	return -1;
}

int profile_parse(const void *data, size_t len, struct profile **out, char *err, size_t errlen)
{
	return parse(data, len, false, out, err, errlen);
}

/* Reads the whole file at path into a new *bufp of *np bytes (not
 * empty), within PROFILE_MAX_FILE. */
static int read_whole(struct ctx *cx, const char *path, uint8_t **bufp, size_t *np)
{
	struct ctx c = *cx;
	struct stat st;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pprof_fail(&c, "%s", strerror(errno));
	if (fstat(fd, &st) < 0) {
		pprof_fail(&c, "%s", strerror(errno));
		goto err;
	}
	if (S_ISDIR(st.st_mode)) {
		pprof_fail(&c, "is a directory");
		goto err;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > PROFILE_MAX_FILE) {
		pprof_fail(&c, "file larger than %llu GiB; refusing",
		     (unsigned long long)(PROFILE_MAX_FILE >> 30));
		goto err;
	}
	if (S_ISREG(st.st_mode))
		cap = (size_t)st.st_size + 1; /* +1 sees growth at EOF */
	for (;;) {
		if (n == cap) {
			if (cap > PROFILE_MAX_FILE) {
				pprof_fail(&c, "file larger than %llu GiB; refusing",
				     (unsigned long long)(PROFILE_MAX_FILE >> 30));
				goto err;
			}
			size_t ncap = cap < 65536 ? 65536 : cap * 2;
			if (ncap > PROFILE_MAX_FILE + 1)
				ncap = PROFILE_MAX_FILE + 1;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				pprof_fail(&c, "out of memory");
				goto err;
			}
			buf = nb;
			cap = ncap;
		}
		if (!buf && !(buf = malloc(cap))) {
			pprof_fail(&c, "out of memory");
			goto err;
		}
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			pprof_fail(&c, "%s", strerror(errno));
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
		return pprof_fail(&c, "empty file");
	}
	*bufp = buf;
	*np = n;
	return 0;
err:
	if (fd >= 0)
		close(fd);
	free(buf);
	return -1;
}

int profile_read_file(const char *path, struct profile **out, char *err,
		      size_t errlen)
{
	struct ctx c = { err, errlen, false };
	uint8_t *buf;
	size_t n;

	*out = NULL;
	if (read_whole(&c, path, &buf, &n) != 0)
		return -1;
	return parse(buf, n, true, out, err, errlen);
}

int profile_read_protobuf(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	struct ctx c = { err, errlen, false };
	uint8_t *buf;
	size_t n;

	*out = NULL;
	if (read_whole(&c, path, &buf, &n) != 0)
		return -1;
	if (!is_gzip(buf, n)) {
		*out = buf;
		*len = n;
		return 0;
	}
	int rc = gunzip(&c, buf, n, out, len);
	free(buf);
	if (rc == 0 && *len == 0) {
		free(*out);
		*out = NULL;
		return pprof_fail(&c, "gzip data decompresses to nothing");
	}
	return rc;
}

void profile_drop_samples(struct profile *p)
{
	free(p->samples);
	free(p->priv_.locptrs);
	free(p->priv_.values);
	free(p->priv_.labels);
	free(p->priv_.times);
	free(p->priv_.sel_values);
	free(p->priv_.sel_times);
	p->samples = NULL;
	p->nsamples = 0;
	p->nframes = 0;
	p->priv_.locptrs = p->priv_.values = p->priv_.labels = p->priv_.times = NULL;
	p->priv_.sel_values = p->priv_.sel_times = NULL;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	profile_drop_samples(p);
	free(p->sample_types);
	free(p->mappings);
	free(p->locations);
	free(p->functions);
	free(p->strings);
	free(p->comments);
	free(p->priv_.text);
	free(p->priv_.lines);
	free(p->priv_.sel_comment);
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

int64_t profile_label_num(const struct profile_sample *s, const char *key, bool *has)
{
	const struct profile_label *l = profile_label(s, key);
	*has = l && !*l->str;
	return *has ? l->num : 0;
}

const char *profile_label_str(const struct profile_sample *s, const char *key)
{
	const struct profile_label *l = profile_label(s, key);
	return l ? l->str : "";
}

int profile_thread_cmp(const struct profile_sample *a, const struct profile_sample *b)
{
	static const char *const keys[2][2] = { { "pid", "process" }, { "tid", "thread" } };
	for (int k = 0; k < 2; k++) {
		bool ha, hb;
		int64_t na = profile_label_num(a, keys[k][0], &ha), nb = profile_label_num(b, keys[k][0], &hb);
		if (ha != hb)
			return ha ? -1 : 1;
		if (ha && na != nb)
			return na < nb ? -1 : 1;
		int c = ha ? 0 : strcmp(profile_label_str(a, keys[k][1]), profile_label_str(b, keys[k][1]));
		if (c)
			return c;
	}
	return 0;
}

/* The samples whose label lists stand for all of them: reps[0..nreps),
 * the first sample of each distinct list (by address), and for each
 * sample rep[i] the index in reps of its list's.  0, or -1 out of
 * memory. */
static int label_reps(const struct profile_sample *const *s, size_t n, uint32_t *rep, uint32_t *reps,
		      size_t *nreps)
{
	size_t cap = 64;
	while (cap < 2 * n)
		cap *= 2;
	uint32_t *h = calloc(cap, sizeof *h); /* index in reps + 1 */
	if (!h)
		return -1;
	*nreps = 0;
	for (size_t i = 0; i < n; i++) {
		const struct profile_label *l = s[i]->nlabels ? s[i]->labels : NULL;
		size_t j = (((uintptr_t)l >> 4) * 0x9e3779b97f4a7c15ull >> 20 ^ s[i]->nlabels) & (cap - 1);
		while (h[j]) {
			const struct profile_sample *o = s[reps[h[j] - 1]];
			if ((o->nlabels ? o->labels : NULL) == l && o->nlabels == s[i]->nlabels)
				break;
			j = (j + 1) & (cap - 1);
		}
		if (!h[j]) {
			reps[*nreps] = (uint32_t)i;
			h[j] = (uint32_t)++*nreps;
		}
		rep[i] = h[j] - 1;
	}
	free(h);
	return 0;
}

/* qsort_r order of sample indexes: by thread, then index. */
static int by_thread(const void *x, const void *y, void *arg)
{
	const struct profile_sample *const *s = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int r = profile_thread_cmp(s[a], s[b]);
	return r ? r : (a > b) - (a < b);
}

size_t profile_thread_order(const struct profile_sample *const *s, size_t n, uint32_t *thread, uint32_t *first)
{
	if (n >= UINT32_MAX / 2)
		return SIZE_MAX;
	size_t nreps, nthreads = SIZE_MAX;
	uint32_t *rep = malloc((n ? n : 1) * sizeof *rep), *reps = malloc((n ? n : 1) * sizeof *reps), *tof = NULL;
	if (!rep || !reps || label_reps(s, n, rep, reps, &nreps) < 0 || !(tof = malloc((nreps ? nreps : 1) * sizeof *tof)))
		goto out;
	/* The lists' first samples in thread order: each list's thread. */
	if (nreps > 1)
		qsort_r(reps, nreps, sizeof *reps, by_thread, (void *)s);
	nthreads = 0;
	for (size_t k = 0; k < nreps; k++) {
		if (k == 0 || profile_thread_cmp(s[reps[k - 1]], s[reps[k]]) != 0)
			first[nthreads++] = reps[k];
		tof[rep[reps[k]]] = (uint32_t)(nthreads - 1);
	}
	for (size_t i = 0; i < n; i++)
		thread[i] = tof[rep[i]];
out:
	free(tof);
	free(rep);
	free(reps);
	return nthreads;
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
