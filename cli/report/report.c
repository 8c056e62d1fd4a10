/*
 * report.c -- `cpuprof report [OPTIONS] FILE...`: reads one or more pprof
 * profiles, merges their samples (stacks.h; sample types must match, as
 * for `go tool pprof A B`) and writes them in one of the formats of
 * report.h: top (the default), folded, tree, html, or a source listing
 * (--list).  This file parses the options, reads the files and
 * dispatches; the output goes to stdout, or with -o to a file that appears
 * only once it is complete.
 */
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "profile.h"
#include "report.h"
#include "stacks.h"

#define DEFAULT_TOP 20
#define DEFAULT_MIN_SHARE 1.0

enum format { FORMAT_TOP, FORMAT_FOLDED, FORMAT_TREE, FORMAT_HTML };

static const char *const format_names[] = { "top", "folded", "tree", "html" };

void report_usage(FILE *f)
{
	fputs("  cpuprof report [--format top|folded|tree|html] [-o OUT] [--lines]\n"
	      "                 [--value cpu|samples|off-cpu|wall] [--top N] [--min-share PCT]\n"
	      "                 [--group-by process|thread] [--list REGEX] [--intervals]\n"
	      "                 FILE...\n"
	      "      report the pprof profiles FILE... (several are merged: their\n"
	      "      samples added up, as `go tool pprof A B` does; their sample\n"
	      "      types must be the same):\n"
	      "        top     the N functions (--top, default 20; 0 for all) with\n"
	      "                the most CPU time (the default format)\n"
	      "        folded  one 'root;...;leaf VALUE' line per stack, for\n"
	      "                flamegraph.pl, inferno or speedscope; VALUE is\n"
	      "                nanoseconds of the value (--value samples: sample\n"
	      "                counts)\n"
	      "        tree    the call tree, with total and self shares; children\n"
	      "                below --min-share percent (default 1) summarised\n"
	      "        html    an interactive flame graph in one self-contained\n"
	      "                HTML file: needs -o OUT.html (or stdout redirected)\n"
	      "      --lines   one frame per function and source line (file:line)\n"
	      "      --value   the sample type counted: cpu, samples, and in\n"
	      "                profiles of off-CPU time (record --off-cpu) off-cpu\n"
	      "                and wall (= cpu + off-cpu, their default); other\n"
	      "                profiles' types by name (default: the profile's\n"
	      "                default type, else cpu, else its last)\n"
	      "      --group-by  tree and folded: stacks under their process (and\n"
	      "                thread) labels; the html page has this as a view\n"
	      "      --list REGEX  the source of matching functions, with each\n"
	      "                line's flat and cum CPU time\n"
	      "      --intervals  top: each share with its 95% interval from the\n"
	      "                sampling (the html page's tooltips always have it)\n"
	      "      Inlined calls are frames of their own, marked '(inlined)'.\n"
	      "      -o OUT    write OUT (complete, or not at all) instead of stdout\n"
	      "      Exits 0, or 2 with a message: bad usage, a FILE missing, corrupt\n"
	      "      or too large, profiles that cannot be merged, or output that\n"
	      "      cannot be written.\n",
	      f);
}

/* The parsed command line. */
struct report_args {
	enum format format;
	long top;
	double min_share;
	const char *out, *list, *value;
	bool lines, intervals;
	bool format_set, top_set, min_share_set; /* given, not defaults */
	enum stack_group group;
	const char **files;
	size_t nfiles;
};

/* Fills *ra from argv; returns 0, 1 for --help (printed), or -1 after
 * printing what is wrong. */
static int parse_args(int argc, char **argv, struct report_args *ra)
{
	bool opts = true;
	memset(ra, 0, sizeof *ra);
	ra->top = DEFAULT_TOP;
	ra->min_share = DEFAULT_MIN_SHARE;
	ra->files = calloc((size_t)argc + 1, sizeof *ra->files);
	if (!ra->files) {
		fprintf(stderr, "cpuprof report: out of memory\n");
		return -1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing = false;
		if (!opts || a[0] != '-' || a[1] == '\0') {
			ra->files[ra->nfiles++] = a;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs("usage:\n", stdout);
			report_usage(stdout);
			return 1;
		}
		if (strcmp(a, "--") == 0) {
			opts = false;
		} else if ((v = opt_value(argc, argv, &i, "--top", &missing))) {
			if (missing || !parse_int_arg(v, 0, 1000000000, &ra->top)) {
				fprintf(stderr, "cpuprof report: --top needs a "
					"number of rows (0 for all)\n");
				return -1;
			}
			ra->top_set = true;
		} else if ((v = opt_value(argc, argv, &i, "--format", &missing))) {
			size_t k = 0;
			while (k < 4 && strcmp(v, format_names[k]) != 0)
				k++;
			if (missing || k == 4) {
				fprintf(stderr, "cpuprof report: --format is one of "
					"top, folded, tree, html\n");
				return -1;
			}
			ra->format = (enum format)k;
			ra->format_set = true;
		} else if ((v = opt_value(argc, argv, &i, "-o", &missing))) {
			if (missing || !*v) {
				fprintf(stderr, "cpuprof report: -o needs a file name\n");
				return -1;
			}
			ra->out = v;
		} else if ((v = opt_value(argc, argv, &i, "--min-share", &missing))) {
			if (missing || !parse_pct_arg(v, &ra->min_share)) {
				fprintf(stderr, "cpuprof report: --min-share needs a "
					"percentage from 0 to 100\n");
				return -1;
			}
			ra->min_share_set = true;
		} else if ((v = opt_value(argc, argv, &i, "--value", &missing))) {
			if (missing || !*v) {
				fprintf(stderr, "cpuprof report: --value needs a "
					"sample type (cpu, samples, off-cpu, wall)\n");
				return -1;
			}
			ra->value = v;
		} else if ((v = opt_value(argc, argv, &i, "--group-by", &missing))) {
			if (!missing && strcmp(v, "process") == 0) {
				ra->group = GROUP_PROCESS;
			} else if (!missing && strcmp(v, "thread") == 0) {
				ra->group = GROUP_THREAD;
			} else {
				fprintf(stderr, "cpuprof report: --group-by is "
					"process or thread\n");
				return -1;
			}
		} else if ((v = opt_value(argc, argv, &i, "--list", &missing))) {
			regex_t re;
			if (missing || regcomp(&re, v, REG_EXTENDED | REG_NOSUB) != 0) {
				fprintf(stderr, "cpuprof report: --list needs a "
					"regular expression (POSIX extended)\n");
				return -1;
			}
			regfree(&re);
			ra->list = v;
		} else if (strcmp(a, "--lines") == 0) {
			ra->lines = true;
		} else if (strcmp(a, "--intervals") == 0) {
			ra->intervals = true;
		} else {
			fprintf(stderr, "cpuprof report: unknown option '%s'\n", a);
			return -1;
		}
	}
	if (ra->nfiles == 0) {
		fprintf(stderr, "cpuprof report: no FILE given\n");
		return -1;
	}
	/* An option its format does not use is refused, not ignored. */
	const char *unused = NULL, *of = format_names[ra->format];
	if (ra->list && ra->format_set)
		unused = "--format", of = "--list (a format of its own)";
	else if (ra->list && ra->group)
		unused = "--group-by", of = "--list";
	else if (ra->group && ra->format == FORMAT_TOP)
		unused = "--group-by";
	else if ((ra->top_set || ra->intervals) && (ra->list || ra->format != FORMAT_TOP))
		unused = ra->top_set ? "--top" : "--intervals", of = ra->list ? "--list" : of;
	else if (ra->min_share_set && (ra->list || ra->format != FORMAT_TREE))
		unused = "--min-share", of = ra->list ? "--list" : of;
	if (unused) {
		fprintf(stderr, "cpuprof report: %s does not apply to %s (--top and --intervals: top; --min-share: tree; "
			"--group-by: tree, folded and html)\n", unused, of);
		return -1;
	}
	if (ra->format == FORMAT_HTML && !ra->out && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "cpuprof report: --format html needs -o FILE.html\n");
		return -1;
	}
	return 0;
}

/* Writes the chosen format to out. */
static int write_format(FILE *out, const struct report_args *ra,
			const struct report_input *in,
			const struct stackset *ss)
{
	if (ra->list)
		return list_write(out, in, ss, ra->list);
	switch (ra->format) {
	case FORMAT_FOLDED:
		return folded_write(out, ss);
	case FORMAT_TREE:
		return tree_write(out, in, ss, ra->min_share);
	case FORMAT_HTML:
		return flame_write(out, in, ss);
	case FORMAT_TOP:
	default:
		return top_write(out, in, ss, ra->top, ra->intervals);
	}
}

/* What write_report needs. */
struct report_job {
	const struct report_args *ra;
	const struct report_input *in;
	const struct stackset *ss;
};

/* report_output's writer of a report_job. */
static int write_report(FILE *out, void *arg)
{
	const struct report_job *j = arg;
	return write_format(out, j->ra, j->in, j->ss);
}

int report_output(const char *path, const char *cmd,
		  int (*fn)(FILE *out, void *arg), void *arg)
{
	FILE *out = stdout;
	char *tmp = NULL;
	if (path && strcmp(path, "-") != 0) {
		if (asprintf(&tmp, "%s.tmp%ld", path, (long)getpid()) < 0) {
			fprintf(stderr, "cpuprof %s: out of memory\n", cmd);
			return EXIT_USAGE;
		}
		if (!(out = fopen(tmp, "w"))) {
			fprintf(stderr, "cpuprof %s: cannot write %s: %m\n", cmd, path);
			free(tmp);
			return EXIT_USAGE;
		}
	}
	int rc = fn(out, arg);
	bool werr = fflush(out) != 0 || ferror(out);
	if (out != stdout && fclose(out) != 0)
		werr = true;
	int status = 0;
	if (rc < 0) {
		fprintf(stderr, "cpuprof %s: out of memory\n", cmd);
		status = EXIT_USAGE;
	} else if (werr) {
		fprintf(stderr, "cpuprof %s: writing %s: %m\n", cmd,
			tmp ? path : "the report");
		status = EXIT_USAGE;
	} else if (tmp && rename(tmp, path) != 0) {
		fprintf(stderr, "cpuprof %s: cannot write %s: %m\n", cmd, path);
		status = EXIT_USAGE;
	}
	if (tmp && status != 0)
		unlink(tmp);
	free(tmp);
	return status;
}

bool report_output_is_input(const char *path, const char *cmd, const char *const *files, size_t n)
{
	struct stat o, s;
	if (!path || strcmp(path, "-") == 0 || stat(path, &o) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (stat(files[i], &s) == 0 && s.st_dev == o.st_dev && s.st_ino == o.st_ino) {
			fprintf(stderr, "cpuprof %s: -o %s is %s, a profile it reads: it would be overwritten\n", cmd, path,
				files[i]);
			return true;
		}
	return false;
}

int cmd_report(int argc, char **argv)
{
	struct report_args ra;
	int prc = parse_args(argc, argv, &ra);
	if (prc != 0) {
		free(ra.files);
		if (prc > 0)
			return 0;
		fputs("usage:\n", stderr);
		report_usage(stderr);
		return EXIT_USAGE;
	}
	struct profile **p = calloc(ra.nfiles, sizeof *p);
	int status = EXIT_USAGE;
	struct stackset ss;
	memset(&ss, 0, sizeof ss);
	if (report_output_is_input(ra.out, "report", ra.files, ra.nfiles))
		goto out;
	if (!p) {
		fprintf(stderr, "cpuprof report: out of memory\n");
		goto out;
	}
	char err[512];
	for (size_t i = 0; i < ra.nfiles; i++) {
		if (profile_read_file(ra.files[i], &p[i], err, sizeof err) < 0) {
			fprintf(stderr, "cpuprof report: %s: %s\n", ra.files[i], err);
			goto out;
		}
	}
	struct stack_options so = { .lines = ra.lines, .group = ra.group, .value = ra.value };
	if (ra.format == FORMAT_HTML && !ra.list)
		so.group = GROUP_THREAD; /* the page offers the views */
	if (stackset_build(&ss, p, ra.files, ra.nfiles, &so, err, sizeof err) < 0) {
		fprintf(stderr, "cpuprof report: %s\n", err);
		goto out;
	}
	struct report_input in = { p, ra.files, ra.nfiles };
	struct report_job job = { &ra, &in, &ss };
	status = report_output(ra.out, "report", write_report, &job);
out:
	stackset_free(&ss);
	for (size_t i = 0; p && i < ra.nfiles; i++)
		profile_free(p[i]);
	free(p);
	free(ra.files);
	return status;
}
