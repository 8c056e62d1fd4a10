/*
 * tool_lines.c -- prints the inline chains lines.c finds in an object, for
 * t_lines.sh to compare with addr2line.  Usage: tool_lines [--resolve]
 * OBJECT < ADDRS, one link-time address (hex) a line; prints "0xADDR
 * CHAIN" for each, the chain innermost first as name@file:line joined by
 * "|", where a level without a function DIE takes the ELF symbol's name.
 * Addresses without lines print the symbol alone ("name@:0"), or "@:0".
 * Reads in this process (cp_lines_open), not through the child of
 * cp_lines_resolve; with --resolve, through cp_lines_resolve, all the
 * addresses in one batch: the lines cache ($XDG_CACHE_HOME) answers those
 * inside the spans it keeps, the child the others (one inside the span of
 * the one before it without libdw), as when a profile is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "symbolize/lines.h"
#include "symbolize/symbols.h"

static void print(unsigned long long addr, const struct cp_sym *s, const struct cp_lines_frame *f, size_t n)
{
	printf("0x%llx ", addr);
	if (n == 0)
		printf("%s@:0", s ? s->name : "");
	for (size_t k = 0; k < n; k++)
		printf("%s%s@%s:%u", k ? "|" : "", f[k].name ? f[k].name : s ? s->name : "",
		       f[k].file[0] ? f[k].file : "", f[k].file[0] ? f[k].line : 0);
	putchar('\n');
}

/* --resolve: every address of stdin in one cp_lines_resolve. */
static int resolve(const char *path, const struct cp_symtab *syms, const char *bid)
{
	struct cp_lines_query *q = NULL;
	size_t n = 0, cap = 0;
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		uint64_t addr = strtoull(line, NULL, 16);
		const struct cp_sym *s = cp_symbols_symtab_lookup(syms, (uintptr_t)addr);
		if (cp_array_grow((void **)&q, &cap, n + 1, sizeof *q, 1024))
			return 1;
		q[n++] = (struct cp_lines_query){ 0, addr, s ? s->start : 0 };
	}
	struct cp_lines_object o = { path, bid, NULL };
	struct cp_lines_result r;
	char global[256];
	if (cp_lines_resolve(&o, 1, q, n, 60000, &r, global, sizeof global) != 0 || global[0]) {
		fprintf(stderr, "tool_lines: %s\n", global[0] ? global : "out of memory");
		return 1;
	}
	if (r.why[0])
		fprintf(stderr, "tool_lines: %s\n", r.why[0]);
	for (size_t i = 0; i < n; i++)
		print(q[i].addr, cp_symbols_symtab_lookup(syms, (uintptr_t)q[i].addr), r.chains[i].frames,
		      r.chains[i].n);
	cp_lines_result_free(&r);
	free(q);
	return 0;
}

int main(int argc, char **argv)
{
	int batch = argc == 3 && !strcmp(argv[1], "--resolve");
	if (argc != 2 && !batch) {
		fprintf(stderr, "usage: tool_lines [--resolve] OBJECT < ADDRS\n");
		return 2;
	}
	const char *path = argv[argc - 1];
	struct cp_symtab syms;
	char bid[2 * SYMBOLS_BUILD_ID_MAX + 1];
	if (cp_symbols_read_file(path, &syms, bid) != 0) {
		fprintf(stderr, "tool_lines: cannot read the symbols of %s\n", path);
		return 1;
	}
	if (batch) {
		int rc = resolve(path, &syms, bid);
		cp_symbols_symtab_free(&syms);
		return rc;
	}
	struct cp_lines_dwarf *d;
	char why[512];
	if (cp_lines_open(path, bid, &d, why, sizeof why) != 0) {
		fprintf(stderr, "tool_lines: %s\n", why);
		return 1;
	}
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		unsigned long long addr = strtoull(line, NULL, 16);
		const struct cp_sym *s = cp_symbols_symtab_lookup(&syms, (uintptr_t)addr);
		struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
		size_t n = 0;
		enum cp_lines_status st = cp_lines_lookup(d, addr, s ? s->start : 0, f, &n, NULL);
		print(addr, s, f, st == CP_LINES_OK ? n : 0);
	}
	cp_lines_close(d);
	cp_symbols_symtab_free(&syms);
	return 0;
}
