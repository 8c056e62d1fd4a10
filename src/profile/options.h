/*
 * options.h -- every setting of a profile, described once: its name, its
 * environment variable (LD_PRELOAD mode), its range or choices, its
 * default and the most that is acted on.  cpuprof_start() checks its
 * options with this table, preload.c reads the environment with it, the
 * CLI's flags (cli/flags.c) are checked and described by it and `record`
 * hands preloaded processes the values it took, so none can disagree.
 * Shared by the library and the CLI; not signal context.
 */
#ifndef CPUPROF_OPTIONS_H
#define CPUPROF_OPTIONS_H

#include <stddef.h>

enum cp_option_id { CP_OPT_HZ, CP_OPT_ENGINE, CP_OPT_SIGNAL, CP_OPT_DEPTH, CP_OPT_UNWIND, CP_OPT_OFF_CPU, CP_NOPTIONS };

enum cp_option_kind { CP_OPT_INT, CP_OPT_CHOICE, CP_OPT_SIGNO };

/* The engines' names (each engine's `name`, and the choices of --engine). */
#define CP_ENGINE_PERF "perf"
#define CP_ENGINE_HW "hw"
#define CP_ENGINE_TIMER "timer"
#define CP_ENGINE_ITIMER "itimer"

struct cp_option {
	const char *name;  /* "hz": the struct cpuprof_options field */
	const char *env;   /* "CPUPROF_HZ" */
	enum cp_option_kind kind;
	long min, max;     /* CP_OPT_INT; CP_OPT_SIGNO: 1..64 */
	long def;          /* CP_OPT_INT: the default (0 for none) */
	long cap;          /* CP_OPT_INT: the most acted on, a value above it taken as it, or 0 (max) */
	const char *const *choices; /* CP_OPT_CHOICE: NULL-terminated, the default first */
	const char *what;  /* what a value means, for messages: "the sampling rate (Hz)" */
};

extern const struct cp_option cp_options[CP_NOPTIONS];

/* Checks the number v for option o.  Returns 0, or -1 with a one-line
 * reason in why[len] ("must be an integer from 1 to 100000"). */
int cp_option_check_int(const struct cp_option *o, long v, char *why, size_t len);
/* Checks the text s for option o (a number for CP_OPT_INT and
 * CP_OPT_SIGNO, one of the choices for CP_OPT_CHOICE) and stores an
 * integer value in *out (the choice's index for CP_OPT_CHOICE).  Returns 0,
 * or -1 with a one-line reason in why[len]. */
int cp_option_parse(const struct cp_option *o, const char *s, long *out, char *why, size_t len);
/* The value acted on for v: v, or o's cap where v is above it. */
long cp_option_taken(const struct cp_option *o, long v);
/* The choices of o joined with ", " into buf ("auto, perf, hw, timer, itimer"). */
const char *cp_option_choices(const struct cp_option *o, char *buf, size_t len);

/* NULL if signo may be a sampling signal (SIGPROF or a real-time signal:
 * their default action is to terminate and nothing else sends them on its
 * own), else why not, in a few words. */
const char *cp_signal_unusable(int signo);

#endif
