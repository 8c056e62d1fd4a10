/*
 * tool_lines.c -- prints the inline chains lines.c finds in an object, for
 * t_lines.sh to compare with addr2line.  Usage: tool_lines OBJECT < ADDRS,
 * one link-time address (hex) a line; prints "0xADDR CHAIN" for each, the
 * chain innermost first as name@file:line joined by "|", where a level
 * without a function DIE takes the ELF symbol's name.  Addresses without
 * lines print the symbol alone ("name@:0"), or "@:0".  Reads in this
 * process (cp_lines_open), not through the child of cp_lines_resolve.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/lines.h"
#include "symbolize/symbols.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: tool_lines OBJECT < ADDRS\n");
		return 2;
	}
	struct cp_symtab syms;
	char bid[2 * SYMBOLS_BUILD_ID_MAX + 1];
	if (cp_symbols_read_file(argv[1], &syms, bid) != 0) {
		fprintf(stderr, "tool_lines: cannot read the symbols of %s\n", argv[1]);
		return 1;
	}
	struct cp_lines_dwarf *d;
	char why[512];
	if (cp_lines_open(argv[1], bid, &d, why, sizeof why) != 0) {
		fprintf(stderr, "tool_lines: %s\n", why);
		return 1;
	}
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		unsigned long long addr = strtoull(line, NULL, 16);
		const struct cp_sym *s = cp_symbols_symtab_lookup(&syms, (uintptr_t)addr);
		struct cp_lines_frame f[CP_LINES_MAX_DEPTH];
		size_t n = 0;
		enum cp_lines_status st = cp_lines_lookup(d, addr, s ? s->start : 0, f, &n);
		printf("0x%llx ", addr);
		if (st != CP_LINES_OK || n == 0)
			printf("%s@:0", s ? s->name : "");
		for (size_t k = 0; k < n; k++)
			printf("%s%s@%s:%u", k ? "|" : "", f[k].name ? f[k].name : s ? s->name : "",
			       f[k].file[0] ? f[k].file : "", f[k].file[0] ? f[k].line : 0);
		putchar('\n');
	}
	cp_lines_close(d);
	cp_symbols_symtab_free(&syms);
	return 0;
}
