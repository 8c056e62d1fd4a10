/*
 * text.c -- `cpuprof diff`'s text format (the default): what each
 * profile is (the comments `report` shows), how they were compared, the
 * smallest change their samples can detect, and a table like `report`'s
 * top: a line per function and measure (flat, then cum; flat only where
 * the function is a leaf in either profile), with its value, share and
 * 95% interval in each profile, the change in percentage points and
 * Holm's p-value, marked '+' (grew) or '-' (shrank) where the change is
 * beyond the noise and at least the threshold.  Functions that changed
 * come first, by their largest change.
 */
#include <math.h>
#include <stdint.h>

#include "diff.h"
#include "report/format.h"

/* The profiles of one side, with their comments. */
static void side(FILE *out, const char *label, const struct report_input *in)
{
	if (in->n == 1) {
		fprintf(out, "%s ", label);
		put_name(out, in->names[0], NULL);
		fputc('\n', out);
		header_comments(out, in->profiles[0], "  ");
		return;
	}
	fprintf(out, "%s: %zu profiles merged\n", label, in->n);
	for (size_t i = 0; i < in->n; i++) {
		fputs("  ", out);
		put_name(out, in->names[i], NULL);
		fputc('\n', out);
		header_comments(out, in->profiles[i], "    ");
	}
}

/* A value as report writes it, from a double sum. */
static void value(char *buf, size_t len, double v, const char *unit)
{
	format_value(buf, len, v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v), unit);
}

/* "[lo, hi]" of sums s in b, in percent. */
static void interval(char *buf, size_t len, const struct share_sum *s,
		     const struct share_base *b)
{
	double lo, hi;
	share_interval(s, b, SHARE_Z95, &lo, &hi);
	snprintf(buf, len, "[%.2f, %.2f]", 100 * lo, 100 * hi);
}

/* One line of the table. */
static void line(FILE *out, const struct diff *d, const struct diff_row *r,
		 const struct diff_measure *m, const char *what)
{
	const char *unit = d->ss->unit;
	char va[64], vb[64], pa[16], pb[16], ia[48], ib[48], ch[24], p[16];
	value(va, sizeof va, m->a.w, unit);
	value(vb, sizeof vb, m->b.w, unit);
	snprintf(pa, sizeof pa, "%.2f%%", 100 * m->c.a);
	snprintf(pb, sizeof pb, "%.2f%%", 100 * m->c.b);
	interval(ia, sizeof ia, &m->a, &d->a);
	interval(ib, sizeof ib, &m->b, &d->b);
	snprintf(ch, sizeof ch, "%+.2fpp", 100 * (m->c.b - m->c.a));
	if (m->tested)
		snprintf(p, sizeof p, "%.2g", m->padj);
	else
		snprintf(p, sizeof p, "-");
	fprintf(out, "%c %-4s %10s %7s %-16s %10s %7s %-16s %9s %8s  ",
		m->verdict > 0 ? '+' : m->verdict < 0 ? '-' : ' ', what, va, pa, ia,
		vb, pb, ib, ch, p);
	put_name(out, d->ss->frames[r->frame].label, NULL);
	fputc('\n', out);
}

int diff_text_write(FILE *out, const struct diff_input *in,
		    const struct diff *d, long top)
{
	const char *unit = d->ss->unit;
	side(out, "BASE", &in->base);
	side(out, "NEW ", &in->new);
	if (!d->ss->is_cpu)
		fprintf(out, "Sample type: %s/%s%s\n", d->ss->value_type, unit,
			d->ss->has_cpu ? "" : " (the profiles have no cpu/nanoseconds)");
	char ta[64], tb[64];
	value(ta, sizeof ta, d->a.w, unit);
	value(tb, sizeof tb, d->b.w, unit);
	fprintf(out, "Compared by share: BASE %s in %.0f samples (%.1f effective), "
		"NEW %s in %.0f samples (%.1f effective)%s\n", ta, d->a.n, d->a.neff,
		tb, d->b.n, d->b.neff,
		d->ss->has_count ? "" : "; no samples/count type: one sample a pprof Sample");
	if (d->left_a > 0 || d->left_b > 0) {
		value(ta, sizeof ta, d->left_a, unit);
		value(tb, sizeof tb, d->left_b, unit);
		fprintf(out, "Left out: BASE %s and NEW %s of cpuprof's accounting ([lost], "
			"[unsampled: ...], [profiler: ...]) and values with no samples "
			"behind them\n", ta, tb);
	}
	fprintf(out, "Test: two-sample z test of each function's flat and cum share, "
		"Holm's correction over %zu tests, false-alarm rate %g; a change counts "
		"from %gpp; intervals 95%%\n", d->ntests, d->o.alpha, 100 * d->o.threshold);
	fprintf(out, "Detectable with 80%% power: %.2fpp at a 50%% share, %.2fpp at "
		"10%%, %.2fpp at 1%%\n", 100 * d->mde50, 100 * d->mde10, 100 * d->mde1);
	char few[512];
	diff_too_few(few, sizeof few, d);
	if (*few)
		fprintf(out, "Warning: %s\n", few);
	if (d->nchanged)
		fprintf(out, "Changed beyond noise: %zu of %zu functions\n", d->nchanged,
			d->nrows);
	else
		fprintf(out, "Nothing changed beyond noise (%zu functions)\n", d->nrows);

	size_t n = top > 0 && (size_t)top < d->nrows ? (size_t)top : d->nrows;
	if (n < d->nchanged)
		n = d->nchanged;
	fprintf(out, "%c %-4s %10s %7s %-16s %10s %7s %-16s %9s %8s  %s\n", ' ', "",
		"BASE", "share", " 95% interval", "NEW", "share", " 95% interval",
		"change", "p(Holm)", "name");
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = &d->rows[i];
		if (r->flat.a.w > 0 || r->flat.b.w > 0)
			line(out, d, r, &r->flat, "flat");
		line(out, d, r, &r->cum, "cum");
	}
	if (n < d->nrows)
		fprintf(out, "... %zu more functions within the noise (--top 0 shows "
			"all)\n", d->nrows - n);
	return 0;
}
