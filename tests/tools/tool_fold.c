/*
 * tool_fold.c -- prints a pprof profile's samples as folded stacks for the
 * tests to match: one line per sample, "COUNT FRAME;FRAME;...", the leaf
 * first, each frame NAME@MAPPING (the mapping's base name; NAME is "?" for
 * a location without a function).  Uses the CLI's profile reader.
 *
 * Usage: tool_fold PROFILE          the samples
 *        tool_fold -v TYPE PROFILE  the samples, with their TYPE values
 *                                   (e.g. cpu) instead of samples/count
 *        tool_fold -c KEY PROFILE   the value of comment KEY=VALUE
 *        tool_fold -d PROFILE       each sample's depth: its locations
 *                                   (pcs; an inlined call is a Line of
 *                                   its caller's location), less a last
 *                                   one that is [truncated]
 */
#include <stdio.h>
#include <string.h>

#include "pprof_read.h"

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int main(int argc, char **argv)
{
	const char *key = NULL, *type = "samples", *file = argv[1];
	int depth = 0;
	if (argc == 3 && !strcmp(argv[1], "-d")) {
		depth = 1;
		file = argv[2];
	} else if (argc == 4 && !strcmp(argv[1], "-c")) {
		key = argv[2];
		file = argv[3];
	} else if (argc == 4 && !strcmp(argv[1], "-v")) {
		type = argv[2];
		file = argv[3];
	} else if (argc != 2) {
		fprintf(stderr, "usage: tool_fold [-c KEY | -v TYPE | -d] PROFILE\n");
		return 2;
	}
	struct profile *p;
	char err[512];
	if (profile_read_file(file, &p, err, sizeof err) < 0) {
		fprintf(stderr, "tool_fold: %s: %s\n", file, err);
		return 1;
	}
	if (key) {
		size_t kl = strlen(key);
		int found = 0;
		for (size_t i = 0; i < p->ncomments; i++)
			if (!strncmp(p->comments[i], key, kl) && p->comments[i][kl] == '=') {
				puts(p->comments[i] + kl + 1);
				found = 1;
			}
		profile_free(p);
		return found ? 0 : 1;
	}
	int ci = -1;
	for (size_t i = 0; i < p->nsample_types && ci < 0; i++)
		if (!strcmp(p->sample_types[i].type, type))
			ci = (int)i;
	if (ci < 0 && strcmp(type, "samples")) {
		fprintf(stderr, "tool_fold: %s: no sample type %s\n", file, type);
		profile_free(p);
		return 1;
	}
	if (ci < 0)
		ci = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		if (depth) {
			size_t n = s->nlocations;
			const struct profile_location *last = n ? s->locations[n - 1] : NULL;
			if (last && last->nlines && last->lines[last->nlines - 1].function &&
			    !strcmp(last->lines[last->nlines - 1].function->name, "[truncated]"))
				n--;
			printf("%zu\n", n);
			continue;
		}
		printf("%lld ", (long long)s->values[ci]);
		for (size_t j = 0; j < s->nlocations; j++) {
			const struct profile_location *l = s->locations[j];
			const char *map = l->mapping ? base(l->mapping->filename) : "";
			if (l->nlines == 0)
				printf("%s?@%s", j ? ";" : "", map);
			for (size_t k = 0; k < l->nlines; k++) {
				const struct profile_function *f = l->lines[k].function;
				printf("%s%s@%s", j || k ? ";" : "", f && f->name[0] ? f->name : "?", map);
			}
		}
		putchar('\n');
	}
	profile_free(p);
	return 0;
}
