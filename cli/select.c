/*
 * select.c -- a part of a profile (select.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"

int select_flags(const struct flags *fs, struct flag_value from, struct flag_value to, struct flag_value pid,
		 struct flag_value tid, struct profile_selection *sel)
{
	*sel = (struct profile_selection){ from.set, to.set, from.x, to.x, NULL, NULL, 0, 0 };
	if (pid.set && !flags_ids(pid.text, INT32_MAX, &sel->pids, &sel->npids)) {
		flags_refuse(fs, "--pid %s is not a list of process ids (1234 or 1234,1240)", pid.text);
		return -1;
	}
	if (tid.set && !flags_ids(tid.text, INT32_MAX, &sel->tids, &sel->ntids)) {
		flags_refuse(fs, "--tid %s is not a list of thread ids (1234 or 1234,1240)", tid.text);
		select_free(sel);
		return -1;
	}
	if (from.set && to.set && to.x <= from.x) {
		flags_refuse(fs, "--to %s is not after --from %s", to.text, from.text);
		select_free(sel);
		return -1;
	}
	return 0;
}

void select_free(struct profile_selection *sel)
{
	free(sel->pids);
	free(sel->tids);
	sel->pids = sel->tids = NULL;
}

bool select_any(const struct profile_selection *sel)
{
	return sel->from_set || sel->to_set || sel->pids || sel->tids;
}

/* Whether sample s has label `key` with a number among ids[n]. */
static bool label_in(const struct profile_sample *s, const char *key, const long *ids, size_t n)
{
	const struct profile_label *l = profile_label(s, key);
	for (size_t i = 0; l && i < n; i++)
		if (l->num == ids[i])
			return true;
	return false;
}

/* The selection in words, for messages and the comment. */
static void describe(const struct profile_selection *sel, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
#define SAY(...)                                                                               \
	do {                                                                                   \
		int w_ = snprintf(buf + used, len - used, __VA_ARGS__);                        \
		used = w_ < 0 || (size_t)w_ >= len - used ? len - 1 : used + (size_t)w_;        \
	} while (0)
	if (sel->from_set || sel->to_set)
		SAY("%gs to ", sel->from_set ? sel->from : 0.0);
	if (sel->to_set)
		SAY("%gs", sel->to);
	else if (sel->from_set)
		SAY("the end");
	for (size_t i = 0; i < sel->npids; i++)
		SAY("%s%ld", i ? "," : used ? " pid " : "pid ", sel->pids[i]);
	for (size_t i = 0; i < sel->ntids; i++)
		SAY("%s%ld", i ? "," : used ? " tid " : "tid ", sel->tids[i]);
#undef SAY
}

/* What of time t's sample (of weight w, an interval from t if off-CPU)
 * falls in [from, to): its weight there, and whether it counts. */
static bool within(const struct profile_time *t, bool interval, int64_t from, int64_t to, int64_t *w)
{
	if (!interval) {
		*w = t->weight;
		return t->t >= from && t->t < to;
	}
	int64_t end = sat_add(t->t, t->weight);
	int64_t a = t->t > from ? t->t : from, b = end < to ? end : to;
	*w = b > a ? b - a : 0;
	return b > a || (t->weight == 0 && t->t >= from && t->t < to);
}

/* Whether the values of sample type v count samples (scaled by the
 * samples kept) rather than time (scaled by their weight). */
static bool counts(const struct profile *p, size_t v)
{
	return strcmp(p->sample_types[v].unit, "nanoseconds") != 0;
}

/* Sample s as the part of it within [from, to), into values (its new
 * values) and times (its new times, moved to count from `from`).  How
 * many times it keeps. */
static size_t clip(const struct profile *p, const struct profile_sample *s, int64_t from, int64_t to,
		   int64_t *values, struct profile_time *times)
{
	int64_t off = 0, all = 0, kept_w = 0;
	size_t kept = 0;
	for (size_t v = 0; v < p->nsample_types; v++)
		if (!strcmp(p->sample_types[v].type, "off_cpu"))
			off = s->values[v];
	bool interval = off > 0; /* an off-CPU Sample: its times are intervals */
	for (size_t k = 0; k < s->ntimes; k++) {
		int64_t w;
		all = sat_add(all, s->times[k].weight);
		if (!within(&s->times[k], interval, from, to, &w))
			continue;
		int64_t t = s->times[k].t > from ? s->times[k].t - from : 0;
		times[kept++] = (struct profile_time){ t, w };
		kept_w = sat_add(kept_w, w);
	}
	for (size_t v = 0; v < p->nsample_types; v++) {
		double f = counts(p, v) ? (double)kept / (double)s->ntimes
					: all > 0 ? (double)kept_w / (double)all : (double)kept / (double)s->ntimes;
		values[v] = (int64_t)((double)s->values[v] * f + (s->values[v] < 0 ? -0.5 : 0.5));
	}
	return kept;
}

/* Seconds as ns, at most INT64_MAX. */
static int64_t ns_of(double s)
{
	return s * 1e9 >= 9.2e18 ? INT64_MAX : (int64_t)(s * 1e9);
}

int profile_select(struct profile *p, const struct profile_selection *sel, char *err, size_t errlen)
{
	if (!select_any(sel))
		return 0;
	char what[256];
	describe(sel, what, sizeof what);
	bool ranged = sel->from_set || sel->to_set;
	double dur = (double)p->duration_nanos / 1e9;
	int64_t from = 0, to = INT64_MAX;
	if (ranged) {
		if (!p->time_unit_ns) {
			snprintf(err, errlen, "its samples have no times (written by a cpuprof before 2026-12 or by "
					      "another profiler): --from and --to need them");
			return -1;
		}
		if ((sel->from_set && sel->from < 0) || (sel->to_set && sel->to <= 0) ||
		    (sel->from_set && sel->to_set && sel->to <= sel->from) ||
		    (sel->from_set && p->duration_nanos > 0 && sel->from >= dur)) {
			snprintf(err, errlen, "%s is outside the profile, which covers 0s to %.3fs", what, dur);
			p->nsamples = 0;
			return 1;
		}
		from = sel->from_set ? ns_of(sel->from) : 0;
		to = sel->to_set ? ns_of(sel->to) : INT64_MAX;
	}
	size_t ntimes = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		ntimes += p->samples[i].ntimes;
	int64_t *values = malloc((p->nsamples ? p->nsamples : 1) * (p->nsample_types ? p->nsample_types : 1) *
				 sizeof *values);
	struct profile_time *times = malloc((ntimes ? ntimes : 1) * sizeof *times);
	char *comment = NULL;
	const char **comments = realloc(p->comments, (p->ncomments + 1) * sizeof *comments);
	if (comments)
		p->comments = comments;
	if (!values || !times || !comments || asprintf(&comment, "selection=%s", what) < 0) {
		free(values);
		free(times);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t n = 0, nt = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		struct profile_sample s = p->samples[i];
		if ((sel->pids && !label_in(&s, "pid", sel->pids, sel->npids)) ||
		    (sel->tids && !label_in(&s, "tid", sel->tids, sel->ntids)) || (ranged && !s.ntimes))
			continue;
		int64_t *v = values + n * p->nsample_types;
		if (ranged) {
			size_t kept = clip(p, &s, from, to, v, times + nt);
			if (!kept)
				continue;
			s.times = times + nt;
			s.ntimes = kept;
			nt += kept;
		} else {
			memcpy(v, s.values, p->nsample_types * sizeof *v);
		}
		s.values = v;
		p->samples[n++] = s;
	}
	free(p->priv_.sel_values);
	free(p->priv_.sel_times);
	free(p->priv_.sel_comment);
	p->priv_.sel_values = values;
	p->priv_.sel_times = times;
	p->priv_.sel_comment = comment;
	p->comments[p->ncomments++] = comment;
	p->nsamples = n;
	if (ranged) {
		int64_t end = to < p->duration_nanos || p->duration_nanos <= 0 ? to : p->duration_nanos;
		p->time_nanos = sat_add(p->time_nanos, from);
		p->duration_nanos = end == INT64_MAX ? 0 : end - from;
	}
	if (!n) {
		snprintf(err, errlen, "no sample is in %s", what);
		return 1;
	}
	return 0;
}
