/*
 * report.c -- `cpuprof report [--top N] FILE`: prints the profiler's own
 * comments (engine, hz, samples, lost, coverage, attributed, unwind, and
 * a warning if the profile has one), the duration and
 * total CPU, then the N functions with the most flat time, like
 * `go tool pprof -top`.  Functions are aggregated by name; every Line of a
 * location is a frame (inlined calls), lines[0] being the innermost, so a
 * sample's flat value goes to its leaf location's first line.  A function
 * counts once towards cum per sample however often it is on the stack.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "profile.h"

#define DEFAULT_TOP 20

/* One row of the report: a function name and its totals. */
struct node {
	const char *name;
	int64_t flat, cum;
	size_t stamp; /* 1 + index of the last sample that added to cum */
};

/* The table being built: nodes, a hash from name to node, and for every
 * location the nodes of its frames (innermost first). */
struct table {
	struct node *nodes;
	size_t nnodes, capnodes;
	size_t *hash; /* 1 + node index, 0 = empty; size nhash (power of 2) */
	size_t nhash;
	size_t *loc_off, *loc_n; /* per location: range in frames[] */
	size_t *frames;
	char **owned; /* names made up for unsymbolized frames */
	size_t nowned;
};

void report_usage(FILE *f)
{
	fputs("  cpuprof report [--top N] FILE\n"
	      "      print the N functions (default 20; 0 for all) with the most\n"
	      "      CPU time in the pprof profile FILE\n",
	      f);
}

/* FNV-1a hash of a C string, for the name table. */
static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Returns the index of the node named `name`, adding it if new, or -1 when
 * out of memory.  The hash has room for every frame, so it never fills. */
static long node_for(struct table *t, const char *name)
{
	size_t mask = t->nhash - 1;
	for (size_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
		if (t->hash[i] == 0) {
			if (t->nnodes == t->capnodes) {
				size_t cap = t->capnodes ? 2 * t->capnodes : 64;
				struct node *n = realloc(t->nodes,
							 cap * sizeof *n);
				if (!n)
					return -1;
				t->nodes = n;
				t->capnodes = cap;
			}
			t->nodes[t->nnodes] = (struct node){ name, 0, 0, 0 };
			t->hash[i] = ++t->nnodes;
			return (long)(t->nnodes - 1);
		}
		if (strcmp(t->nodes[t->hash[i] - 1].name, name) == 0)
			return (long)(t->hash[i] - 1);
	}
}

/* A display name for a frame with no usable function name: "[file]" for
 * the base name of its mapped file (all such frames of one file become one
 * row, as in pprof), else its address.  NULL if out of memory. */
static char *address_name(struct table *t, const struct profile_location *l)
{
	char buf[512];
	const char *file = l->mapping ? l->mapping->filename : "";
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	if (*base)
		snprintf(buf, sizeof buf, "[%s]", base);
	else
		snprintf(buf, sizeof buf, "0x%" PRIx64, l->address);
	char *s = strdup(buf);
	if (s)
		t->owned[t->nowned++] = s;
	return s;
}

/* The name of a frame: the function's name, else its system name, else
 * the location's address. */
static const char *frame_name(struct table *t,
			      const struct profile_location *l,
			      const struct profile_line *line)
{
	const struct profile_function *f = line ? line->function : NULL;
	if (f && *f->name)
		return f->name;
	if (f && *f->system_name)
		return f->system_name;
	return address_name(t, l);
}

/* Builds the node of every frame of every location of p. */
static int table_init(struct table *t, const struct profile *p)
{
	size_t nframes = 0;
	for (size_t i = 0; i < p->nlocations; i++)
		nframes += p->locations[i].nlines ? p->locations[i].nlines : 1;
	memset(t, 0, sizeof *t);
	t->nhash = 64;
	while (t->nhash < 2 * nframes)
		t->nhash *= 2;
	t->hash = calloc(t->nhash, sizeof *t->hash);
	t->loc_off = calloc(p->nlocations + 1, sizeof *t->loc_off);
	t->loc_n = calloc(p->nlocations + 1, sizeof *t->loc_n);
	t->frames = calloc(nframes + 1, sizeof *t->frames);
	t->owned = calloc(nframes + 1, sizeof *t->owned);
	if (!t->hash || !t->loc_off || !t->loc_n || !t->frames || !t->owned)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct profile_location *l = &p->locations[i];
		t->loc_off[i] = k;
		for (size_t j = 0; j < (l->nlines ? l->nlines : 1); j++) {
			const char *name =
				frame_name(t, l, l->nlines ? &l->lines[j] : NULL);
			long n = name ? node_for(t, name) : -1;
			if (n < 0)
				return -1;
			t->frames[k++] = (size_t)n;
		}
		t->loc_n[i] = k - t->loc_off[i];
	}
	return 0;
}

/* Frees what table_init() allocated (also after it failed half-way). */
static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->nodes);
	free(t->hash);
	free(t->loc_off);
	free(t->loc_n);
	free(t->frames);
}

/* a + b, clamped to the int64_t range (a corrupt or hostile profile may
 * hold values whose sum overflows). */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Adds every sample's value at index vi to flat and cum of its nodes;
 * returns the total of all samples. */
static int64_t table_add_samples(struct table *t, const struct profile *p,
				 size_t vi)
{
	int64_t total = 0;
	for (size_t s = 0; s < p->nsamples; s++) {
		const struct profile_sample *smp = &p->samples[s];
		int64_t v = smp->values[vi];
		total = sat_add(total, v);
		for (size_t j = 0; j < smp->nlocations; j++) {
			size_t li = (size_t)(smp->locations[j] - p->locations);
			for (size_t f = 0; f < t->loc_n[li]; f++) {
				struct node *n =
					&t->nodes[t->frames[t->loc_off[li] + f]];
				if (j == 0 && f == 0)
					n->flat = sat_add(n->flat, v);
				if (n->stamp != s + 1) {
					n->stamp = s + 1;
					n->cum = sat_add(n->cum, v);
				}
			}
		}
	}
	return total;
}

/* qsort order of nodes: flat descending, then cum descending, then name. */
static int by_flat(const void *a, const void *b)
{
	const struct node *x = a, *y = b;
	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Nanoseconds per unit for time units, 0 for anything else. */
static double ns_per_unit(const char *unit)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {
		{ "nanoseconds", 1 },     { "nanosecond", 1 },   { "ns", 1 },
		{ "microseconds", 1e3 },  { "microsecond", 1e3 }, { "us", 1e3 },
		{ "milliseconds", 1e6 },  { "millisecond", 1e6 }, { "ms", 1e6 },
		{ "seconds", 1e9 },       { "second", 1e9 },      { "s", 1e9 },
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].ns;
	return 0;
}

/* Formats v (in `unit`) for display: times scaled to s/ms/us/ns with two
 * decimals and no ".00", other units as plain integers. */
static void format_value(char *buf, size_t len, int64_t v, const char *unit)
{
	double scale = ns_per_unit(unit);
	if (scale == 0 || v == 0) {
		snprintf(buf, len, "%" PRId64, v);
		return;
	}
	double ns = (double)v * scale, a = ns < 0 ? -ns : ns;
	const char *suffix = "ns";
	double x = ns;
	if (a >= 1e9) {
		x = ns / 1e9;
		suffix = "s";
	} else if (a >= 1e6) {
		x = ns / 1e6;
		suffix = "ms";
	} else if (a >= 1e3) {
		x = ns / 1e3;
		suffix = "us";
	}
	snprintf(buf, len, "%.2f", x);
	size_t n = strlen(buf);
	if (n > 3 && strcmp(buf + n - 3, ".00") == 0)
		buf[n - 3] = '\0';
	if (strcmp(buf, "0") == 0 || strcmp(buf, "-0") == 0) {
		snprintf(buf, len, "0");
		return;
	}
	strncat(buf, suffix, len - strlen(buf) - 1);
}

/* v as a percentage of total with two decimals ("0%" and "100%" without:
 * as pprof does). */
static void format_pct(char *buf, size_t len, int64_t v, int64_t total)
{
	double pct = total ? 100.0 * (double)v / (double)total : 0;
	if (v == 0)
		snprintf(buf, len, "0%%");
	else if (pct >= 99.995 && pct < 100.005)
		snprintf(buf, len, "100%%");
	else
		snprintf(buf, len, "%.2f%%", pct);
}

/* Prints the header: the profiler's comments, the sample type if it is not
 * cpu/nanoseconds, the duration and the total. */
static void print_header(const struct profile *p, size_t vi, bool is_cpu,
			 int64_t total)
{
	static const char *const keys[] = { "engine", "hz", "samples",
					    "lost", "coverage", "attributed",
					    "unwind" };
	const struct profile_value_type *st = &p->sample_types[vi];
	bool any = false;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *v = profile_comment(p, keys[i]);
		if (v) {
			printf("%s%s=%s", any ? " " : "", keys[i], v);
			any = true;
		}
	}
	if (any)
		putchar('\n');
	const char *reason = profile_comment(p, "engine_reason");
	if (reason)
		printf("engine_reason=%s\n", reason);
	const char *warning = profile_comment(p, "warning");
	if (warning)
		printf("warning: %s\n", warning);
	if (!is_cpu)
		printf("Sample type: %s/%s (the profile has no cpu/nanoseconds)\n",
		       st->type, st->unit);

	char tot[64], dur[64];
	format_value(tot, sizeof tot, total, st->unit);
	const char *what = is_cpu ? "Total CPU" : "Total";
	if (p->duration_nanos > 0) {
		format_value(dur, sizeof dur, p->duration_nanos, "nanoseconds");
		double scale = ns_per_unit(st->unit);
		if (scale > 0)
			printf("Duration: %s, %s: %s (%.2f%% of the duration)\n",
			       dur, what, tot,
			       100.0 * (double)total * scale /
				       (double)p->duration_nanos);
		else
			printf("Duration: %s, %s: %s %s\n", dur, what, tot,
			       st->unit);
	} else if (ns_per_unit(st->unit) > 0) {
		printf("%s: %s\n", what, tot);
	} else {
		printf("%s: %s %s\n", what, tot, st->unit);
	}
}

/* Prints the report of p, with at most `top` rows (0: all). */
static int print_report(const struct profile *p, long top)
{
	if (p->nsample_types == 0) {
		printf("The profile has no sample types (and so no values).\n");
		return 0;
	}
	int cpu = profile_find_sample_type(p, "cpu", "nanoseconds");
	size_t vi = cpu >= 0 ? (size_t)cpu : p->nsample_types - 1;
	const char *unit = p->sample_types[vi].unit;

	struct table t;
	if (table_init(&t, p) < 0) {
		table_free(&t);
		return -1;
	}
	int64_t total = table_add_samples(&t, p, vi);
	print_header(p, vi, cpu >= 0, total);

	/* Functions that only appear in samples of value 0 are dropped. */
	size_t n = 0;
	for (size_t i = 0; i < t.nnodes; i++)
		if (t.nodes[i].flat != 0 || t.nodes[i].cum != 0)
			t.nodes[n++] = t.nodes[i];
	if (n > 1)
		qsort(t.nodes, n, sizeof *t.nodes, by_flat);
	size_t rows = top > 0 && (size_t)top < n ? (size_t)top : n;
	int64_t shown = 0;
	for (size_t i = 0; i < rows; i++)
		shown = sat_add(shown, t.nodes[i].flat);
	char a[64], b[64];
	format_value(a, sizeof a, shown, unit);
	format_value(b, sizeof b, total, unit);
	char pct[16];
	format_pct(pct, sizeof pct, shown, total);
	printf("Showing %zu of %zu functions, accounting for %s (%s) of %s total\n",
	       rows, n, a, pct, b);
	printf("%10s %7s %7s %10s %7s  %s\n", "flat", "flat%", "sum%", "cum",
	       "cum%", "name");
	int64_t sum = 0;
	for (size_t i = 0; i < rows; i++) {
		const struct node *nd = &t.nodes[i];
		char flat[64], fp[16], sp[16], cum[64], cp[16];
		sum = sat_add(sum, nd->flat);
		format_value(flat, sizeof flat, nd->flat, unit);
		format_value(cum, sizeof cum, nd->cum, unit);
		format_pct(fp, sizeof fp, nd->flat, total);
		format_pct(sp, sizeof sp, sum, total);
		format_pct(cp, sizeof cp, nd->cum, total);
		printf("%10s %7s %7s %10s %7s  %s\n", flat, fp, sp, cum, cp,
		       nd->name);
	}
	table_free(&t);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	long top = DEFAULT_TOP;
	const char *file = NULL;
	bool opts = true;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (opts && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			fputs("usage:\n", stdout);
			report_usage(stdout);
			return 0;
		}
		if (opts && strcmp(a, "--") == 0) {
			opts = false;
		} else if (opts && (strcmp(a, "--top") == 0 ||
				    strncmp(a, "--top=", 6) == 0)) {
			const char *v = a[5] == '=' ? a + 6 : argv[++i];
			if (i >= argc || !parse_int_arg(v, 0, 1000000000, &top)) {
				fprintf(stderr, "cpuprof report: --top needs a "
					"number of rows (0 for all)\n");
				goto usage;
			}
		} else if (opts && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "cpuprof report: unknown option '%s'\n",
				a);
			goto usage;
		} else if (file) {
			fprintf(stderr, "cpuprof report: one FILE only\n");
			goto usage;
		} else {
			file = a;
		}
	}
	if (!file) {
		fprintf(stderr, "cpuprof report: no FILE given\n");
		goto usage;
	}

	struct profile *p;
	char err[512];
	if (profile_read_file(file, &p, err, sizeof err) < 0) {
		fprintf(stderr, "cpuprof report: %s: %s\n", file, err);
		return EXIT_USAGE;
	}
	int rc = print_report(p, top);
	profile_free(p);
	if (rc < 0) {
		fprintf(stderr, "cpuprof report: %s: out of memory\n", file);
		return EXIT_USAGE;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("cpuprof report: writing the report");
		return 1;
	}
	return 0;
usage:
	fputs("usage:\n", stderr);
	report_usage(stderr);
	return EXIT_USAGE;
}
