/*
 * vmprof.c -- judges one profile against the workload's ground truth:
 *
 *   vmprof TRUTH PROFILE
 *
 * TRUTH is vmwork's output ("truth key=value..." and "range LEAF LO HI"
 * lines); PROFILE is a pprof file (cpuprof's; read with the CLI's own
 * reader, cli/pprof_read.c) or a gperftools legacy CPU profile.  Samples are
 * given to a leaf by the address of their innermost frame, so no symbol
 * table is needed.  Prints one line:
 *
 *   judged samples=N profile_ns=N process_ns=N coverage=X attributed=X err_pp=X
 *          share_leaf_a=X ... true_leaf_a=X ... sleep_pp=X
 *
 * where coverage = profile CPU / the process's CPU, attributed the same
 * without the CPU of frames that are not code ("[unsampled: ...]",
 * "[lost]", "[profiler: ...]": CPU the profile accounts for but puts in
 * no function), err_pp is the largest
 * |profile share - true share| over the leaves in percentage points (true
 * share = leaf CPU / process CPU).  The process's CPU is that of the
 * program's own threads while the workload ran (vmwork's own_ns: its
 * workers' and its main thread's), and the profile's CPU likewise leaves
 * out "[unsampled: before the profile started]" (the dynamic loader, before
 * main(): no profiler loaded with the program sees it) and "[profiler:
 * ...]" (cpuprof's own thread, which drains the samples taken before
 * main() returned after it, outside the truth's window: 0.3 s of the VM's
 * emulated aarch64 CPU); a truth without own_ns (older vmwork) counts the
 * whole process's CPU from main() on,
 * err_leaves_pp the same among the leaves
 * only (each leaf's part of the leaves' total), sleep_pp the share of the
 * profile whose innermost frame is a nanosleep function (pprof only) and
 * other_*_pp the part outside the leaves, true and profiled; then the
 * profile's comments, one "comment TEXT" line each.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_read.h"

#define LEAVES 3

static const char *const leaf_key[LEAVES] = { "leaf_a", "leaf_b", "leaf_c" };

struct truth {
	uint64_t process_ns, leaf_ns[LEAVES];
	uint64_t lo[LEAVES], hi[LEAVES];
};

struct judged {
	uint64_t samples;
	double total_ns, leaf_ns[LEAVES], sleep_ns;
	double pseudo_ns; /* in frames that are not code: "[unsampled: ...]" ... */
};

/* Reads vmwork's output; returns 0, or -1 if a needed value is missing. */
static int read_truth(const char *path, struct truth *t)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int have = 0;
	uint64_t own = 0;
	if (!f)
		return -1;
	memset(t, 0, sizeof *t);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "truth ", 6) == 0) {
			for (char *tok = strtok(line + 6, " \n"); tok; tok = strtok(NULL, " \n")) {
				char *eq = strchr(tok, '=');
				if (!eq)
					continue;
				*eq = 0;
				if (strcmp(tok, "process_ns") == 0)
					t->process_ns += strtoull(eq + 1, NULL, 10), have |= 1;
				if (strcmp(tok, "main_ns") == 0)
					t->process_ns -= strtoull(eq + 1, NULL, 10);
				if (strcmp(tok, "own_ns") == 0)
					own = strtoull(eq + 1, NULL, 10);
				for (int i = 0; i < LEAVES; i++) {
					char k[32];
					snprintf(k, sizeof k, "%s_ns", leaf_key[i]);
					if (strcmp(tok, k) == 0)
						t->leaf_ns[i] = strtoull(eq + 1, NULL, 10);
				}
			}
		} else if (strncmp(line, "range ", 6) == 0) {
			char name[64];
			unsigned long long lo, hi;
			if (sscanf(line + 6, "%63s %llx %llx", name, &lo, &hi) == 3)
				for (int i = 0; i < LEAVES; i++)
					if (strcmp(name, leaf_key[i]) == 0)
						t->lo[i] = lo, t->hi[i] = hi, have |= 2 << i;
		}
	}
	fclose(f);
	if (own)
		t->process_ns = own;
	return have == 15 && t->process_ns ? 0 : -1;
}

/* Which leaf's code holds pc (0..2), or -1. */
static int leaf_of(const struct truth *t, uint64_t pc)
{
	for (int i = 0; i < LEAVES; i++)
		if (pc >= t->lo[i] && pc < t->hi[i])
			return i;
	return -1;
}

/* A gperftools legacy CPU profile: 64-bit words, header 0 3 0 period_us 0,
 * records count n pc..., trailer 0 1 0.  Returns 0, 1 if the file is not
 * one, -1 if it is malformed. */
static int judge_legacy(const char *path, const struct truth *t, struct judged *j)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint64_t h[5];
	if (fread(h, sizeof h[0], 5, f) != 5 || h[0] != 0 || h[1] != 3 || h[2] != 0 || h[4] != 0) {
		fclose(f);
		return 1;
	}
	double period_ns = (double)h[3] * 1000.0;
	for (;;) {
		uint64_t rec[2];
		if (fread(rec, sizeof rec[0], 2, f) != 2)
			break;
		if (rec[0] == 0 && rec[1] == 1)
			break; /* trailer */
		if (rec[1] == 0 || rec[1] > 1024) {
			fclose(f);
			return -1;
		}
		uint64_t pcs[1024];
		if (fread(pcs, sizeof pcs[0], rec[1], f) != rec[1]) {
			fclose(f);
			return -1;
		}
		j->samples += rec[0];
		j->total_ns += (double)rec[0] * period_ns;
		int l = leaf_of(t, pcs[0]);
		if (l >= 0)
			j->leaf_ns[l] += (double)rec[0] * period_ns;
	}
	fclose(f);
	return 0;
}

/* A pprof profile: sums its cpu/nanoseconds values, by leaf and in the
 * sleep call; hands the parsed profile back in *out for its comments.
 * Returns 0 or -1 (message on stderr). */
static int judge_pprof(const char *path, const struct truth *t, struct judged *j, struct profile **out)
{
	char err[256];
	struct profile *p;
	if (profile_read_file(path, &p, err, sizeof err) < 0) {
		fprintf(stderr, "vmprof: %s: %s\n", path, err);
		return -1;
	}
	int cpu = profile_find_sample_type(p, "cpu", "nanoseconds");
	int cnt = profile_find_sample_type(p, "samples", "count");
	if (cpu < 0) {
		fprintf(stderr, "vmprof: %s: no cpu/nanoseconds sample type\n", path);
		profile_free(p);
		return -1;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		double v = (double)s->values[cpu];
		j->samples += cnt >= 0 ? (uint64_t)s->values[cnt] : 0;
		j->total_ns += v;
		if (s->nlocations == 0)
			continue;
		const struct profile_location *l = s->locations[0];
		int leaf = leaf_of(t, l->address);
		const char *fn = l->nlines && l->lines[0].function ? l->lines[0].function->name : "";
		if (l->address == 0 && (!strcmp(fn, "[unsampled: before the profile started]") ||
					!strncmp(fn, "[profiler: ", 11))) {
			/* Before main(), or not the program's threads: where the
			 * truth does not look. */
			j->total_ns -= v;
			continue;
		}
		if (leaf >= 0)
			j->leaf_ns[leaf] += v;
		else if (strstr(fn, "nanosleep"))
			j->sleep_ns += v;
		else if (l->address == 0 && fn[0] == '[')
			j->pseudo_ns += v;
	}
	*out = p;
	return 0;
}

int main(int argc, char **argv)
{
	struct truth t;
	struct judged j;
	struct profile *p = NULL;
	if (argc != 3) {
		fprintf(stderr, "usage: vmprof TRUTH PROFILE\n");
		return 2;
	}
	if (read_truth(argv[1], &t) < 0) {
		fprintf(stderr, "vmprof: %s: no usable ground truth\n", argv[1]);
		return 1;
	}
	memset(&j, 0, sizeof j);
	int rc = judge_legacy(argv[2], &t, &j);
	if (rc == 1)
		rc = judge_pprof(argv[2], &t, &j, &p);
	if (rc < 0) {
		fprintf(stderr, "vmprof: %s: unreadable profile\n", argv[2]);
		return 1;
	}
	double err = 0, err_leaves = 0, prof_leaves = 0, true_leaves = 0;
	for (int i = 0; i < LEAVES; i++)
		prof_leaves += j.leaf_ns[i], true_leaves += (double)t.leaf_ns[i];
	printf("judged samples=%" PRIu64 " profile_ns=%.0f process_ns=%" PRIu64 " coverage=%.3f attributed=%.3f",
	       j.samples, j.total_ns, t.process_ns, j.total_ns / (double)t.process_ns,
	       (j.total_ns - j.pseudo_ns) / (double)t.process_ns);
	for (int i = 0; i < LEAVES; i++) {
		double share = j.total_ns > 0 ? 100.0 * j.leaf_ns[i] / j.total_ns : 0;
		double truth = 100.0 * (double)t.leaf_ns[i] / (double)t.process_ns;
		double e = share > truth ? share - truth : truth - share;
		if (e > err)
			err = e;
		/* The same among the leaves only: blind to where the CPU
		 * outside the leaves (system calls, mostly) was put. */
		share = prof_leaves > 0 ? 100.0 * j.leaf_ns[i] / prof_leaves : 0;
		truth = true_leaves > 0 ? 100.0 * (double)t.leaf_ns[i] / true_leaves : 0;
		e = share > truth ? share - truth : truth - share;
		if (e > err_leaves)
			err_leaves = e;
		printf(" share_%s=%.1f true_%s=%.1f", leaf_key[i],
		       j.total_ns > 0 ? 100.0 * j.leaf_ns[i] / j.total_ns : 0, leaf_key[i],
		       100.0 * (double)t.leaf_ns[i] / (double)t.process_ns);
	}
	printf(" err_pp=%.1f err_leaves_pp=%.1f sleep_pp=%.1f other_true_pp=%.1f other_prof_pp=%.1f\n",
	       j.total_ns > 0 ? err : 100.0, prof_leaves > 0 ? err_leaves : 100.0,
	       j.total_ns > 0 ? 100.0 * j.sleep_ns / j.total_ns : 0,
	       100.0 - 100.0 * true_leaves / (double)t.process_ns,
	       j.total_ns > 0 ? 100.0 - 100.0 * prof_leaves / j.total_ns : 0);
	for (size_t i = 0; p && i < p->ncomments; i++)
		printf("comment %s\n", p->comments[i]);
	profile_free(p);
	return 0;
}
