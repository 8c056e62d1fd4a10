/*
 * diff.c -- `cpuprof diff [OPTIONS] BASE NEW...`: reads BASE and the NEW
 * profiles (several NEW files are merged, as `report` merges them, and so
 * are several BASE files given with --base) into one stackset, BASE's
 * samples first, compares them (compare.c) and
 * writes the text, folded or html format, to stdout or, with -o, to a
 * file that appears only once complete.  The exit status is the verdict,
 * for CI gates: 0 when no function's share changed beyond the noise, 1
 * when one did, 2 for bad usage, a file that cannot be read, profiles
 * that cannot be compared (other sample types, no samples) or output
 * that cannot be written.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "diff.h"
#include "profile.h"

#define DEFAULT_TOP 20
#define DEFAULT_THRESHOLD 1.0 /* percentage points */
#define DEFAULT_ALPHA 0.01

enum format { FORMAT_TEXT, FORMAT_FOLDED, FORMAT_HTML };

static const char *const format_names[] = { "top", "folded", "html" };

void diff_usage(FILE *f)
{
	fputs("  cpuprof diff [--format top|folded|html] [-o OUT] [--threshold PCT]\n"
	      "               [--alpha A] [--top N] [--lines] [--value cpu|samples|off-cpu|wall]\n"
	      "               [--other-programs]\n"
	      "               BASE NEW... | --base BASE [--base BASE...] NEW...\n"
	      "      which functions' shares of the CPU changed from BASE to NEW\n"
	      "      beyond the noise of sampling (several NEW files, or BASE files\n"
	      "      given with --base, are merged; profiles of other lengths,\n"
	      "      rates or engines compare by share):\n"
	      "        top     each function's flat and cum share in both, with\n"
	      "                95% intervals, the change and its p-value; those\n"
	      "                that changed first, marked + or - (the default)\n"
	      "        folded  'root;...;leaf BASE NEW' per stack (difffolded.pl's\n"
	      "                format), BASE scaled to NEW's total\n"
	      "        html    a differential flame graph: NEW's frames coloured\n"
	      "                where their share grew or shrank beyond the noise\n"
	      "      --threshold PCT  the smallest change that counts, in percentage\n"
	      "                points of the total (default 1)\n"
	      "      --alpha A the chance of any false alarm over all the functions\n"
	      "                (Holm's correction; default 0.01)\n"
	      "      --top N   top: the functions shown (default 20, 0 for all;\n"
	      "                every one that changed is shown)\n"
	      "      --lines, --value, -o OUT  as for report\n"
	      "      --other-programs  compare profiles of programs of other names\n"
	      "                (their main files: refused without it)\n"
	      "      Says so when the samples are too few to see a change of the\n"
	      "      threshold.  Exits 0 when nothing changed beyond the noise, 1\n"
	      "      when something did, 2 for bad usage, a FILE missing or corrupt,\n"
	      "      profiles that cannot be compared, or output not written.\n",
	      f);
}

/* The parsed command line. */
struct diff_args {
	enum format format;
	long top;
	double threshold, alpha;
	const char *out, *value;
	bool lines, other_programs;
	const char **files; /* the BASE files, then the NEW files */
	size_t nfiles, nbase;
	const char **bases; /* --base FILE, in order */
	const char **news;  /* the other file arguments, in order */
	size_t nnew;
};

/* Parses the whole of s as a false-alarm rate: above 0, at most 0.5. */
static bool parse_alpha(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return false;
	double v = strtod(s, &end);
	if (*end || !(v > 0 && v <= 0.5))
		return false;
	*out = v;
	return true;
}

/* Fills *da from argv (free its arrays after, whatever the result);
 * returns 0, 1 for --help (printed), or -1 after printing what is
 * wrong. */
static int parse_args(int argc, char **argv, struct diff_args *da)
{
	bool opts = true;
	memset(da, 0, sizeof *da);
	da->top = DEFAULT_TOP;
	da->threshold = DEFAULT_THRESHOLD;
	da->alpha = DEFAULT_ALPHA;
	da->files = calloc((size_t)argc + 1, sizeof *da->files);
	da->bases = calloc((size_t)argc + 1, sizeof *da->bases);
	da->news = calloc((size_t)argc + 1, sizeof *da->news);
	if (!da->files || !da->bases || !da->news) {
		fprintf(stderr, "cpuprof diff: out of memory\n");
		return -1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing = false;
		if (!opts || a[0] != '-' || a[1] == '\0') {
			da->news[da->nnew++] = a;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs("usage:\n", stdout);
			diff_usage(stdout);
			return 1;
		}
		if (strcmp(a, "--") == 0) {
			opts = false;
		} else if ((v = opt_value(argc, argv, &i, "--base", &missing))) {
			if (missing || !*v) {
				fprintf(stderr, "cpuprof diff: --base needs a file name\n");
				return -1;
			}
			da->bases[da->nbase++] = v;
		} else if ((v = opt_value(argc, argv, &i, "--top", &missing))) {
			if (missing || !parse_int_arg(v, 0, 1000000000, &da->top)) {
				fprintf(stderr, "cpuprof diff: --top needs a "
					"number of functions (0 for all)\n");
				return -1;
			}
		} else if ((v = opt_value(argc, argv, &i, "--format", &missing))) {
			size_t k = 0;
			while (k < 3 && strcmp(v, format_names[k]) != 0)
				k++;
			if (missing || k == 3) {
				fprintf(stderr, "cpuprof diff: --format is one of "
					"top, folded, html\n");
				return -1;
			}
			da->format = (enum format)k;
		} else if ((v = opt_value(argc, argv, &i, "-o", &missing))) {
			if (missing || !*v) {
				fprintf(stderr, "cpuprof diff: -o needs a file name\n");
				return -1;
			}
			da->out = v;
		} else if ((v = opt_value(argc, argv, &i, "--threshold", &missing))) {
			if (missing || !parse_pct_arg(v, &da->threshold)) {
				fprintf(stderr, "cpuprof diff: --threshold needs "
					"percentage points from 0 to 100\n");
				return -1;
			}
		} else if ((v = opt_value(argc, argv, &i, "--alpha", &missing))) {
			if (missing || !parse_alpha(v, &da->alpha)) {
				fprintf(stderr, "cpuprof diff: --alpha needs a "
					"false-alarm rate above 0, at most 0.5\n");
				return -1;
			}
		} else if ((v = opt_value(argc, argv, &i, "--value", &missing))) {
			if (missing || !*v) {
				fprintf(stderr, "cpuprof diff: --value needs a "
					"sample type (cpu, samples, off-cpu, wall)\n");
				return -1;
			}
			da->value = v;
		} else if (strcmp(a, "--lines") == 0) {
			da->lines = true;
		} else if (strcmp(a, "--other-programs") == 0) {
			da->other_programs = true;
		} else {
			fprintf(stderr, "cpuprof diff: unknown option '%s'\n", a);
			return -1;
		}
	}
	/* Without --base the first file is BASE. */
	size_t first = 0;
	if (da->nbase == 0 && da->nnew > 0)
		da->bases[da->nbase++] = da->news[first++];
	for (size_t k = 0; k < da->nbase; k++)
		da->files[da->nfiles++] = da->bases[k];
	for (size_t k = first; k < da->nnew; k++)
		da->files[da->nfiles++] = da->news[k];
	if (da->nfiles <= da->nbase) {
		fprintf(stderr, "cpuprof diff: needs BASE and at least one NEW file\n");
		return -1;
	}
	if (da->format == FORMAT_HTML && !da->out && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "cpuprof diff: --format html needs -o FILE.html\n");
		return -1;
	}
	return 0;
}

/* What write_diff needs. */
struct diff_job {
	const struct diff_args *da;
	const struct diff_input *in;
	const struct diff *d;
};

/* The program profile p is of: the base name of its first mapping's file
 * (pprof's main binary), or "" if it has none. */
static const char *program_of(const struct profile *p)
{
	const char *f = p->nmappings && p->mappings[0].filename ? p->mappings[0].filename : "";
	const char *slash = strrchr(f, '/');
	return slash ? slash + 1 : f;
}

/* Whether the profiles are of one program (by their main files' names: a
 * new build of it has another build ID and is what diff is for); says
 * which differ if not. */
static bool same_program(struct profile *const *p, const char *const *files, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		const char *a = program_of(p[0]), *b = program_of(p[i]);
		if (*a && *b && strcmp(a, b) != 0) {
			fprintf(stderr, "cpuprof diff: %s is a profile of %s, %s of %s: other programs, whose functions "
				"are not the same code (--other-programs compares them anyway)\n", files[0], a, files[i],
				b);
			return false;
		}
	}
	return true;
}

/* report_output's writer of a diff_job. */
static int write_diff(FILE *out, void *arg)
{
	const struct diff_job *j = arg;
	switch (j->da->format) {
	case FORMAT_FOLDED:
		return diff_folded_write(out, j->d);
	case FORMAT_HTML:
		return diff_page_write(out, j->in, j->d);
	case FORMAT_TEXT:
	default:
		return diff_text_write(out, j->in, j->d, j->da->top);
	}
}

/* Fails (exit 2) when a side has no samples to compare. */
static bool comparable(const struct share_base *b, const char *side,
		       const char *name)
{
	if (b->w > 0 && b->neff > 0)
		return true;
	fprintf(stderr, "cpuprof diff: cannot compare: %s (%s) has no samples of "
		"the program's stacks with a value\n", side, name);
	return false;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args da;
	int prc = parse_args(argc, argv, &da);
	if (prc != 0) {
		free(da.files);
		free(da.bases);
		free(da.news);
		if (prc > 0)
			return 0;
		fputs("usage:\n", stderr);
		diff_usage(stderr);
		return EXIT_USAGE;
	}
	struct profile **p = calloc(da.nfiles, sizeof *p);
	int status = EXIT_USAGE;
	struct stackset ss;
	struct diff d;
	memset(&ss, 0, sizeof ss);
	memset(&d, 0, sizeof d);
	if (report_output_is_input(da.out, "diff", da.files, da.nfiles))
		goto out;
	if (!p) {
		fprintf(stderr, "cpuprof diff: out of memory\n");
		goto out;
	}
	char err[512];
	for (size_t i = 0; i < da.nfiles; i++) {
		if (profile_read_file(da.files[i], &p[i], err, sizeof err) < 0) {
			fprintf(stderr, "cpuprof diff: %s: %s\n", da.files[i], err);
			goto out;
		}
	}
	if (!da.other_programs && !same_program(p, da.files, da.nfiles))
		goto out;
	/* CPU by default, also where the profiles' own default is wall
	 * (profiles of off-CPU time). */
	const char *value = da.value;
	if (!value && profile_find_sample_type(p[0], "cpu", "nanoseconds") >= 0)
		value = "cpu";
	struct stack_options so = { .lines = da.lines, .value = value,
				    .verb = "compare" };
	if (stackset_build(&ss, p, da.files, da.nfiles, &so, err, sizeof err) < 0) {
		fprintf(stderr, "cpuprof diff: %s\n", err);
		goto out;
	}
	/* Off-CPU time is measured at every switch, not sampled: there is
	 * no noise of sampling to test a change against. */
	if (ss.what && (strcmp(ss.value_type, "off_cpu") == 0 || strcmp(ss.value_type, "wall") == 0)) {
		fprintf(stderr, "cpuprof diff: cannot compare %s: diff tests each change against the noise of "
			"sampling, and off-CPU time is not sampled but measured at every context switch (its "
			"changes are the program's own variation); compare `cpuprof report --value %s` of each, "
			"or diff their cpu\n", ss.value_type, strcmp(ss.value_type, "wall") ? "off-cpu" : "wall");
		goto out;
	}
	if (p[0]->nsample_types == 0) {
		fprintf(stderr, "cpuprof diff: cannot compare: %s has no sample "
			"types (and so no values)\n", da.files[0]);
		goto out;
	}
	size_t nbase = 0;
	for (size_t i = 0; i < da.nbase; i++)
		nbase += p[i]->nsamples;
	struct diff_options o = { .threshold = da.threshold / 100, .alpha = da.alpha,
				  .tree = da.format != FORMAT_TEXT,
				  .paths = da.format == FORMAT_HTML };
	if (diff_compare(&d, &ss, nbase, &o) < 0) {
		fprintf(stderr, "cpuprof diff: out of memory\n");
		goto out;
	}
	if (!comparable(&d.a, "BASE", da.nbase > 1 ? "the BASE files" : da.files[0]) ||
	    !comparable(&d.b, "NEW", da.nfiles - da.nbase > 1 ? "the NEW files"
							   : da.files[da.nbase]))
		goto out;
	struct diff_input in = { { p, da.files, da.nbase },
				 { p + da.nbase, da.files + da.nbase, da.nfiles - da.nbase } };
	struct diff_job job = { &da, &in, &d };
	status = report_output(da.out, "diff", write_diff, &job);
	if (status == 0) {
		char few[512];
		diff_too_few(few, sizeof few, &d);
		if (*few && da.format != FORMAT_TEXT)
			fprintf(stderr, "cpuprof diff: %s\n", few);
		status = d.nchanged ? 1 : 0;
	}
out:
	diff_free(&d);
	stackset_free(&ss);
	for (size_t i = 0; p && i < da.nfiles; i++)
		profile_free(p[i]);
	free(p);
	free(da.files);
	free(da.bases);
	free(da.news);
	return status;
}
