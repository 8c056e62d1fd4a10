/*
 * main.c -- entry point of the cpuprof command: `cpuprof record` runs a
 * program with libcpuprof preloaded, `cpuprof top` shows where it spends
 * its CPU while it runs, `cpuprof report` shows pprof profiles
 * (top functions, call tree, folded stacks, an HTML flame graph), `cpuprof
 * diff` says which functions' shares changed between two profiles beyond
 * the noise, `cpuprof symbolize` names what a profile's recording machine
 * could not.  This file only dispatches and prints the top-level usage and
 * version.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

/* Writes the top-level usage text to f. */
static void usage(FILE *f)
{
	fputs("usage: cpuprof COMMAND [OPTIONS...]\n"
	      "\n"
	      "Commands:\n",
	      f);
	record_usage(f);
	top_usage(f);
	report_usage(f);
	diff_usage(f);
	symbolize_usage(f);
	fputs("\n"
	      "  cpuprof --help | --version\n"
	      "\n"
	      "Profiles are pprof files: view them with `cpuprof report FILE`\n"
	      "or `go tool pprof`, compare two with `cpuprof diff BASE NEW`.\n",
	      f);
}

const char *cli_cmd = "record";

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	cli_cmd = cmd;
	if (strcmp(cmd, "record") == 0)
		return cmd_record(argc - 1, argv + 1);
	if (strcmp(cmd, "top") == 0)
		return cmd_top(argc - 1, argv + 1);
	if (strcmp(cmd, "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (strcmp(cmd, "diff") == 0)
		return cmd_diff(argc - 1, argv + 1);
	if (strcmp(cmd, "symbolize") == 0)
		return cmd_symbolize(argc - 1, argv + 1);
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
	    strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("cpuprof %s\n", CPUPROF_CLI_VERSION);
		return 0;
	}
	fprintf(stderr, "cpuprof: unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
