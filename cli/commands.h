/*
 * commands.h -- the subcommands of the cpuprof CLI and their usage texts.
 * main.c dispatches on argv[1] to one of the cmd_* functions; each returns
 * the process exit status.
 */
#ifndef CPUPROF_CLI_COMMANDS_H
#define CPUPROF_CLI_COMMANDS_H

#include <stdio.h>

#define CPUPROF_CLI_VERSION "0.1.0"

/* Exit status for bad usage, unreadable input, unusable options and (report)
 * output that cannot be written. */
#define EXIT_USAGE 2

/* The subcommand being run ("record", "top", ...), set by main.c before
 * it dispatches: what record's messages name, since top runs record's
 * code. */
extern const char *cli_cmd;

/* `cpuprof record [options] -- CMD [ARGS...]`; argv[0] is "record".
 * Returns CMD's exit status (128+N if a signal killed it), 126/127 if CMD
 * could not be run, EXIT_USAGE for bad options. */
int cmd_record(int argc, char **argv);

/* `cpuprof report [OPTIONS] FILE...`; argv[0] is "report".  Returns 0,
 * or EXIT_USAGE for bad usage, a missing, unreadable, corrupt or refused
 * FILE, profiles that cannot be merged, or output that cannot be
 * written. */
int cmd_report(int argc, char **argv);

/* `cpuprof diff [OPTIONS] BASE NEW...`; argv[0] is "diff".  Returns 0
 * when no function's share changed beyond the noise, 1 when one did, and
 * EXIT_USAGE for bad usage, a missing, unreadable, corrupt or refused
 * file, profiles that cannot be compared, or output that cannot be
 * written. */
int cmd_diff(int argc, char **argv);

/* `cpuprof symbolize [OPTIONS] IN -o OUT`; argv[0] is "symbolize".
 * Returns 0 once OUT is written (also when nothing could be named: it
 * says so), EXIT_USAGE for bad usage, an unreadable or corrupt IN, or OUT
 * not written. */
int cmd_symbolize(int argc, char **argv);

/* `cpuprof top [OPTIONS] -- CMD [ARGS...]` or `cpuprof top -p PID...`;
 * argv[0] is "top".  Returns what record would: CMD's exit status (128+N
 * if a signal killed it), 126/127 if CMD could not be run, 0 attached,
 * EXIT_USAGE for bad options or processes that cannot be attached to. */
int cmd_top(int argc, char **argv);

/* The usage lines of each subcommand, written to f. */
void record_usage(FILE *f);
void top_usage(FILE *f);
void report_usage(FILE *f);
void diff_usage(FILE *f);
void symbolize_usage(FILE *f);

#endif
