/*
 * top.c -- `cpuprof report --format top` (the default): the header, then
 * the frames with the most flat value, like `go tool pprof -top`.  A
 * sample's flat value goes to its leaf frame (the innermost inlined call
 * when its location has several lines); a frame counts once towards cum
 * per sample however often it is on the stack.  Rows are the stackset's
 * frames: functions by name, inlined ones as "NAME (inlined)" rows of
 * their own, and with --lines one row per function and source line.
 * With --intervals each share has its 95% interval from the sampling
 * beside it (shares.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "report.h"
#include "shares.h"

/* One row of the report: a frame and its totals. */
struct row {
	const char *name;
	int64_t flat, cum;
	double flat_lo, flat_hi, cum_lo, cum_hi; /* with intervals */
};

/* qsort order of rows: flat descending, then cum descending, then name. */
static int by_flat(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* "[lo, hi]" in percent into buf. */
static void format_interval(char *buf, size_t len, double lo, double hi)
{
	snprintf(buf, len, "[%.2f, %.2f]", 100 * lo, 100 * hi);
}

/* Fills every row's intervals; -1 if out of memory. */
static int intervals(struct row *rows, const struct stackset *ss)
{
	size_t nf = ss->nframes;
	struct share_sum *flat = calloc(nf ? nf : 1, sizeof *flat);
	struct share_sum *cum = calloc(nf ? nf : 1, sizeof *cum);
	if (!flat || !cum || share_frames(ss, 0, ss->nsamples, flat, cum) < 0) {
		free(flat);
		free(cum);
		return -1;
	}
	struct share_base b;
	share_base_of(&b, ss, 0, ss->nsamples);
	for (size_t i = 0; i < nf; i++) {
		share_interval(&flat[i], &b, SHARE_Z95, &rows[i].flat_lo, &rows[i].flat_hi);
		share_interval(&cum[i], &b, SHARE_Z95, &rows[i].cum_lo, &rows[i].cum_hi);
	}
	free(flat);
	free(cum);
	return 0;
}

/* The line under the header that says where the intervals come from. */
static void intervals_line(FILE *out, const struct stackset *ss)
{
	struct share_base b;
	share_base_of(&b, ss, 0, ss->nsamples);
	fprintf(out, "Intervals: 95%% (Wilson's, on each share's effective samples) from "
		"%.0f samples, %.1f effective%s\n", b.n, b.neff,
		ss->has_count ? "" : " (no samples/count type: one a pprof Sample)");
}

int top_write(FILE *out, const struct report_input *in,
	      const struct stackset *ss, long top, bool with_intervals)
{
	if (in->profiles[0]->nsample_types == 0) {
		fprintf(out, "The profile has no sample types (and so no values).\n");
		return 0;
	}
	size_t nf = ss->nframes;
	struct row *rows = calloc(nf ? nf : 1, sizeof *rows);
	size_t *stamp = calloc(nf ? nf : 1, sizeof *stamp);
	if (!rows || !stamp) {
		free(rows);
		free(stamp);
		return -1;
	}
	for (size_t i = 0; i < nf; i++)
		rows[i].name = ss->frames[i].label;
	for (size_t s = 0; s < ss->nsamples; s++) {
		const struct stack_sample *smp = &ss->samples[s];
		for (uint32_t k = 0; k < smp->n; k++) {
			uint32_t f = ss->stack_frames[smp->off + k];
			if (k + 1 == smp->n)
				rows[f].flat = sat_add(rows[f].flat, smp->value);
			if (stamp[f] != s + 1) {
				stamp[f] = s + 1;
				rows[f].cum = sat_add(rows[f].cum, smp->value);
			}
		}
	}
	free(stamp);
	if (with_intervals && intervals(rows, ss) < 0) {
		free(rows);
		return -1;
	}
	header_print(out, in, ss);
	if (with_intervals)
		intervals_line(out, ss);

	/* Frames that only appear in samples of value 0 are dropped, and so
	 * are grouping frames (they are no functions). */
	size_t n = 0;
	for (size_t i = 0; i < nf; i++)
		if ((rows[i].flat != 0 || rows[i].cum != 0) &&
		    ss->frames[i].kind != FRAME_PROCESS &&
		    ss->frames[i].kind != FRAME_THREAD)
			rows[n++] = rows[i];
	if (n > 1)
		qsort(rows, n, sizeof *rows, by_flat);
	size_t nrows = top > 0 && (size_t)top < n ? (size_t)top : n;
	int64_t shown = 0;
	for (size_t i = 0; i < nrows; i++)
		shown = sat_add(shown, rows[i].flat);
	char a[64], b[64], pct[16];
	format_value(a, sizeof a, shown, ss->unit);
	format_value(b, sizeof b, ss->total, ss->unit);
	format_pct(pct, sizeof pct, shown, ss->total);
	fprintf(out, "Showing %zu of %zu functions, accounting for %s (%s) of %s total\n",
		nrows, n, a, pct, b);
	if (with_intervals)
		fprintf(out, "%10s %7s %-16s %7s %10s %7s %-16s  %s\n", "flat", "flat%",
			" 95% interval", "sum%", "cum", "cum%", " 95% interval", "name");
	else
		fprintf(out, "%10s %7s %7s %10s %7s  %s\n", "flat", "flat%", "sum%",
			"cum", "cum%", "name");
	int64_t sum = 0;
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		char flat[64], fp[16], sp[16], cum[64], cp[16], fi[48], ci[48];
		sum = sat_add(sum, r->flat);
		format_value(flat, sizeof flat, r->flat, ss->unit);
		format_value(cum, sizeof cum, r->cum, ss->unit);
		format_pct(fp, sizeof fp, r->flat, ss->total);
		format_pct(sp, sizeof sp, sum, ss->total);
		format_pct(cp, sizeof cp, r->cum, ss->total);
		if (with_intervals) {
			format_interval(fi, sizeof fi, r->flat_lo, r->flat_hi);
			format_interval(ci, sizeof ci, r->cum_lo, r->cum_hi);
			fprintf(out, "%10s %7s %-16s %7s %10s %7s %-16s  ", flat, fp, fi,
				sp, cum, cp, ci);
		} else {
			fprintf(out, "%10s %7s %7s %10s %7s  ", flat, fp, sp, cum, cp);
		}
		put_name(out, r->name, NULL);
		fputc('\n', out);
	}
	free(rows);
	return 0;
}
