/*
 * list.c -- `cpuprof report --list REGEX`: for every function whose name
 * matches the POSIX extended regular expression, its source file with the
 * flat and cum values of each line, like `go tool pprof -list`.  Lines come
 * from the Line records of the profiles' locations (every inline level
 * counts: an inlined call's lines are listed in the function they belong
 * to).  A sample's flat value goes to the line of its innermost frame; a
 * line counts once towards cum per sample.  Functions are grouped by name
 * and source file across the merged profiles.  The source is read only if
 * it is a regular text file of at most LIST_MAX_SOURCE bytes; otherwise,
 * or when the profile names no file, the lines with values are listed
 * without their text and a line says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "base/array.h"
#include "report.h"

#define LIST_MAX_SOURCE (16u << 20)
/* Lines of context printed around the lines with values. */
#define CONTEXT 2

/* A function of the listing and the range of its lines with values. */
struct routine {
	const char *name, *file;
	int64_t start_line, min_line, max_line;
	int64_t flat, cum;
	size_t stamp;
};

/* One source line of one routine. */
struct cost {
	size_t routine;
	int64_t line;
	int64_t flat, cum;
	size_t stamp;
};

struct listing {
	struct routine *r;
	size_t nr, capr;
	struct cost *c; /* open-addressing hash by (routine, line) */
	size_t nc, capc; /* capc: a power of 2, or 0 */
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	return h ^ (h >> 31);
}

/* The cost cell of (routine, line), made if new; NULL if out of memory. */
static struct cost *cost_for(struct listing *L, size_t routine, int64_t line)
{
	if (2 * (L->nc + 1) > L->capc) {
		size_t cap = L->capc ? 2 * L->capc : 256;
		struct cost *c = calloc(cap, sizeof *c);
		if (!c)
			return NULL;
		for (size_t i = 0; i < L->capc; i++) {
			if (!L->c[i].routine)
				continue;
			size_t j = mix(L->c[i].routine, (uint64_t)L->c[i].line) & (cap - 1);
			while (c[j].routine)
				j = (j + 1) & (cap - 1);
			c[j] = L->c[i];
		}
		free(L->c);
		L->c = c;
		L->capc = cap;
	}
	/* routine is stored +1 so that 0 marks an empty cell. */
	size_t j = mix(routine + 1, (uint64_t)line) & (L->capc - 1);
	for (; L->c[j].routine; j = (j + 1) & (L->capc - 1))
		if (L->c[j].routine == routine + 1 && L->c[j].line == line)
			return &L->c[j];
	L->c[j].routine = routine + 1;
	L->c[j].line = line;
	L->nc++;
	return &L->c[j];
}

/* The cost cell of (routine, line), or NULL if it has none. */
static const struct cost *cost_find(const struct listing *L, size_t routine,
				    int64_t line)
{
	if (!L->capc)
		return NULL;
	size_t j = mix(routine + 1, (uint64_t)line) & (L->capc - 1);
	for (; L->c[j].routine; j = (j + 1) & (L->capc - 1))
		if (L->c[j].routine == routine + 1 && L->c[j].line == line)
			return &L->c[j];
	return NULL;
}

/* qsort order of cost cells: by line. */
static int by_line(const void *a, const void *b)
{
	const struct cost *x = *(const struct cost *const *)a;
	const struct cost *y = *(const struct cost *const *)b;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* The routine of function f, made if new; (size_t)-1 if out of memory. */
static size_t routine_for(struct listing *L, const struct profile_function *f)
{
	const char *name = *f->name ? f->name : f->system_name;
	for (size_t i = 0; i < L->nr; i++)
		if (strcmp(L->r[i].name, name) == 0 && strcmp(L->r[i].file, f->filename) == 0)
			return i;
	if (cp_array_grow((void **)&L->r, &L->capr, L->nr + 1, sizeof *L->r, 16))
		return (size_t)-1;
	L->r[L->nr] = (struct routine){ name, f->filename, f->start_line,
					INT64_MAX, 0, 0, 0, 0 };
	return L->nr++;
}

/* Reads the text file `path` into *text (NUL-terminated, *len bytes); or
 * returns a reason it cannot. */
static const char *read_source(const char *path, char **text, size_t *len)
{
	*text = NULL;
	if (!*path)
		return "the profile names no source file";
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return strerror(errno);
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) < 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if ((uint64_t)st.st_size > LIST_MAX_SOURCE)
		why = "larger than 16 MiB";
	char *buf = why ? NULL : malloc((size_t)st.st_size + 1);
	size_t n = 0;
	if (!why && !buf)
		why = "out of memory";
	while (!why && n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (!why && memchr(buf, '\0', n))
		why = "not a text file (it holds NUL bytes: an executable?)";
	if (why) {
		free(buf);
		return why;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return NULL;
}

/* Prints one line of source text: tabs to spaces, names' sanitising. */
static void put_source(FILE *out, const char *s, size_t n)
{
	char buf[4096];
	size_t o = 0, col = 0;
	for (size_t i = 0; i < n && o + 9 < sizeof buf; i++) {
		if (s[i] == '\t') {
			do
				buf[o++] = ' ';
			while (++col % 8);
		} else {
			buf[o++] = s[i];
			col++;
		}
	}
	buf[o] = '\0';
	put_name(out, buf, NULL);
}

/* Prints routine ri with its source (or the lines with values). */
static void print_routine(FILE *out, const struct listing *L, size_t ri,
			  const struct stackset *ss)
{
	const struct routine *r = &L->r[ri];
	char a[64], b[64], pct[16];
	fputs("ROUTINE ======================== ", out);
	put_name(out, r->name, NULL);
	if (*r->file) {
		fputs(" in ", out);
		put_name(out, r->file, NULL);
	}
	fputc('\n', out);
	format_value(a, sizeof a, r->flat, ss->unit);
	format_value(b, sizeof b, r->cum, ss->unit);
	format_pct(pct, sizeof pct, r->cum, ss->total);
	fprintf(out, "%10s %10s (flat, cum) %s of Total\n", a, b, pct);

	char *text;
	size_t len;
	const char *why = read_source(r->file, &text, &len);
	const struct cost *none = cost_find(L, ri, 0);
	if (why) {
		fputs("  source not shown: ", out);
		put_name(out, r->file, NULL);
		fprintf(out, "%s%s; the lines with values:\n", *r->file ? ": " : "", why);
		/* Only the lines with values, in order: their count bounds the
		 * work, whatever line numbers a profile claims. */
		size_t n = 0;
		const struct cost **lines = malloc((L->nc ? L->nc : 1) * sizeof *lines);
		for (size_t i = 0; lines && i < L->capc; i++)
			if (L->c[i].routine == ri + 1 && L->c[i].line > 0 &&
			    (L->c[i].flat || L->c[i].cum))
				lines[n++] = &L->c[i];
		if (lines)
			qsort(lines, n, sizeof *lines, by_line);
		for (size_t i = 0; i < n; i++) {
			format_value(a, sizeof a, lines[i]->flat, ss->unit);
			format_value(b, sizeof b, lines[i]->cum, ss->unit);
			fprintf(out, "%10s %10s %6lld\n", a, b, (long long)lines[i]->line);
		}
		free(lines);
	} else if (r->max_line > 0) {
		/* The source from the function's start (or the first line with
		 * a value) to the last line with a value, and some context:
		 * bounded by the file's size. */
		int64_t from = r->min_line - CONTEXT, to = r->max_line + CONTEXT;
		if (r->start_line > 0 && r->start_line < r->min_line)
			from = r->start_line;
		if (from < 1)
			from = 1;
		const char *p = text;
		int64_t l = 1;
		for (; l < from && *p; l++)
			p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p);
		for (; l <= to && *p; l++) {
			const struct cost *c = cost_find(L, ri, l);
			char f[64] = ".", cu[64] = ".";
			if (c && (c->flat || c->cum)) {
				format_value(f, sizeof f, c->flat, ss->unit);
				format_value(cu, sizeof cu, c->cum, ss->unit);
			}
			fprintf(out, "%10s %10s %6lld: ", f, cu, (long long)l);
			const char *e = strchr(p, '\n');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			put_source(out, p, n);
			p += n + (e ? 1 : 0);
			fputc('\n', out);
		}
		if (r->max_line >= l)
			fprintf(out, "  (the profile has lines up to %lld; the file ends "
				"at line %lld: is it the source the program was built "
				"from?)\n", (long long)r->max_line, (long long)(l - 1));
	}
	if (none && (none->flat || none->cum)) {
		format_value(a, sizeof a, none->flat, ss->unit);
		format_value(b, sizeof b, none->cum, ss->unit);
		fprintf(out, "%10s %10s      ?: (no line number)\n", a, b);
	}
	free(text);
}

/* qsort_r order of routines: cum descending, then name. */
static int by_cum(const void *a, const void *b, void *arg)
{
	const struct routine *r = arg;
	const struct routine *x = &r[*(const size_t *)a], *y = &r[*(const size_t *)b];
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

int list_write(FILE *out, const struct report_input *in,
	       const struct stackset *ss, const char *regex)
{
	regex_t re;
	if (regcomp(&re, regex, REG_EXTENDED | REG_NOSUB) != 0) {
		fprintf(out, "not a valid regular expression: %s\n", regex);
		return 0;
	}
	struct listing L = { 0 };
	int rc = -1;
	size_t sample = 0, *order = NULL;
	for (size_t pi = 0; pi < in->n; pi++) {
		const struct profile *p = in->profiles[pi];
		int vi = profile_find_sample_type(p, ss->value_type, ss->unit);
		if (vi < 0)
			continue;
		/* Which functions match, and their routine (+1; 0: none). */
		size_t *fr = calloc(p->nfunctions + 1, sizeof *fr);
		if (!fr)
			goto out;
		for (size_t i = 0; i < p->nfunctions; i++) {
			const struct profile_function *f = &p->functions[i];
			const char *name = *f->name ? f->name : f->system_name;
			if (regexec(&re, name, 0, NULL, 0) == 0) {
				size_t r = routine_for(&L, f);
				if (r == (size_t)-1) {
					free(fr);
					goto out;
				}
				fr[i] = r + 1;
			}
		}
		for (size_t s = 0; s < p->nsamples; s++, sample++) {
			const struct profile_sample *smp = &p->samples[s];
			int64_t v = smp->values[vi];
			for (size_t j = 0; j < smp->nlocations; j++) {
				const struct profile_location *l = smp->locations[j];
				for (size_t k = 0; k < l->nlines; k++) {
					const struct profile_function *f = l->lines[k].function;
					size_t r = f ? fr[f - p->functions] : 0;
					if (!r--)
						continue;
					int64_t line = l->lines[k].line > 0 ? l->lines[k].line : 0;
					struct cost *c = cost_for(&L, r, line);
					if (!c) {
						free(fr);
						goto out;
					}
					struct routine *ro = &L.r[r];
					if (j == 0 && k == 0) {
						c->flat = sat_add(c->flat, v);
						ro->flat = sat_add(ro->flat, v);
					}
					if (c->stamp != sample + 1) {
						c->stamp = sample + 1;
						c->cum = sat_add(c->cum, v);
					}
					if (ro->stamp != sample + 1) {
						ro->stamp = sample + 1;
						ro->cum = sat_add(ro->cum, v);
					}
					if (line > 0 && line < ro->min_line)
						ro->min_line = line;
					if (line > ro->max_line)
						ro->max_line = line;
				}
			}
		}
		free(fr);
	}
	size_t shown = 0;
	order = malloc((L.nr ? L.nr : 1) * sizeof *order);
	if (!order)
		goto out;
	for (size_t i = 0; i < L.nr; i++)
		if (L.r[i].flat || L.r[i].cum)
			order[shown++] = i;
	qsort_r(order, shown, sizeof *order, by_cum, L.r);
	header_print(out, in, ss);
	if (shown == 0)
		fprintf(out, "No function with samples matches '%s'.\n", regex);
	for (size_t i = 0; i < shown; i++)
		print_routine(out, &L, order[i], ss);
	rc = 0;
out:
	regfree(&re);
	free(order);
	free(L.r);
	free(L.c);
	return rc;
}
