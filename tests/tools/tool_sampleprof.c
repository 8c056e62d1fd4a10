/*
 * tool_sampleprof.c -- draws a synthetic profile: N samples, each of a
 * stack picked at random with the probability its share gives, from a
 * seeded generator, so that `cpuprof diff`'s tests can count its false
 * alarms over many pairs of profiles of the same program (and its
 * detections over pairs that differ) without running anything, and get
 * the same count on every run.  Writes the profile as tool_mkprof's text
 * (pipe it into `tool_mkprof OUT`).
 *
 * Usage: tool_sampleprof [OPTIONS] SEED N STACK=SHARE[@MULT]...
 *   STACK  frames root first, joined by ';' (main;work;leaf)
 *   SHARE  its relative weight in the draw (they need not add up to 1)
 *   MULT   its samples weigh MULT times the others (default 1)
 * Options:
 *   -w NS      the mean weight of a sample (default 1000000: 1 kHz)
 *   -j J       weights uniform within J of the mean, relative (0..1;
 *              default 0: all equal)
 *   -e NS      an exact [unsampled: ...] value of NS (count 0), as
 *              cpuprof writes the CPU its clocks saw before the profile
 *   -1         a pprof Sample per draw (default: one per stack, its
 *              count and value summed, as cpuprof merges them)
 *   -n         no samples/count type: only cpu/nanoseconds, a Sample per
 *              draw
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACKS 256
#define MAX_DEPTH 64
#define MAX_FUNCS 1024

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "tool_sampleprof: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	exit(2);
}

/* splitmix64: a small generator whose every seed gives a good stream. */
static uint64_t rng;
static uint64_t next(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(void)
{
	return (double)(next() >> 11) / 9007199254740992.0;
}

static char *funcs[MAX_FUNCS];
static int nfuncs;

/* The id (1-based) of function `name`, added on first use. */
static int func_id(const char *name)
{
	for (int i = 0; i < nfuncs; i++)
		if (strcmp(funcs[i], name) == 0)
			return i + 1;
	if (nfuncs == MAX_FUNCS)
		die("too many functions", NULL);
	funcs[nfuncs] = strdup(name);
	return ++nfuncs;
}

struct stack {
	int frames[MAX_DEPTH]; /* function ids, root first */
	int depth;
	double share, mult;
	uint64_t count;
	double ns;
};

int main(int argc, char **argv)
{
	double mean = 1e6, jitter = 0, exact = 0;
	int per_draw = 0, no_count = 0, i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			mean = atof(argv[++i]);
		else if (strcmp(argv[i], "-j") == 0 && i + 1 < argc)
			jitter = atof(argv[++i]);
		else if (strcmp(argv[i], "-e") == 0 && i + 1 < argc)
			exact = atof(argv[++i]);
		else if (strcmp(argv[i], "-1") == 0)
			per_draw = 1;
		else if (strcmp(argv[i], "-n") == 0)
			no_count = per_draw = 1;
		else
			die("unknown option", argv[i]);
	}
	if (argc - i < 3 || !(mean > 0) || jitter < 0 || jitter > 1)
		die("usage: tool_sampleprof [-w NS] [-j J] [-e NS] [-1] [-n] SEED N STACK=SHARE[@MULT]...", NULL);
	rng = strtoull(argv[i++], NULL, 10);
	long n = atol(argv[i++]);
	static struct stack st[MAX_STACKS];
	int ns = 0;
	double sum = 0;
	for (; i < argc; i++) {
		if (ns == MAX_STACKS)
			die("too many stacks", NULL);
		struct stack *s = &st[ns++];
		char *spec = strdup(argv[i]), *eq = strrchr(spec, '=');
		if (!eq)
			die("no =SHARE", argv[i]);
		*eq = '\0';
		char *at = strchr(eq + 1, '@');
		s->mult = at ? atof(at + 1) : 1;
		s->share = atof(eq + 1);
		if (!(s->share >= 0) || !(s->mult > 0))
			die("bad share", argv[i]);
		sum += s->share;
		for (char *f = strtok(spec, ";"); f; f = strtok(NULL, ";")) {
			if (s->depth == MAX_DEPTH)
				die("stack too deep", argv[i]);
			s->frames[s->depth++] = func_id(f);
		}
		if (s->depth == 0)
			die("empty stack", argv[i]);
	}
	if (!(sum > 0))
		die("the shares add up to nothing", NULL);

	if (!no_count)
		printf("type samples count\n");
	printf("type cpu nanoseconds\nperiod cpu nanoseconds %.0f\ncomment engine=synthetic\n", mean);
	for (int f = 0; f < nfuncs; f++)
		printf("function %d %s\nlocation %d 0 0 %d:0\n", f + 1, funcs[f], f + 1, f + 1);
	int unsampled = exact > 0 ? func_id("[unsampled:%20before%20the%20profile%20started]") : 0;
	if (unsampled)
		printf("function %d %s\nlocation %d 0 0 %d:0\n", unsampled, funcs[unsampled - 1],
		       unsampled, unsampled);
	for (long d = 0; d < n; d++) {
		double u = uniform() * sum;
		int k = 0;
		while (k + 1 < ns && u >= st[k].share) {
			u -= st[k].share;
			k++;
		}
		double w = mean * st[k].mult * (1 + jitter * (2 * uniform() - 1));
		if (per_draw) {
			if (no_count)
				printf("sample %.0f :", w);
			else
				printf("sample 1 %.0f :", w);
			for (int j = st[k].depth; j-- > 0;)
				printf(" %d", st[k].frames[j]);
			printf("\n");
		} else {
			st[k].count++;
			st[k].ns += w;
		}
	}
	for (int k = 0; k < ns && !per_draw; k++) {
		if (st[k].count == 0)
			continue;
		printf("sample %llu %.0f :", (unsigned long long)st[k].count, st[k].ns);
		for (int j = st[k].depth; j-- > 0;)
			printf(" %d", st[k].frames[j]);
		printf("\n");
	}
	if (unsampled)
		printf("sample %s%.0f : %d\n", no_count ? "" : "0 ", exact, unsampled);
	return 0;
}
