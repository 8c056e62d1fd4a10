/*
 * report.c -- a libFuzzer harness for `cpuprof report`: each input is read
 * by the CLI's pprof reader and, if accepted, merged and written in every
 * format (top, tree, folded, html, speedscope, a listing), with and
 * without --lines, grouping and intervals, and compared with itself by
 * `cpuprof diff` in its every format, to /dev/null.  Built and run by
 * `make fuzz-report` with clang's -fsanitize=fuzzer,address,undefined;
 * not part of `make check`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "diff/diff.h"
#include "pprof_read.h"
#include "report/report.h"
#include "report/stacks.h"
#include "select.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null && !(null = fopen("/dev/null", "w")))
		abort();
	struct profile *p;
	char err[512];
	if (profile_parse(data, size, &p, err, sizeof err) < 0)
		return 0;
	const char *name = "fuzz.pb";
	struct report_input in = { &p, &name, 1 };
	for (int mode = 0; mode < 2; mode++) {
		struct stack_options o = { .lines = mode == 1, .group = mode == 1 ? GROUP_THREAD : GROUP_NONE };
		struct stackset ss;
		if (stackset_build(&ss, &p, &name, 1, &o, err, sizeof err) == 0) {
			top_write(null, &in, &ss, 0, mode == 1);
			tree_write(null, &in, &ss, mode ? 0.0 : 1.0);
			folded_write(null, &ss);
			flame_write(null, &in, &ss);
			if (mode == 0)
				list_write(null, &in, &ss, ".");
			else
				speedscope_write(null, &in, &ss); /* its stacks have GROUP_THREAD's frames */
		}
		stackset_free(&ss);
	}
	/* cpuprof diff of the input against itself, every format. */
	struct profile *pp[2] = { p, p };
	const char *names[2] = { name, name };
	struct stack_options o = { .verb = "compare" };
	struct stackset ss;
	if (stackset_build(&ss, pp, names, 2, &o, err, sizeof err) == 0 && p->nsample_types) {
		struct diff d;
		struct diff_options dop = { .threshold = 0.01, .alpha = 0.01, .tree = true,
					    .paths = true };
		struct diff_input din = { { pp, names, 1 }, { pp + 1, names + 1, 1 } };
		if (diff_compare(&d, &ss, p->nsamples, &dop) == 0) {
			diff_text_write(null, &din, &d, 0);
			diff_folded_write(null, &d);
			diff_page_write(null, &din, &d);
		}
		diff_free(&d);
	}
	stackset_free(&ss);
	/* A range and a thread taken from the input's first bytes, then top of
	 * what is left: profile_select cuts samples and their times. */
	long tid = size > 2 ? data[2] : 1;
	struct profile_selection sel = { .from_set = size > 0, .to_set = size > 1,
					 .from = size > 0 ? data[0] / 64.0 : 0, .to = size > 1 ? data[0] / 64.0 + data[1] / 16.0 : 0,
					 .tids = size > 3 && data[3] & 1 ? &tid : NULL, .ntids = size > 3 && data[3] & 1 };
	if (profile_select(p, &sel, err, sizeof err) == 0) {
		struct stack_options o2 = { 0 };
		if (stackset_build(&ss, &p, &name, 1, &o2, err, sizeof err) == 0)
			top_write(null, &in, &ss, 0, false);
		stackset_free(&ss);
	}
	profile_free(p);
	return 0;
}
