/*
 * screen.c -- a view of `cpuprof top` as lines of text (screen.h).
 *
 * A view is made whole in a buffer and written at once, so that a
 * terminal never shows half of one.  Every line is made of printable
 * ASCII only: a name is the program's (a thread's name, a symbol), and a
 * byte of it that is not printable is shown as '?', never sent to the
 * terminal to act on.  On a terminal a line is cut one column short of
 * the width: a line of the full width leaves the cursor waiting to wrap,
 * where clearing to the end of the line would erase its last character.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "screen.h"

/* The lines of one view. */
struct text {
	char *buf;
	size_t len, cap;
	int width;      /* columns a line may take (0: any) */
	int lines, max; /* written, and the most (0: any) */
	int tty;
	int oom;
};

/* Appends one line, made printable and cut to the width. */
static void line(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct text *t, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	if (t->max && t->lines >= t->max)
		return;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->oom = 1;
		return;
	}
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	if (t->width > 0 && n > t->width)
		n = t->width;
	size_t need = t->len + (size_t)n + 8;
	if (need > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *b = realloc(t->buf, cap);
		if (!b) {
			free(s);
			t->oom = 1;
			return;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, (size_t)n);
	t->len += (size_t)n;
	/* On a terminal: what the last view left on the line goes. */
	if (t->tty) {
		memcpy(t->buf + t->len, "\033[K", 3);
		t->len += 3;
	}
	t->buf[t->len++] = '\n';
	t->lines++;
	free(s);
}

/* ns as a share of all, in percent: 0 where either is not positive (the
 * last view's interval may lose a little, where record held the samples
 * to the kernel's count at the end). */
static double pct(int64_t ns, int64_t all)
{
	return all > 0 && ns > 0 ? 100.0 * (double)ns / (double)all : 0.0;
}

/* A coverage, or "-" where the kernel's count is not known, into buf. */
static const char *coverage(int64_t sampled, int64_t cpu, char *buf, size_t len)
{
	if (cpu > 0)
		snprintf(buf, len, "%.2f", (double)sampled / (double)cpu);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* The view's first lines: what runs, and its numbers over the interval
 * and since the start. */
static void header(struct text *t, const struct view *v)
{
	char when[16] = "", cov[16], tcov[16];
	time_t now = time(NULL);
	struct tm tm;
	if (localtime_r(&now, &tm))
		strftime(when, sizeof when, "%H:%M:%S", &tm);
	char pid[24] = "";
	if (v->root > 0)
		snprintf(pid, sizeof pid, " (pid %d)", (int)v->root);
	if (v->ended)
		line(t, "cpuprof top: %s%s ended after %.1f s: %s", v->title, pid, v->elapsed_s, v->ended);
	else
		line(t, "cpuprof top: %s%s %.1f s, %s", v->title, pid, v->elapsed_s, when);
	/* What matters most first: a narrow terminal cuts the rest. */
	line(t, "last %.1f s: cpu %.0f%%, coverage %s, %llu samples, %llu lost", v->interval_s,
	     v->cpu_ns > 0 && v->interval_s > 0 ? (double)v->cpu_ns / 1e7 / v->interval_s : 0.0,
	     coverage(v->sampled_ns, v->cpu_ns, cov, sizeof cov), (unsigned long long)v->samples,
	     (unsigned long long)v->lost);
	line(t, "since start: cpu %.2f s, coverage %s, %llu samples, %llu lost",
	     v->tcpu_ns > 0 ? (double)v->tcpu_ns / 1e9 : 0.0, coverage(v->tsampled_ns, v->tcpu_ns, tcov, sizeof tcov),
	     (unsigned long long)v->tsamples, (unsigned long long)v->tlost);
	/* The last interval has the end's work (the rings' last records, the
	 * JIT's names) in a fraction of a second: the run's own is what says. */
	if (v->ended)
		line(t, "top itself: %.2f%% of a CPU since start", 100.0 * v->town);
	else
		line(t, "top itself: %.1f%% of a CPU (%.1f%% since start)", 100.0 * v->own, 100.0 * v->town);
}

/* How many function and thread rows fit in rows lines (0: no limit, at
 * most max_rows each). */
static void fit(const struct view *v, int rows, int max_rows, size_t *nf, size_t *nt)
{
	if (rows <= 0) {
		*nf = v->nfns < (size_t)max_rows ? v->nfns : (size_t)max_rows;
		*nt = v->nthreads < (size_t)max_rows ? v->nthreads : (size_t)max_rows;
		return;
	}
	/* The header (4), a blank line and the functions' heads (2); the
	 * threads' blank line and head (2); the last row stays empty. */
	long space = rows - 1 - 7 - 2;
	*nf = *nt = 0;
	if (space <= 0) {
		long f = rows - 1 - 7;
		*nf = f > 0 ? ((size_t)f < v->nfns ? (size_t)f : v->nfns) : 0;
		return;
	}
	size_t t = v->nthreads < (size_t)(space / 3 > 1 ? space / 3 : 1) ? v->nthreads
									: (size_t)(space / 3 > 1 ? space / 3 : 1);
	size_t f = (size_t)space - t < v->nfns ? (size_t)space - t : v->nfns;
	/* Room the functions leave goes to the threads. */
	t = (size_t)space - f < v->nthreads ? (size_t)space - f : v->nthreads;
	*nf = f;
	*nt = t;
}

int screen_draw(FILE *out, const struct view *v, int cols, int rows, int max_rows)
{
	struct text t = { .width = cols > 1 ? cols - 1 : 1, .tty = cols > 0, .max = rows > 1 ? rows - 1 : 1 };
	if (!t.tty)
		t.width = t.max = 0;
	size_t nf, nt;
	fit(v, cols > 0 ? rows : 0, max_rows, &nf, &nt);
	header(&t, v);
	line(&t, "%s", "");
	char last[24];
	snprintf(last, sizeof last, "last %.1f s", v->interval_s);
	line(&t, "%-12s  %s", last, "since start");
	line(&t, "%5s%7s %6s%7s  %s", "flat%", "cum%", "flat%", "cum%", "function");
	int64_t all = v->sampled_ns, tall = v->tsampled_ns;
	for (size_t i = 0; i < nf; i++) {
		const struct tally_fn *f = &v->fns[i];
		line(&t, "%5.1f%7.1f %6.1f%7.1f  %s", pct(f->flat, all), pct(f->cum, all), pct(f->tflat, tall),
		     pct(f->tcum, tall), f->name);
	}
	if (nt) {
		line(&t, "%s", "");
		line(&t, "%5s%8s  %s", "cpu%", "cpu s", "pid/tid thread");
	}
	for (size_t i = 0; i < nt; i++) {
		const struct tally_thread *th = &v->threads[i];
		line(&t, "%5.1f%8.2f  %d/%d %s", v->interval_s > 0 && th->ns > 0 ? (double)th->ns / 1e7 / v->interval_s : 0.0,
		     th->tns > 0 ? (double)th->tns / 1e9 : 0.0, (int)th->pid, (int)th->tid, th->name);
	}
	int rc = 0;
	if (!t.oom) {
		/* A terminal's view over the last; a block of plain text after
		 * the last, a blank line between. */
		if (t.tty)
			fputs("\033[H", out);
		fwrite(t.buf, 1, t.len, out);
		fputs(t.tty ? "\033[J" : "\n", out);
		rc = fflush(out) == 0 && !ferror(out) ? 0 : -1;
	}
	free(t.buf);
	return t.oom ? -1 : rc;
}
