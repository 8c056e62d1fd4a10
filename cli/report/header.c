/*
 * header.c -- the header of `cpuprof report`'s text formats (top, tree,
 * list): what the profiler said about each profile in its comments, and
 * the totals of the merged stacks.
 */
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "report.h"

const char *const report_comment_keys[] = { "engine", "hz", "samples", "lost", "coverage",
					   "attributed", "unwind", "engine_reason", NULL };

void header_comments(FILE *out, const struct profile *p, const char *prefix)
{
	bool any = false;
	for (size_t i = 0; report_comment_keys[i]; i++) {
		const char *v = profile_comment(p, report_comment_keys[i]);
		if (v && strcmp(report_comment_keys[i], "engine_reason") != 0) {
			fprintf(out, "%s%s=%s", any ? " " : prefix, report_comment_keys[i], v);
			any = true;
		}
	}
	if (any)
		fputc('\n', out);
	const char *reason = profile_comment(p, "engine_reason");
	if (reason)
		fprintf(out, "%sengine_reason=%s\n", prefix, reason);
	const char *warning = profile_comment(p, "warning");
	if (warning)
		fprintf(out, "%swarning: %s\n", prefix, warning);
	const char *sel = profile_comment(p, "selection");
	if (sel)
		fprintf(out, "%sselection: %s (the lines above are of the whole profile)\n", prefix, sel);
}

void header_print(FILE *out, const struct report_input *in,
		  const struct stackset *ss)
{
	if (in->n == 1) {
		header_comments(out, in->profiles[0], "");
	} else {
		fprintf(out, "Merged %zu profiles:\n", in->n);
		for (size_t i = 0; i < in->n; i++) {
			fprintf(out, "  %s\n", in->names[i]);
			header_comments(out, in->profiles[i], "    ");
		}
	}
	if (!ss->is_cpu)
		fprintf(out, "Sample type: %s/%s%s\n", ss->value_type, ss->unit,
			ss->has_cpu ? "" : " (the profile has no cpu/nanoseconds)");

	int64_t duration = 0;
	for (size_t i = 0; i < in->n; i++)
		if (in->profiles[i]->duration_nanos > 0)
			duration = sat_add(duration, in->profiles[i]->duration_nanos);
	char tot[64], dur[64];
	format_value(tot, sizeof tot, ss->total, ss->unit);
	char what[32];
	snprintf(what, sizeof what, "Total%s%s", ss->what ? " " : "", ss->what ? ss->what : "");
	double scale = ns_per_unit(ss->unit);
	if (duration > 0) {
		format_value(dur, sizeof dur, duration, "nanoseconds");
		if (scale > 0)
			fprintf(out, "Duration: %s, %s: %s (%.2f%% of the duration)\n",
				dur, what, tot,
				100.0 * (double)ss->total * scale / (double)duration);
		else
			fprintf(out, "Duration: %s, %s: %s %s\n", dur, what, tot,
				ss->unit);
	} else if (scale > 0) {
		fprintf(out, "%s: %s\n", what, tot);
	} else {
		fprintf(out, "%s: %s %s\n", what, tot, ss->unit);
	}
}
