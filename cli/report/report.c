/*
 * report.c -- `cpuprof report [OPTIONS] FILE...`: reads one or more pprof
 * profiles, merges their samples (stacks.h; sample types must match, as
 * for `go tool pprof A B`) and writes them in one of the formats of
 * report.h: top (the default), folded, tree, html, speedscope, or a source listing
 * (--list).  This file parses the options, reads the files and
 * dispatches; the output goes to stdout, or with -o to a file that appears
 * only once it is complete.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "commands.h"
#include "flags.h"
#include "pprof_read.h"
#include "report.h"
#include "select.h"
#include "stacks.h"

enum format { FORMAT_TOP, FORMAT_FOLDED, FORMAT_TREE, FORMAT_HTML, FORMAT_SPEEDSCOPE };

static const char *const format_names[] = { "top", "folded", "tree", "html", "speedscope", NULL };
static const char *const group_names[] = { "process", "thread", NULL };

/* report's flags: their order is the usage's. */
enum { R_FORMAT, R_OUT, R_LINES, R_VALUE, R_TOP, R_MIN_SHARE, R_GROUP_BY, R_LIST, R_INTERVALS, R_FROM, R_TO, R_PID,
       R_TID, R_NFLAGS };

static const struct flag report_flags[R_NFLAGS] = {
	[R_FORMAT] = { "--format", 0, FLAG_CHOICE, .choices = format_names,
		       .help = "top: the N functions (--top) with the most CPU time (the default); folded: one "
			       "'root;...;leaf VALUE' line per stack, for flamegraph.pl, inferno or speedscope, VALUE "
			       "in nanoseconds of the value (--value samples: sample counts); tree: the call tree, with "
			       "total and self shares, children below --min-share summarised; html: an interactive "
			       "flame graph in one self-contained HTML file (needs -o OUT.html, or stdout redirected); "
			       "speedscope: speedscope's JSON, a profile per thread of its samples in time order" },
	[R_OUT] = { "-o", 0, FLAG_TEXT, "OUT", .want = "a file name",
		    .help = "write OUT (complete, or not at all) instead of stdout" },
	[R_LINES] = { "--lines", 0, FLAG_BOOL, .help = "one frame per function and source line (file:line)" },
	[R_VALUE] = { "--value", 0, FLAG_TEXT, "TYPE", .want = "a sample type (cpu, samples, off-cpu, wall)",
		      .help = "the sample type counted: cpu, samples, and in profiles of off-CPU time (record "
			      "--off-cpu) off-cpu and wall (= cpu + off-cpu, their default); other profiles' types by "
			      "name (default: the profile's default type, else cpu, else its last)" },
	[R_TOP] = { "--top", 0, FLAG_INT, "N", .min = 0, .max = 1000000000, .def = 20,
		    .want = "a number of rows (0 for all)", .help = "top: the functions shown, 0 for all" },
	[R_MIN_SHARE] = { "--min-share", 0, FLAG_REAL, "PCT", .lo = 0, .hi = 100, .def = 1,
			  .want = "a percentage from 0 to 100",
			  .help = "tree: children below PCT percent of the total summarised" },
	[R_GROUP_BY] = { "--group-by", 0, FLAG_CHOICE, .choices = group_names,
			 .help = "tree and folded: stacks under their process (and thread) labels; the html page has "
				 "this as a view" },
	[R_LIST] = { "--list", 0, FLAG_REGEX, "REGEX", .want = "a regular expression (POSIX extended)",
		     .help = "the source of matching functions, with each line's flat and cum CPU time" },
	[R_INTERVALS] = { "--intervals", 0, FLAG_BOOL,
			  .help = "top: each share with its 95% interval from the sampling (the html page's "
				  "tooltips always have it)" },
	[R_FROM] = { "--from", 0, FLAG_SECONDS, "T", .lo = 0, .hi = 1e12, .no_def = true,
		     .want = "a time from the start (250ms, 1.5s, 2m)", .help = SELECT_FLAG_HELP_FROM },
	[R_TO] = { "--to", 0, FLAG_SECONDS, "T", .lo = 0, .hi = 1e12, .lo_open = true, .no_def = true,
		   .want = "a time after the start (250ms, 1.5s, 2m)", .help = SELECT_FLAG_HELP_TO },
	[R_PID] = { "--pid", 0, FLAG_TEXT, "PID[,PID...]", .want = "process ids", .help = SELECT_FLAG_HELP_PID },
	[R_TID] = { "--tid", 0, FLAG_TEXT, "TID[,TID...]", .want = "thread ids", .help = SELECT_FLAG_HELP_TID },
};

static const struct flags report_cmd = {
	.cmd = "report",
	.flag = report_flags,
	.n = R_NFLAGS,
	.synopsis = "  cpuprof report [OPTIONS] FILE...\n"
		    "      report the pprof profiles FILE... (several are merged: their\n"
		    "      samples added up, as `go tool pprof A B` does; their sample\n"
		    "      types must be the same).  Inlined calls are frames of their\n"
		    "      own, marked '(inlined)'.\n",
	.notes = "      Exits 0, or 2 with a message: bad usage, a FILE missing, corrupt\n"
		 "      or too large, profiles that cannot be merged, or output that\n"
		 "      cannot be written.\n",
};

void report_usage(FILE *f)
{
	flags_usage(&report_cmd, f);
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
	struct profile_selection sel;
	const char **files;
	size_t nfiles;
};

/* An option its format does not use, refused rather than ignored: 0, or
 * -1 after saying which. */
static int check_fit(const struct report_args *ra)
{
	const char *unused = NULL, *of = format_names[ra->format];
	if (ra->list && ra->format_set)
		unused = "--format", of = "--list (a format of its own)";
	else if (ra->list && ra->group)
		unused = "--group-by", of = "--list";
	else if (ra->group && (ra->format == FORMAT_TOP || ra->format == FORMAT_SPEEDSCOPE))
		unused = "--group-by";
	else if ((ra->top_set || ra->intervals) && (ra->list || ra->format != FORMAT_TOP))
		unused = ra->top_set ? "--top" : "--intervals", of = ra->list ? "--list" : of;
	else if (ra->min_share_set && (ra->list || ra->format != FORMAT_TREE))
		unused = "--min-share", of = ra->list ? "--list" : of;
	if (unused) {
		flags_refuse(&report_cmd, "%s does not apply to %s (--top and --intervals: top; --min-share: tree; "
			     "--group-by: tree, folded and html)", unused, of);
		return -1;
	}
	if (ra->format == FORMAT_HTML && !ra->out && isatty(STDOUT_FILENO)) {
		flags_refuse(&report_cmd, "--format html needs -o FILE.html");
		return -1;
	}
	return 0;
}

/* Fills *ra from argv (its files point into fr, which the caller frees);
 * returns 0, FLAGS_HELP (printed), or -1 after printing what is wrong. */
static int parse_args(int argc, char **argv, struct report_args *ra, struct flags_result *fr)
{
	memset(ra, 0, sizeof *ra);
	int rc = flags_parse(&report_cmd, argc, argv, fr);
	if (rc != 0)
		return rc;
	const struct flag_value *v = fr->v;
	ra->format = v[R_FORMAT].set ? (enum format)v[R_FORMAT].n : FORMAT_TOP;
	ra->format_set = v[R_FORMAT].set;
	ra->top = v[R_TOP].n;
	ra->top_set = v[R_TOP].set;
	ra->min_share = v[R_MIN_SHARE].x;
	ra->min_share_set = v[R_MIN_SHARE].set;
	ra->out = v[R_OUT].text;
	ra->list = v[R_LIST].text;
	ra->value = v[R_VALUE].text;
	ra->lines = v[R_LINES].set;
	ra->intervals = v[R_INTERVALS].set;
	ra->group = v[R_GROUP_BY].set ? (v[R_GROUP_BY].n == 0 ? GROUP_PROCESS : GROUP_THREAD) : GROUP_NONE;
	if (select_flags(&report_cmd, v[R_FROM], v[R_TO], v[R_PID], v[R_TID], &ra->sel) < 0)
		return -1;
	ra->files = (const char **)fr->operands;
	ra->nfiles = fr->noperands;
	if (ra->nfiles == 0) {
		flags_refuse(&report_cmd, "no FILE given");
		return -1;
	}
	return check_fit(ra);
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
	case FORMAT_SPEEDSCOPE:
		return speedscope_write(out, in, ss);
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
	struct cp_outfile of = { .fd = -1 };
	char why[512];
	bool named = path && strcmp(path, "-") != 0;
	if (named) {
		/* Written whole, or into a path that is not a regular file
		 * (outfile.h). */
		if (cp_outfile_open(&of, path, why, sizeof why) < 0 || !(out = fdopen(of.fd, "w"))) {
			fprintf(stderr, "cpuprof %s: cannot write %s: %s\n", cmd, path, of.fd < 0 ? why : strerror(errno));
			cp_outfile_abandon(&of);
			return EXIT_USAGE;
		}
	}
	int rc = fn(out, arg);
	bool werr = fflush(out) != 0 || ferror(out);
	if (named) {
		if (fclose(out) != 0)
			werr = true;
		of.fd = -1;
	}
	int status = 0;
	if (rc < 0) {
		fprintf(stderr, "cpuprof %s: out of memory\n", cmd);
		status = EXIT_USAGE;
	} else if (werr) {
		fprintf(stderr, "cpuprof %s: writing %s: %m\n", cmd, named ? path : "the report");
		status = EXIT_USAGE;
	} else if (named && cp_outfile_commit(&of, why, sizeof why) < 0) {
		fprintf(stderr, "cpuprof %s: cannot write %s: %s\n", cmd, path, why);
		status = EXIT_USAGE;
	}
	if (status != 0)
		cp_outfile_abandon(&of);
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
	struct flags_result fr;
	int prc = parse_args(argc, argv, &ra, &fr);
	if (prc != 0) {
		select_free(&ra.sel);
		flags_free(&report_cmd, &fr);
		return prc == FLAGS_HELP ? 0 : EXIT_USAGE;
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
	char err[512], none[1024] = "";
	size_t empty = 0;
	for (size_t i = 0; i < ra.nfiles; i++) {
		int sel = -1;
		if (profile_read_file(ra.files[i], &p[i], err, sizeof err) < 0 ||
		    (sel = profile_select(p[i], &ra.sel, err, sizeof err)) < 0) {
			fprintf(stderr, "cpuprof report: %s: %s\n", ra.files[i], err);
			goto out;
		}
		/* A selection need not find something in every file merged:
		 * in one at least. */
		if (sel == 1 && empty++ == 0)
			snprintf(none, sizeof none, "%s: %s", ra.files[i], err);
	}
	if (empty == ra.nfiles) {
		fprintf(stderr, "cpuprof report: %s\n", none);
		goto out;
	}
	struct stack_options so = { .lines = ra.lines, .group = ra.group, .value = ra.value };
	if ((ra.format == FORMAT_HTML || ra.format == FORMAT_SPEEDSCOPE) && !ra.list)
		so.group = GROUP_THREAD; /* the page offers the views; speedscope's profiles are threads */
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
	select_free(&ra.sel);
	flags_free(&report_cmd, &fr);
	return status;
}
