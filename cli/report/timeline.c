/*
 * timeline.c -- the flame graph page's timeline (flame.c writes it into
 * the page's data as its "timeline" member): when each sample was taken,
 * on which thread, with which stack, so that the page can draw a lane of
 * CPU (and off-CPU) time per thread and redraw the flame graph for a range
 * of time.
 *
 * The member: {"unit": U, "duration": NS, "lanes": [pid, "process", tid,
 * "thread", ...] (-1 and "" where a sample has no such label; ordered by
 * pid, then tid), "counts": [per value of the page's menu: 1 if it counts
 * samples rather than nanoseconds], "data": BASE64, "n": [records, CPU
 * times, off-CPU times]} or, where there is
 * nothing to draw, {"none": "why"}.  The data are varints (7 bits a byte,
 * low first), one record per pprof Sample that has times, in the
 * profile's order:
 *   node    the page's node its stack ends at (its index in "nodes",
 *           from 1), 0 if the page has none
 *   lane    its index in "lanes" (4 entries each)
 *   count   the samples it stands for (samples/count, else 1)
 *   flags   1 if its times are off-CPU intervals (off_cpu > 0)
 *   values  one per value of the menu (the drawn one first), negative as 0
 *   R       the weight of its regular samples, ns
 *   n       how many times, then for each, in time order:
 *           (dt << 1 | irregular), dt in units of U since the previous
 *           time (the first: since the profile's start); if irregular,
 *           its weight in ns (otherwise it weighs R, within 1 ns).
 * U is the largest unit every time is a multiple of (the profile's unit,
 * less where --from moved the times off it).  Per Sample, not per
 * sample: a stack's times are close together, so that a time costs a
 * byte or so, about 1.6 bytes a sample as base64 (docs/report.md); and
 * the page finds a stack's samples in a range by two binary searches in
 * its times, their weight by the difference of two prefix sums, with no
 * sort and no walk over the samples.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/protobuf.h"
#include "report.h"

static void put_base64(FILE *out, const struct pb_buf *o)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char buf[4096];
	size_t k = 0;
	for (size_t i = 0; i < o->len; i += 3) {
		uint32_t v = (uint32_t)o->data[i] << 16;
		if (i + 1 < o->len)
			v |= (uint32_t)o->data[i + 1] << 8;
		if (i + 2 < o->len)
			v |= o->data[i + 2];
		buf[k++] = abc[v >> 18];
		buf[k++] = abc[(v >> 12) & 63];
		buf[k++] = i + 1 < o->len ? abc[(v >> 6) & 63] : '=';
		buf[k++] = i + 2 < o->len ? abc[v & 63] : '=';
		if (k + 4 > sizeof buf) {
			fwrite(buf, 1, k, out);
			k = 0;
		}
	}
	fwrite(buf, 1, k, out);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

/* A lane's labels, as the page names it. */
struct lane_key {
	int64_t pid, tid;
	const char *process, *thread;
};

static struct lane_key lane_of(const struct profile_sample *s)
{
	const struct profile_label *l;
	return (struct lane_key){
		.pid = (l = profile_label(s, "pid")) ? l->num : -1,
		.tid = (l = profile_label(s, "tid")) ? l->num : -1,
		.process = (l = profile_label(s, "process")) ? l->str : "",
		.thread = (l = profile_label(s, "thread")) ? l->str : "",
	};
}

static int int64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The weight most of Sample s's times have (the reader's even share of
 * what its irregular ones leave: within 1 ns of each other), their
 * median; scratch has room for its times. */
static int64_t regular_weight(const struct profile_sample *s, int64_t *scratch)
{
	for (size_t k = 0; k < s->ntimes; k++)
		scratch[k] = s->times[k].weight;
	qsort(scratch, s->ntimes, sizeof *scratch, int64_cmp);
	return scratch[s->ntimes / 2] > 0 ? scratch[s->ntimes / 2] : 0;
}

/* The "timeline" member when there is none: why, in one line. */
static void put_none(FILE *out, const char *why)
{
	fputs(",\n\"timeline\":{\"none\":", out);
	flame_json_string(out, why);
	fputc('}', out);
}

/* The values of Sample s of p for the menu: the drawn one (vi[0]) then
 * the others; negative as 0. */
static void put_values(struct pb_buf *o, const struct profile_sample *s, const int *vi, size_t nv)
{
	for (size_t v = 0; v < nv; v++) {
		int64_t x = vi[v] >= 0 ? s->values[vi[v]] : 0;
		cp_pb_varint(o, x > 0 ? (uint64_t)x : 0);
	}
}

/* The records of the data (above), lanes[i] being Sample i's lane; how
 * many records, CPU times and off-CPU times into n[3]. */
static int put_records(struct pb_buf *o, const struct profile *p, const struct stackset *ss, const struct calltree *t,
		       const uint32_t *pindex, const uint32_t *lanes, const int *vi, size_t nv, uint64_t unit,
		       size_t n[3])
{
	int off_vi = profile_find_sample_type(p, "off_cpu", "nanoseconds");
	int64_t *scratch = NULL;
	size_t most = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		most = p->samples[i].ntimes > most ? p->samples[i].ntimes : most;
	if (!(scratch = malloc((most ? most : 1) * sizeof *scratch)))
		return -1;
	int rc = -1;
	for (size_t i = 0; i < p->nsamples && i < ss->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (!s->ntimes)
			continue;
		int64_t r = regular_weight(s, scratch);
		bool off = off_vi >= 0 && s->values[off_vi] > 0;
		uint64_t count = ss->samples[i].count > 0 ? (uint64_t)ss->samples[i].count : 0;
		n[0]++;
		n[off ? 2 : 1] += s->ntimes;
		cp_pb_varint(o, pindex[t->leaf[i]]);
		cp_pb_varint(o, lanes[i]);
		cp_pb_varint(o, count);
		cp_pb_varint(o, off);
		put_values(o, s, vi, nv);
		cp_pb_varint(o, (uint64_t)r);
		cp_pb_varint(o, s->ntimes);
		int64_t last = 0;
		for (size_t k = 0; k < s->ntimes; k++) {
			int64_t w = s->times[k].weight > 0 ? s->times[k].weight : 0;
			bool irregular = w - r > 1 || r - w > 1; /* both at least 0: no overflow */
			int64_t at = s->times[k].t > last ? s->times[k].t : last; /* in order */
			uint64_t dt = (uint64_t)(at - last) / unit;
			last = at;
			cp_pb_varint(o, dt << 1 | irregular);
			if (irregular)
				cp_pb_varint(o, (uint64_t)w);
		}
		if (o->err)
			goto out;
	}
	rc = 0;
out:
	free(scratch);
	return rc;
}

/* Each Sample's lane into lanes[] (p->nsamples), and the lanes' labels
 * into the member's "lanes" array: a lane per thread of the Samples with
 * times, in profile_thread_cmp's order (a thread renamed as it ran is one
 * lane, as in speedscope's export), each labelled as its first Sample
 * is. */
static int put_lanes(FILE *out, const struct profile *p, uint32_t *lanes)
{
	size_t m = p->nsamples ? p->nsamples : 1, n = 0, nt = SIZE_MAX;
	const struct profile_sample **s = malloc(m * sizeof *s);
	uint32_t *idx = malloc(m * sizeof *idx), *thread = malloc(m * sizeof *thread),
		 *first = malloc(m * sizeof *first);
	if (s && idx && thread && first) {
		for (size_t i = 0; i < p->nsamples; i++)
			if (p->samples[i].ntimes) {
				idx[n] = (uint32_t)i;
				s[n++] = &p->samples[i];
			}
		nt = profile_thread_order(s, n, thread, first);
	}
	if (nt != SIZE_MAX) {
		fputs(",\"lanes\":[", out);
		for (size_t t = 0; t < nt; t++) {
			struct lane_key l = lane_of(s[first[t]]);
			fprintf(out, "%s%" PRId64 ",", t ? "," : "", l.pid);
			flame_json_string(out, l.process);
			fprintf(out, ",%" PRId64 ",", l.tid);
			flame_json_string(out, l.thread);
		}
		fputc(']', out);
		for (size_t k = 0; k < n; k++)
			lanes[idx[k]] = thread[k];
	}
	free(s);
	free(idx);
	free(thread);
	free(first);
	return nt == SIZE_MAX ? -1 : 0;
}

int timeline_write(FILE *out, const struct report_input *in, const struct stackset *ss, const struct calltree *t,
		   const uint32_t *pindex, const struct flame_tree *ft)
{
	if (in->n != 1) {
		put_none(out, "no timeline: several profiles merged, each with a clock of its own");
		return 0;
	}
	const struct profile *p = in->profiles[0];
	uint64_t unit = p->time_unit_ns;
	bool any = false;
	for (size_t i = 0; i < p->nsamples && unit; i++)
		for (size_t k = 0; k < p->samples[i].ntimes; k++) {
			any = true;
			unit = gcd(unit, (uint64_t)p->samples[i].times[k].t);
		}
	if (!any || !unit || !ss->nsamples) {
		put_none(out, "no sample times in this profile");
		return 0;
	}
	/* The values of the page's menu, the drawn one first, as indexes of
	 * the profile's sample types. */
	size_t nv = 1 + ft->nalt;
	int vi[4];
	if (nv > sizeof vi / sizeof *vi)
		return -1; /* cannot happen: cpu, off_cpu, wall */
	vi[0] = profile_find_sample_type(p, ss->value_type, ss->unit);
	for (size_t a = 0; a < ft->nalt; a++)
		vi[1 + a] = profile_find_sample_type(p, ft->alt[a].name, ft->alt[a].unit);
	uint32_t *lanes = calloc(p->nsamples ? p->nsamples : 1, sizeof *lanes);
	struct pb_buf o;
	cp_pb_init(&o);
	int rc = -1;
	if (!lanes)
		goto out;
	fprintf(out, ",\n\"timeline\":{\"unit\":%" PRIu64 ",\"duration\":%" PRId64, unit,
		p->duration_nanos > 0 ? p->duration_nanos : 0);
	if (put_lanes(out, p, lanes) < 0)
		goto out;
	fputs(",\"counts\":[", out);
	for (size_t v = 0; v < nv; v++)
		fprintf(out, "%s%d", v ? "," : "",
			vi[v] >= 0 && strcmp(p->sample_types[vi[v]].unit, "nanoseconds") != 0);
	fputs("],\n\"data\":\"", out);
	size_t n[3] = { 0, 0, 0 };
	if (put_records(&o, p, ss, t, pindex, lanes, vi, nv, unit, n) < 0)
		goto out;
	put_base64(out, &o);
	fprintf(out, "\",\"n\":[%zu,%zu,%zu]}", n[0], n[1], n[2]);
	rc = 0;
out:
	free(lanes);
	cp_pb_free(&o);
	return rc;
}
