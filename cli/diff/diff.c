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
#include "flags.h"
#include "diff.h"
#include "pprof_read.h"
#include "select.h"

enum format { FORMAT_TEXT, FORMAT_FOLDED, FORMAT_HTML };

static const char *const format_names[] = { "top", "folded", "html", NULL };

/* diff's flags: their order is the usage's. */
enum { D_FORMAT, D_OUT, D_THRESHOLD, D_ALPHA, D_TOP, D_LINES, D_VALUE, D_OTHER, D_BASE, D_BASE_FROM, D_BASE_TO,
       D_NEW_FROM, D_NEW_TO, D_PID, D_TID, D_NFLAGS };

static const struct flag diff_flags[D_NFLAGS] = {
	[D_FORMAT] = { "--format", 0, FLAG_CHOICE, .choices = format_names,
		       .help = "top: each function's flat and cum share in both, with 95% intervals, the change and "
			       "its p-value, those that changed first, marked + or - (the default); folded: "
			       "'root;...;leaf BASE NEW' per stack (difffolded.pl's format), BASE scaled to NEW's "
			       "total; html: a differential flame graph, NEW's frames coloured where their share grew "
			       "or shrank beyond the noise" },
	[D_OUT] = { "-o", 0, FLAG_TEXT, "OUT", .want = "a file name", .help = "as for report" },
	[D_THRESHOLD] = { "--threshold", 0, FLAG_REAL, "PCT", .lo = 0, .hi = 100, .def = 1,
			  .want = "percentage points from 0 to 100",
			  .help = "the smallest change that counts, in percentage points of the total" },
	[D_ALPHA] = { "--alpha", 0, FLAG_REAL, "A", .lo = 0, .lo_open = true, .hi = 0.5, .def = 0.01,
		      .want = "a false-alarm rate above 0, at most 0.5",
		      .help = "the chance of any false alarm over all the functions (Holm's correction)" },
	[D_TOP] = { "--top", 0, FLAG_INT, "N", .min = 0, .max = 1000000000, .def = 20,
		    .want = "a number of functions (0 for all)",
		    .help = "top: the functions shown, 0 for all (every one that changed is shown)" },
	[D_LINES] = { "--lines", 0, FLAG_BOOL, .help = "as for report" },
	[D_VALUE] = { "--value", 0, FLAG_TEXT, "TYPE", .want = "a sample type (cpu, samples, off-cpu, wall)",
		      .help = "as for report (default cpu)" },
	[D_OTHER] = { "--other-programs", 0, FLAG_BOOL,
		      .help = "compare profiles of programs of other names (their main files: refused without it)" },
	[D_BASE] = { "--base", 0, FLAG_TEXT, "BASE", .many = true, .want = "a file name",
		     .help = "a BASE file; given once or more, every other FILE is NEW" },
	[D_BASE_FROM] = { "--base-from", 0, FLAG_SECONDS, "T", .lo = 0, .hi = 1e12, .no_def = true,
			  .want = "a time from the start (250ms, 1.5s, 2m)",
			  .help = "BASE is its samples from T seconds after its start (as report --from); with "
				  "a range of each side, one FILE is BASE and NEW: before and after a spike" },
	[D_BASE_TO] = { "--base-to", 0, FLAG_SECONDS, "T", .lo = 0, .hi = 1e12, .lo_open = true, .no_def = true,
			.want = "a time after the start (250ms, 1.5s, 2m)", .help = "... to T seconds" },
	[D_NEW_FROM] = { "--new-from", 0, FLAG_SECONDS, "T", .lo = 0, .hi = 1e12, .no_def = true,
			 .want = "a time from the start (250ms, 1.5s, 2m)", .help = "NEW, likewise" },
	[D_NEW_TO] = { "--new-to", 0, FLAG_SECONDS, "T", .lo = 0, .hi = 1e12, .lo_open = true, .no_def = true,
		       .want = "a time after the start (250ms, 1.5s, 2m)", .help = "NEW, likewise" },
	[D_PID] = { "--pid", 0, FLAG_TEXT, "PID[,PID...]", .want = "process ids",
		    .help = "both sides: " SELECT_FLAG_HELP_PID },
	[D_TID] = { "--tid", 0, FLAG_TEXT, "TID[,TID...]", .want = "thread ids",
		    .help = "both sides: " SELECT_FLAG_HELP_TID },
};

static const struct flags diff_cmd = {
	.cmd = "diff",
	.flag = diff_flags,
	.n = D_NFLAGS,
	.synopsis = "  cpuprof diff [OPTIONS] BASE NEW...\n"
		    "  cpuprof diff [OPTIONS] --base BASE [--base BASE...] NEW...\n"
		    "  cpuprof diff [OPTIONS] --base-to T --new-from T FILE\n"
		    "      which functions' shares of the CPU changed from BASE to NEW\n"
		    "      beyond the noise of sampling (several NEW files, or BASE files\n"
		    "      given with --base, are merged; profiles of other lengths,\n"
		    "      rates or engines compare by share).\n",
	.notes = "      Says so when the samples are too few to see a change of the\n"
		 "      threshold.  Exits 0 when nothing changed beyond the noise, 1\n"
		 "      when something did, 2 for bad usage, a FILE missing or corrupt,\n"
		 "      profiles that cannot be compared, or output not written.\n",
};

void diff_usage(FILE *f)
{
	flags_usage(&diff_cmd, f);
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
	struct profile_selection sel[2]; /* BASE's, NEW's */
};

/* Fills *da from argv (free its files, and fr, whatever the result);
 * returns 0, FLAGS_HELP (printed), or -1 after printing what is wrong. */
static int parse_args(int argc, char **argv, struct diff_args *da, struct flags_result *fr)
{
	memset(da, 0, sizeof *da);
	int rc = flags_parse(&diff_cmd, argc, argv, fr);
	if (rc != 0)
		return rc;
	const struct flag_value *v = fr->v;
	da->format = v[D_FORMAT].set ? (enum format)v[D_FORMAT].n : FORMAT_TEXT;
	da->top = v[D_TOP].n;
	da->threshold = v[D_THRESHOLD].x;
	da->alpha = v[D_ALPHA].x;
	da->out = v[D_OUT].text;
	da->value = v[D_VALUE].text;
	da->lines = v[D_LINES].set;
	da->other_programs = v[D_OTHER].set;
	/* The BASE files, then the NEW ones; without --base the first file
	 * is BASE. */
	if (!(da->files = calloc(fr->noperands + v[D_BASE].nall + 1, sizeof *da->files))) {
		fprintf(stderr, "cpuprof diff: out of memory\n");
		return -1;
	}
	const char **bases = v[D_BASE].all;
	size_t nbase = v[D_BASE].nall, first = 0;
	if (select_flags(&diff_cmd, v[D_BASE_FROM], v[D_BASE_TO], v[D_PID], v[D_TID], &da->sel[0]) < 0 ||
	    select_flags(&diff_cmd, v[D_NEW_FROM], v[D_NEW_TO], v[D_PID], v[D_TID], &da->sel[1]) < 0)
		return -1;
	/* Two ranges of one profile: FILE is BASE and NEW. */
	bool ranges = v[D_BASE_FROM].set || v[D_BASE_TO].set || v[D_NEW_FROM].set || v[D_NEW_TO].set;
	if (ranges && nbase == 0 && fr->noperands == 1)
		bases = (const char **)fr->operands, nbase = 1;
	else if (nbase == 0 && fr->noperands > 0)
		bases = (const char **)fr->operands, nbase = first = 1;
	for (size_t k = 0; k < nbase; k++)
		da->files[da->nfiles++] = bases[k];
	da->nbase = nbase;
	for (size_t k = first; k < fr->noperands; k++)
		da->files[da->nfiles++] = fr->operands[k];
	if (da->nfiles <= da->nbase) {
		flags_refuse(&diff_cmd, "needs BASE and at least one NEW file");
		return -1;
	}
	if (da->format == FORMAT_HTML && !da->out && isatty(STDOUT_FILENO)) {
		flags_refuse(&diff_cmd, "--format html needs -o FILE.html");
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

/* Whether profile b is of a's program (by their main files' names: a new
 * build of it has another build ID and is what diff is for); says so if
 * not. */
static bool same_program(const struct profile *a, const char *afile, const struct profile *b, const char *bfile)
{
	const char *pa = program_of(a), *pb = program_of(b);
	if (*pa && *pb && strcmp(pa, pb) != 0) {
		fprintf(stderr, "cpuprof diff: %s is a profile of %s, %s of %s: other programs, whose functions "
			"are not the same code (--other-programs compares them anyway)\n", afile, pa, bfile, pb);
		return false;
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
	struct flags_result fr;
	int prc = parse_args(argc, argv, &da, &fr);
	if (prc != 0) {
		free(da.files);
		select_free(&da.sel[0]);
		select_free(&da.sel[1]);
		flags_free(&diff_cmd, &fr);
		return prc == FLAGS_HELP ? 0 : EXIT_USAGE;
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
	char err[512], none[2][1024] = { "", "" };
	size_t empty[2] = { 0, 0 }, nbase = 0;
	struct stack_options so = { .lines = da.lines, .value = da.value, .verb = "compare" };
	/* One profile at a time, each's samples freed once in the stackset:
	 * two big profiles are never held whole at once. */
	for (size_t i = 0; i < da.nfiles; i++) {
		int side = i >= da.nbase, sel = -1;
		if (profile_read_file(da.files[i], &p[i], err, sizeof err) < 0 ||
		    (sel = profile_select(p[i], &da.sel[side], err, sizeof err)) < 0) {
			fprintf(stderr, "cpuprof diff: %s: %s\n", da.files[i], err);
			goto out;
		}
		/* Each side's selection must find something in one of its
		 * files at least. */
		if (sel == 1 && empty[side]++ == 0)
			snprintf(none[side], sizeof none[side], "%s (%s): %s", da.files[i], side ? "NEW" : "BASE", err);
		if (!da.other_programs && !same_program(p[0], da.files[0], p[i], da.files[i]))
			goto out;
		/* CPU by default, also where the profiles' own default is
		 * wall (profiles of off-CPU time). */
		if (i == 0 && !so.value && profile_find_sample_type(p[0], "cpu", "nanoseconds") >= 0)
			so.value = "cpu";
		if ((i == 0 && stackset_start(&ss, p[0], da.files[0], &so, err, sizeof err) < 0) ||
		    stackset_add(&ss, p[i], da.files[i], err, sizeof err) < 0) {
			fprintf(stderr, "cpuprof diff: %s\n", err);
			goto out;
		}
		profile_drop_samples(p[i]);
		if (i + 1 == da.nbase)
			nbase = ss.nsamples;
	}
	for (int side = 0; side < 2; side++)
		if (empty[side] == (side ? da.nfiles - da.nbase : da.nbase)) {
			fprintf(stderr, "cpuprof diff: %s\n", none[side]);
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
	select_free(&da.sel[0]);
	select_free(&da.sel[1]);
	flags_free(&diff_cmd, &fr);
	return status;
}
