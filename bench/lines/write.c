/*
 * write.c -- what source lines cost when a profile is written: loads a
 * shared library built with DWARF, makes NSTACKS distinct stacks of DEPTH
 * frames from NADDRS distinct addresses spread over all of its functions,
 * and writes them with cp_pprof_write, with lines (the default) or names only
 * (`names`).  Prints one line: the write's wall time, this process's peak
 * RSS before and after it (VmHWM), the peak RSS of the child that read the
 * DWARF (the writer forks it: its RSS counts the pages it shares with this
 * process), the file's size.  With `reader`, looks the NADDRS addresses up
 * in this process instead (cp_lines_open, cp_lines_lookup) and prints the
 * time and peak RSS that takes: what the child adds to its copy.
 * Usage: write LIB.so lines|names|reader [NSTACKS [DEPTH [NADDRS]]]
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/lines.h"
#include "profile/pprof_write.h"
#include "profile/stacktab.h"
#include "symbolize/symbols.h"

static long hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: write LIB.so lines|names [NSTACKS [DEPTH [NADDRS]]]\n");
		return 2;
	}
	size_t nstacks = argc > 3 ? strtoul(argv[3], NULL, 10) : 100000;
	size_t depth = argc > 4 ? strtoul(argv[4], NULL, 10) : 20;
	size_t naddrs = argc > 5 ? strtoul(argv[5], NULL, 10) : 50000;
	cp_pprof_lines = strcmp(argv[2], "names") != 0;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "write: %s\n", dlerror());
		return 1;
	}
	char *real = realpath(argv[1], NULL);
	struct cp_symbols *s = cp_symbols_load();
	const struct cp_object *o = NULL;
	for (size_t i = 0; s && i < s->nobjs && !o; i++) {
		char *r = realpath(s->objs[i].path, NULL);
		if (r && real && !strcmp(r, real))
			o = &s->objs[i];
		free(r);
	}
	const struct cp_symtab *st = o ? cp_symbols_object_symtab(s, o) : NULL;
	if (!st || st->n == 0) {
		fprintf(stderr, "write: no symbols for %s\n", argv[1]);
		return 1;
	}
	/* NADDRS addresses, each inside a function, over all functions. */
	uintptr_t *addrs = malloc(naddrs * sizeof *addrs);
	size_t textbytes = 0;
	for (size_t i = 0; i < st->n; i++)
		textbytes += st->syms[i].size;
	for (size_t i = 0; i < naddrs; i++) {
		const struct cp_sym *sym = &st->syms[next() % st->n];
		addrs[i] = o->bias + sym->start + (sym->size ? next() % sym->size : 0);
	}
	struct cp_stacktab tab;
	cp_stacktab_init(&tab);
	uintptr_t *pcs = malloc(depth * sizeof *pcs);
	while (tab.len < nstacks) {
		for (size_t k = 0; k < depth; k++)
			pcs[k] = addrs[next() % naddrs];
		if (cp_stacktab_add(&tab, pcs, (uint32_t)depth, 0, 1, 1000000) != 0)
			return 1;
	}
	size_t nfns = st->n;
	if (!strcmp(argv[2], "reader")) {
		char why[256], bid[sizeof o->build_id];
		struct cp_lines_dwarf *d;
		uintptr_t bias = o->bias;
		memcpy(bid, o->build_id, sizeof bid);
		size_t found = 0;
		long hwm0 = hwm_kib();
		double t0 = now_s();
		if (cp_lines_open(real, bid, &d, why, sizeof why) != 0) {
			fprintf(stderr, "write: %s\n", why);
			return 1;
		}
		for (size_t i = 0; i < naddrs; i++) {
			struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
			size_t n;
			uintptr_t start = 0;
			const char *nm = cp_symbols_name_for(s, addrs[i], &start);
			found += cp_lines_lookup(d, addrs[i] - bias, nm ? start - bias : 0, f, &n, NULL) ==
				 CP_LINES_OK;
		}
		double dt = now_s() - t0;
		long hwm1 = hwm_kib();
		cp_lines_close(d);
		printf("reader addrs=%zu found=%zu time_s=%.3f added_kib=%ld\n", naddrs, found, dt,
		       hwm1 - hwm0);
		return 0;
	}
	cp_symbols_free(s);

	char path[] = "/tmp/bench_lines.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	long hwm0 = hwm_kib();
	char err[256];
	double t0 = now_s();
	int rc = cp_pprof_write(path, &tab, &(struct cp_profile_meta){ .period_ns = 1000000 }, err,
			     sizeof err);
	double dt = now_s() - t0;
	long hwm1 = hwm_kib();
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	struct stat sb;
	if (rc != 0 || stat(path, &sb) != 0) {
		fprintf(stderr, "write: %s\n", err);
		return 1;
	}
	unlink(path);
	printf("%s stacks=%zu depth=%zu addrs=%zu functions=%zu text=%zu time_s=%.3f "
	       "hwm_before_kib=%ld hwm_after_kib=%ld child_peak_kib=%ld file_kib=%lld\n",
	       argv[2], tab.len, depth, naddrs, nfns, textbytes, dt, hwm0, hwm1,
	       cp_pprof_lines ? ru.ru_maxrss : 0L, (long long)(sb.st_size + 1023) / 1024);
	free(real);
	free(pcs);
	free(addrs);
	cp_stacktab_free(&tab);
	return 0;
}
