/*
 * flags.h -- the command lines of `record`, `report` and `diff`, each
 * described once, in a table of its flags: the name, the short name, the
 * value it takes and the rule the value is checked by (where the value is
 * a setting of the library's, the library's own rule: src/profile/
 * options.h), and its help.  flags_parse() reads argv with the table and
 * flags_usage() writes the command's --help from it, so that what is
 * accepted and what is said cannot disagree.
 *
 * One syntax for every command: "-o V", "-oV", "--name V" and
 * "--name=V"; a value may not be "--" ("-o -- CMD" is a missing value);
 * "--" ends the options; -h and --help print the usage.
 */
#ifndef CPUPROF_CLI_FLAGS_H
#define CPUPROF_CLI_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum flag_kind {
	FLAG_BOOL,    /* no value: --lines */
	FLAG_TEXT,    /* a value that is not empty: -o FILE */
	FLAG_INT,     /* a whole decimal integer from min to max */
	FLAG_REAL,    /* a number from lo (above lo, with lo_open) to hi */
	FLAG_SECONDS, /* a time, as FLAG_REAL in seconds: 1.5, 1.5s, 250ms, 20us, 2m, 1h */
	FLAG_CHOICE,  /* one of choices: the value is its index */
	FLAG_SETTING, /* a setting of the library's table (cp_options[setting]), by its rule */
	FLAG_REGEX,   /* a POSIX extended regular expression */
	FLAG_DURATION, /* a length of time from min to max ms: a number and its unit (flags_duration_ms) */
};

struct flag {
	const char *name;  /* "--top", or "-o" where there is no long name */
	char letter;       /* 'o' for -o beside the name, or 0 */
	enum flag_kind kind;
	const char *meta;  /* the value in the usage: "N", "FILE" */
	long min, max;     /* FLAG_INT; FLAG_DURATION, in ms */
	double lo, hi;     /* FLAG_REAL */
	bool lo_open;      /* FLAG_REAL: above lo, not from it */
	double def;        /* FLAG_INT, FLAG_REAL: the value when not given, said in the usage */
	bool no_def;       /* ... but there is none to say */
	const char *const *choices; /* FLAG_CHOICE: NULL-terminated */
	int setting;       /* FLAG_SETTING: an enum cp_option_id */
	bool many;         /* may be given more than once, each kept (--base) */
	const char *want;  /* what a good value is, for messages: "a number of rows (0 for all)"; a
			      FLAG_CHOICE's and FLAG_SETTING's are said from their choices and the
			      library's table */
	const char *help;  /* the usage's line; a setting's starts with what the library's table says */
};

/* A command's table and its usage's text around the options. */
struct flags {
	const char *cmd;        /* "report", for messages */
	const struct flag *flag;
	size_t n;
	bool command_follows;   /* the first operand ends the options: it and what follows are a
				   command line (record) */
	const char *synopsis;   /* the usage's first lines */
	const char *notes;      /* the usage's closing lines, or NULL */
};

/* The value of a flag: whether it was given and, for each kind, what. */
struct flag_value {
	bool set;
	const char *text; /* as given; FLAG_CHOICE and a setting's choice: the choice's own name */
	long n;           /* FLAG_INT (its default if not given), FLAG_CHOICE (the index),
			     FLAG_SETTING, FLAG_DURATION (in ms) */
	double x;         /* FLAG_REAL (its default if not given) */
	const char **all; /* `many`: every value, in order */
	size_t nall;
};

/* What flags_parse() read. */
struct flags_result {
	struct flag_value *v; /* v[i]: fs->flag[i]'s */
	char **operands;      /* NULL-terminated: the files, or the command and its arguments */
	size_t noperands;
};

#define FLAGS_HELP 1

/* Reads argv (argv[0] is the command's name) by fs into *r (free it with
 * flags_free(), whatever the result).  Returns 0; FLAGS_HELP after
 * writing the usage to stdout for -h or --help; or -1 after a line saying
 * what is wrong and the usage on stderr: an unknown option, a missing or
 * bad value. */
int flags_parse(const struct flags *fs, int argc, char **argv, struct flags_result *r);

void flags_free(const struct flags *fs, struct flags_result *r);

/* Writes the command's usage to f: the synopsis, a line per flag, the
 * notes. */
void flags_usage(const struct flags *fs, FILE *f);

/* The name of flag f as messages say it: "-o/--output", "--top". */
const char *flags_name(const struct flag *f, char *buf, size_t len);

/* Says "cpuprof CMD: " and the message on stderr, then the usage; for
 * what a command finds wrong after parsing (options that do not go
 * together). */
void flags_refuse(const struct flags *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses the whole of s as a time (FLAG_SECONDS, FLAG_DURATION: digits
 * with at most one point, then s, ms, us, m, h or nothing for seconds)
 * into *out, in seconds; false for anything else. */
bool flags_seconds(const char *s, double *out);
/* Parses the whole of s as a decimal integer in [min, max] into *out;
 * false (and *out untouched) for anything else. */
bool flags_int(const char *s, long min, long max, long *out);

/* Parses the whole of s as a length of time (flags_seconds: "10",
 * "10s", "500ms", "2m", "1h") into *out, in ms, within [min, max], to the
 * nearest ms.  false (and *out untouched) for anything else. */
bool flags_duration_ms(const char *s, long min, long max, long *out);

/* Parses the whole of s as a list of ids, each an integer in [1, max]
 * separated by single commas ("1234" or "1234,1240"; not "", "1,", "1,,2"),
 * into *out (malloc'd, *n of them); false (and nothing allocated) for
 * anything else.  record's -p and the selections' --pid and --tid. */
bool flags_ids(const char *s, long max, long **out, size_t *n);

#endif
