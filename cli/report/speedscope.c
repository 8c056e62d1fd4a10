/*
 * speedscope.c -- `cpuprof report --format speedscope`: speedscope's file
 * format (https://www.speedscope.app/file-format-schema.json), one
 * "sampled" profile per thread, its samples in the order they were taken.
 *
 * The frames are the stackset's, named as every format names them (their
 * labels: " (inlined)", " [k]", " [jit]", and " file:line" with --lines),
 * with the source file and the line (or the function's first line) beside
 * the name.  Threads are the samples' pid and tid labels (process and
 * thread where a number is missing), each profile named "PROCESS PID /
 * THREAD TID"; the stacks come with the grouping frames of --group-by
 * thread at their root (report.c builds them so), which a thread's own
 * profile leaves out.
 *
 * Each time of a pprof Sample (pprof_read.h) is a sample of its thread,
 * weighing its part of the Sample's value: the value chosen (--value)
 * shared in proportion to the times' weights, so that a thread's weights
 * add up to its value in every other format (in cpuprof's profiles, where
 * the weights add up to the Sample's ns, a time's weight is its ns); a
 * value that counts samples is shared equally.  A thread's samples of
 * every profile merged are sorted by time, each profile's times moved by
 * its start (time_nanos) to one clock.  An off-CPU interval (with --value
 * wall or off-cpu) is a sample at the time its thread left the CPU,
 * weighing how long it stayed off.  speedscope lays a profile's samples
 * end to end, so its timeline is the order of the samples and their
 * weights, not the clock: startValue is 0, endValue the weights' sum.
 *
 * Samples that have no time in a profile that has times (cpuprof's
 * [lost], [unsampled: ...] and [profiler: ...]: CPU its clocks measured
 * that no sample placed) are a profile of their own, "[not placed in
 * time]", under their threads' grouping frames: left in a thread's
 * profile they would be put at a time that is not theirs, left out the
 * export would account for less than the other formats.  When no profile
 * has times (written by a cpuprof before 2026-12, or another profiler),
 * each thread's profile holds its Samples in file order, one sample each,
 * and the names say so.  Samples whose value is not above 0 are left out:
 * speedscope's weights are positive.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "format.h"
#include "report.h"

/* One sample of the output: ss sample `sample`, in profile `thread` (its
 * index in the threads' order; NOT_PLACED for "[not placed in time]"),
 * at time t (ns on the merged clock), weighing w. */
struct event {
	uint32_t thread, sample;
	int64_t t, w;
};

#define NOT_PLACED UINT32_MAX

/* What the writer works from. */
struct sctx {
	const struct report_input *in;
	const struct stackset *ss;
	const struct profile_sample **smp; /* per ss sample: its pprof Sample */
	bool timed;                        /* some profile has times */
};

/* qsort order of one profile's events: by time, sample, weight. */
static int by_time(const void *x, const void *y)
{
	const struct event *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->sample != b->sample)
		return a->sample < b->sample ? -1 : 1;
	return (a->w > b->w) - (a->w < b->w);
}

/* "PROCESS PID / THREAD TID" of sample s into buf, each part that its
 * labels have. */
static void thread_name(char *buf, size_t len, const struct profile_sample *s)
{
	static const char *const keys[2][2] = { { "process", "pid" }, { "thread", "tid" } };
	size_t o = 0;
	buf[0] = '\0';
	for (int k = 0; k < 2 && o < len; k++) {
		bool has;
		int64_t n = profile_label_num(s, keys[k][1], &has);
		const char *str = profile_label_str(s, keys[k][0]);
		const char *sep = k && o ? " / " : "";
		int w = 0;
		if (*str && has)
			w = snprintf(buf + o, len - o, "%s%s %" PRId64, sep, str, n);
		else if (has)
			w = snprintf(buf + o, len - o, "%s%s %" PRId64, sep, keys[k][1], n);
		else if (*str)
			w = snprintf(buf + o, len - o, "%s%s", sep, str);
		o += w > 0 ? (size_t)w : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "[no thread labels]");
}

/* speedscope's unit of the value's unit. */
static const char *value_unit(const char *unit)
{
	double ns = ns_per_unit(unit);
	return ns == 1     ? "nanoseconds"
	       : ns == 1e3 ? "microseconds"
	       : ns == 1e6 ? "milliseconds"
	       : ns == 1e9 ? "seconds"
	       : !strcmp(unit, "bytes") ? "bytes"
				       : "none";
}

/* Appends to ev the events of ss sample i, in profile `thread`, at
 * `shift` ns on the merged clock: one per time (its part of the value,
 * as the head comment says), or one of the whole value without times.
 * Leaves out those that weigh nothing.  Returns the new count. */
static size_t sample_events(const struct sctx *c, uint32_t i, uint32_t thread, int64_t shift, struct event *ev,
			    size_t n)
{
	const struct profile_sample *s = c->smp[i];
	int64_t v = c->ss->samples[i].value;
	if (v <= 0)
		return n;
	if (!s->ntimes || thread == NOT_PLACED) {
		ev[n++] = (struct event){ thread, i, 0, v };
		return n;
	}
	bool by_weight = ns_per_unit(c->ss->unit) != 0;
	double sum = 0, cum = 0;
	for (size_t k = 0; k < s->ntimes; k++)
		sum += s->times[k].weight > 0 ? (double)s->times[k].weight : 0;
	if (sum <= 0)
		by_weight = false;
	int64_t given = 0;
	for (size_t k = 0; k < s->ntimes; k++) {
		/* Shares that add up to v exactly. */
		cum += by_weight ? (s->times[k].weight > 0 ? (double)s->times[k].weight : 0) : 1;
		double f = cum / (by_weight ? sum : (double)s->ntimes);
		int64_t upto = k + 1 == s->ntimes ? v : (int64_t)((double)v * (f < 1 ? f : 1));
		if (upto - given > 0)
			ev[n++] = (struct event){ thread, i, sat_add(shift, s->times[k].t), upto - given };
		if (upto > given)
			given = upto;
	}
	return n;
}

/* Numbers are written by hand into a buffer of a fixed size, flushed
 * before the longest a write may add (a sign, 19 digits and a
 * separator) would not fit: the samples' millions of frame indexes and
 * weights, which fprintf made most of the export's time. */
struct numbuf {
	FILE *out;
	size_t n;
	char b[4096];
};

#define NUM_MAX 24

/* Writes what nb holds. */
static void nb_flush(struct numbuf *nb)
{
	fwrite(nb->b, 1, nb->n, nb->out);
	nb->n = 0;
}

/* Appends the character ch. */
static void nb_char(struct numbuf *nb, char ch)
{
	if (nb->n == sizeof nb->b)
		nb_flush(nb);
	nb->b[nb->n++] = ch;
}

/* Appends `sep` (unless 0) and v in decimal. */
static void nb_int(struct numbuf *nb, char sep, int64_t v)
{
	if (nb->n > sizeof nb->b - NUM_MAX)
		nb_flush(nb);
	char d[20], *p = nb->b + nb->n;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	int k = 0;
	if (sep)
		*p++ = sep;
	if (v < 0)
		*p++ = '-';
	do
		d[k++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	while (k > 0)
		*p++ = d[--k];
	nb->n = (size_t)(p - nb->b);
}

/* Writes sample i's frames, root first, leaving out its grouping frames
 * unless `grouped`. */
static void put_stack(struct numbuf *nb, const struct stackset *ss, uint32_t i, bool grouped)
{
	const struct stack_sample *s = &ss->samples[i];
	uint32_t k = 0;
	while (!grouped && k < s->n && (ss->frames[ss->stack_frames[s->off + k]].kind == FRAME_PROCESS ||
					ss->frames[ss->stack_frames[s->off + k]].kind == FRAME_THREAD))
		k++;
	nb_char(nb, '[');
	for (uint32_t j = k; j < s->n; j++)
		nb_int(nb, j > k ? ',' : 0, ss->stack_frames[s->off + j]);
	nb_char(nb, ']');
}

/* Writes the profile of events ev[0..n) (one thread's, or those not
 * placed in time), named `name`. */
static void put_profile(FILE *out, const struct sctx *c, const struct event *ev, size_t n, const char *name)
{
	int64_t total = 0;
	for (size_t k = 0; k < n; k++)
		total = sat_add(total, ev[k].w);
	fputs("{\"type\":\"sampled\",\"name\":", out);
	flame_json_string(out, name);
	fputs(",\"unit\":", out);
	flame_json_string(out, value_unit(c->ss->unit));
	fprintf(out, ",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[", total);
	struct numbuf nb = { .out = out };
	for (size_t k = 0; k < n; k++) {
		if (k)
			nb_char(&nb, ',');
		put_stack(&nb, c->ss, ev[k].sample, ev[k].thread == NOT_PLACED);
	}
	nb_flush(&nb);
	fputs("],\"weights\":[", out);
	for (size_t k = 0; k < n; k++)
		nb_int(&nb, k ? ',' : 0, ev[k].w);
	nb_flush(&nb);
	fputs("]}", out);
}

/* The frames: each its label, and where known its source file and line
 * (with --lines the line sampled, else the function's first). */
static void put_frames(FILE *out, const struct stackset *ss)
{
	fputs("\"shared\":{\"frames\":[", out);
	for (size_t i = 0; i < ss->nframes; i++) {
		const struct frame *f = &ss->frames[i];
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		flame_json_string(out, f->label);
		if (*f->file) {
			fputs(",\"file\":", out);
			flame_json_string(out, f->file);
		}
		int64_t line = f->line > 0 ? f->line : f->start_line;
		if (line > 0)
			fprintf(out, ",\"line\":%" PRId64, line);
		fputc('}', out);
	}
	fputs("]}", out);
}

/* The file's name: the profiles', the value counted, and a note when the
 * samples have no times. */
static void put_title(FILE *out, const struct sctx *c)
{
	char name[1024];
	size_t o = 0;
	name[0] = '\0';
	for (size_t i = 0; i < c->in->n && o < sizeof name; i++)
		o += (size_t)snprintf(name + o, sizeof name - o, "%s%s", i ? ", " : "", c->in->names[i]);
	if (o < sizeof name)
		snprintf(name + o, sizeof name - o, " (%s%s)", c->ss->value_type,
			 c->timed ? "" : "; no sample times: each thread's stacks aggregated, in no time order");
	fputs("\"name\":", out);
	flame_json_string(out, name);
}

/* Writes the file from the events, sorted; thread_of[k] is the ss sample
 * that names profile k. */
static void put_file(FILE *out, const struct sctx *c, const struct event *ev, size_t n, const uint32_t *thread_of)
{
	/* Open the heaviest thread's profile first. */
	size_t active = 0, nprof = 0;
	int64_t best = -1;
	for (size_t a = 0, b; a < n; a = b) {
		int64_t w = 0;
		for (b = a; b < n && ev[b].thread == ev[a].thread; b++)
			w = sat_add(w, ev[b].w);
		if (ev[a].thread != NOT_PLACED && w > best)
			best = w, active = nprof;
		nprof++;
	}
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
	put_frames(out, c->ss);
	fputs(",\"profiles\":[", out);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && ev[b].thread == ev[a].thread; b++)
			;
		char name[600];
		if (ev[a].thread == NOT_PLACED) {
			snprintf(name, sizeof name, "[not placed in time]");
		} else {
			thread_name(name, sizeof name - 60, c->smp[thread_of[ev[a].thread]]);
			if (!c->timed)
				strcat(name, " (no times: stacks aggregated)");
		}
		if (a)
			fputc(',', out);
		put_profile(out, c, ev + a, b - a, name);
	}
	fprintf(out, "],\"activeProfileIndex\":%zu,", active);
	put_title(out, c);
	fputs(",\"exporter\":\"cpuprof " CPUPROF_CLI_VERSION "\"}\n", out);
}

int speedscope_write(FILE *out, const struct report_input *in, const struct stackset *ss)
{
	struct sctx c = { in, ss, NULL, false };
	uint32_t *order = NULL, *thread = NULL, *thread_of = NULL, *prof = NULL;
	size_t *pos = NULL;
	struct event *ev = NULL;
	int64_t *shift = calloc(in->n ? in->n : 1, sizeof *shift);
	int rc = -1;
	size_t ns = ss->nsamples, nev = 0, nthreads = 0;
	if (ns >= UINT32_MAX || !shift)
		goto out;
	c.smp = malloc((ns ? ns : 1) * sizeof *c.smp);
	order = malloc((ns ? ns : 1) * sizeof *order);
	thread = malloc((ns ? ns : 1) * sizeof *thread);
	thread_of = malloc((ns ? ns : 1) * sizeof *thread_of);
	prof = malloc((ns ? ns : 1) * sizeof *prof);
	if (!c.smp || !order || !thread || !thread_of || !prof)
		goto out;
	/* ss's samples are the profiles' Samples in order; each profile's
	 * times move by its start, to the clock of the first to start. */
	int64_t t0 = INT64_MAX;
	size_t i = 0, ntimes = 0;
	for (size_t f = 0; f < in->n; f++) {
		const struct profile *p = in->profiles[f];
		if (p->time_unit_ns && p->time_nanos < t0)
			t0 = p->time_nanos;
		c.timed |= p->time_unit_ns != 0;
		for (size_t s = 0; s < p->nsamples && i < ns; s++, i++) {
			c.smp[i] = &p->samples[s];
			prof[i] = (uint32_t)f;
			ntimes += p->samples[s].ntimes;
		}
	}
	for (size_t f = 0; f < in->n; f++)
		if (in->profiles[f]->time_unit_ns && __builtin_sub_overflow(in->profiles[f]->time_nanos, t0, &shift[f]))
			shift[f] = INT64_MAX;
	/* Threads in order of pid and tid; order: the samples by thread. */
	if ((nthreads = profile_thread_order(c.smp, ns, thread, thread_of)) == SIZE_MAX ||
	    !(pos = calloc(nthreads + 2, sizeof *pos)) || !(ev = malloc((ntimes + ns ? ntimes + ns : 1) * sizeof *ev)))
		goto out;
	for (size_t k = 0; k < ns; k++)
		pos[thread[k] + 2]++;
	for (size_t t = 2; t < nthreads + 2; t++)
		pos[t] += pos[t - 1];
	for (size_t k = 0; k < ns; k++)
		order[pos[thread[k] + 1]++] = (uint32_t)k;
	/* Each thread's events (then those not placed), sorted by time. */
	for (size_t t = 0; t <= nthreads; t++) {
		size_t from = nev, a = t < nthreads ? pos[t] : 0, b = t < nthreads ? pos[t + 1] : ns;
		for (size_t j = a; j < b; j++) {
			uint32_t k = t < nthreads ? order[j] : (uint32_t)j;
			/* In a profile with times, a Sample without any is
			 * not placed; a profile without times (merged with
			 * one that has them) keeps its Samples in their
			 * threads, in file order. */
			bool placed = !in->profiles[prof[k]]->time_unit_ns || c.smp[k]->ntimes;
			if (placed == (t < nthreads))
				nev = sample_events(&c, k, placed ? (uint32_t)t : NOT_PLACED, shift[prof[k]], ev, nev);
		}
		if (nev - from > 1)
			qsort(ev + from, nev - from, sizeof *ev, by_time);
	}
	put_file(out, &c, ev, nev, thread_of);
	rc = 0;
out:
	free(ev);
	free(pos);
	free(prof);
	free(thread_of);
	free(thread);
	free(order);
	free(c.smp);
	free(shift);
	return rc;
}
