/*
 * unit_flags.c -- the CLI's flag parser (cli/flags.c) on a table with a
 * flag of every kind: the four forms of a value ("-o V", "-oV", "--output
 * V", "--output=V"), a missing value ("-o" last, "-o -- CMD"), "--",
 * operands among flags or ending them (record's command), each kind's
 * rule at its bounds, a setting checked and made canonical by the
 * library's table (src/profile/options.c), defaults, a flag given more
 * than once, unknown options, --help; and the usage written from the
 * table, with the sampling cap the table holds.
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "flags.h"
#include "profile/options.h"

static const char *const colours[] = { "red", "green", NULL };

enum { T_OUT, T_N, T_X, T_COLOUR, T_HZ, T_ENGINE, T_SIGNAL, T_RE, T_BOOL, T_MANY, T_EVERY, T_NFLAGS };

static const struct flag table[T_NFLAGS] = {
	[T_OUT] = { "--output", 'o', FLAG_TEXT, "FILE", .want = "a file name", .help = "the file" },
	[T_N] = { "--n", 0, FLAG_INT, "N", .min = -2, .max = 9, .def = 4, .want = "a small number" },
	[T_X] = { "--x", 0, FLAG_REAL, "X", .lo = 0, .lo_open = true, .hi = 0.5, .def = 0.25, .want = "a rate" },
	[T_COLOUR] = { "--colour", 0, FLAG_CHOICE, .choices = colours },
	[T_HZ] = { "--hz", 'F', FLAG_SETTING, "HZ", .setting = CP_OPT_HZ },
	[T_ENGINE] = { "--engine", 0, FLAG_SETTING, "NAME", .setting = CP_OPT_ENGINE },
	[T_SIGNAL] = { "--signal", 0, FLAG_SETTING, "N", .setting = CP_OPT_SIGNAL },
	[T_RE] = { "--re", 0, FLAG_REGEX, "RE", .want = "a regular expression" },
	[T_BOOL] = { "--yes", 'y', FLAG_BOOL, .help = "yes" },
	[T_MANY] = { "--base", 0, FLAG_TEXT, "F", .many = true, .want = "a file name" },
	[T_EVERY] = { "--every", 0, FLAG_DURATION, "DURATION", .min = 100, .max = 7200000, .want = "a duration" },
};

static struct flags cmd = { .cmd = "unit", .flag = table, .n = T_NFLAGS, .synopsis = "  unit [OPTIONS]\n" };

/* Parses the words of `line` (split at spaces; "''" is an empty word). */
static int parse(const char *line, struct flags_result *r)
{
	static char buf[512];
	static char *argv[64];
	int argc = 0;
	snprintf(buf, sizeof buf, "unit %s", line);
	for (char *save, *w = strtok_r(buf, " ", &save); w && argc < 63; w = strtok_r(NULL, " ", &save))
		argv[argc++] = strcmp(w, "''") == 0 ? w + 2 : w;
	argv[argc] = NULL;
	return flags_parse(&cmd, argc, argv, r);
}

/* line must parse; flag k's text is then `text`. */
static void text_is(const char *line, int k, const char *text)
{
	struct flags_result r;
	CHECK(parse(line, &r) == 0, "'%s' refused", line);
	CHECK(r.v[k].set && strcmp(r.v[k].text, text) == 0, "'%s': '%s', want '%s'", line,
	      r.v[k].set ? r.v[k].text : "(unset)", text);
	flags_free(&cmd, &r);
}

static void refused(const char *line)
{
	struct flags_result r;
	CHECK(parse(line, &r) == -1, "'%s' taken", line);
	flags_free(&cmd, &r);
}

static void values(void)
{
	text_is("-o f.pb.gz", T_OUT, "f.pb.gz");
	text_is("-of.pb.gz", T_OUT, "f.pb.gz");
	text_is("--output f.pb.gz", T_OUT, "f.pb.gz");
	text_is("--output=f.pb.gz", T_OUT, "f.pb.gz");
	text_is("-o a -o b", T_OUT, "b"); /* the last one */
	refused("-o");
	refused("-o -- x"); /* a missing value, not a file named "--" */
	refused("-o ''");
	refused("--output=");
	refused("--outputx");

	text_is("--n -2", T_N, "-2");
	text_is("--n=9", T_N, "9");
	refused("--n 10");
	refused("--n -3");
	refused("--n 1.5");
	refused("--n ''");
	refused("--n 0x3");

	text_is("--x 0.5", T_X, "0.5");
	refused("--x 0"); /* above 0, not from it */
	refused("--x 0.51");
	refused("--x nan");
	refused("--x 1e");

	struct flags_result r;
	CHECK_EQ(parse("--colour green", &r), 0);
	CHECK_EQ(r.v[T_COLOUR].n, 1);
	flags_free(&cmd, &r);
	refused("--colour blue");
	refused("--colour"); /* missing */

	/* Settings: by the library's rule, the value as the library takes it. */
	CHECK_EQ(parse("-F0250 --engine timer --signal 27", &r), 0);
	CHECK_EQ(r.v[T_HZ].n, 250);
	CHECK_EQ(r.v[T_SIGNAL].n, 27);
	CHECK(strcmp(r.v[T_ENGINE].text, "timer") == 0 && r.v[T_ENGINE].n == 3, "engine %s %ld",
	      r.v[T_ENGINE].text, r.v[T_ENGINE].n);
	flags_free(&cmd, &r);
	text_is("--hz=100000", T_HZ, "100000");
	refused("--hz 100001");
	refused("--hz 0");
	refused("--engine fast");
	refused("--signal 15"); /* cp_signal_unusable's rule */
	refused("--signal 65");

	/* Durations: a number and its unit, a bare number seconds, in ms
	 * within the flag's bounds (100 ms to 2 h here). */
	static const struct {
		const char *s;
		long ms;
	} good[] = { { "10s", 10000 }, { "500ms", 500 }, { "2m", 120000 }, { "1h", 3600000 }, { "2h", 7200000 },
		     { "3", 3000 }, { "0.5", 500 }, { "1.25s", 1250 }, { "100ms", 100 }, { ".1", 100 },
		     { "0.0025m", 150 }, { "007s", 7000 } };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "--every %s", good[i].s);
		CHECK_EQ(parse(line, &r), 0);
		CHECK(r.v[T_EVERY].n == good[i].ms, "--every %s: %ld ms, want %ld", good[i].s, r.v[T_EVERY].n,
		      good[i].ms);
		flags_free(&cmd, &r);
	}
	static const char *const bad[] = { "0", "0s", "99ms", "2h1ms", "7201s", "-1s", "+1s", "1e3", "1e3ms", "10x",
					   "s", "ms", ".", "1..5s", "1.5.s", "10sec", "1d", "inf", "nan",
					   "0x10", "''", "10S", "99999999999999999999999h" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "--every %s", bad[i]);
		refused(line);
	}
	long ms = -1;
	CHECK(!flags_duration_ms(NULL, 0, 10, &ms) && ms == -1, "NULL taken, or *out changed");

	text_is("--re ^a(b|c)$", T_RE, "^a(b|c)$");
	refused("--re [");

	refused("--bogus");
	refused("-z");
	refused("--yes=1"); /* a flag without a value takes none */
}

static void defaults_and_operands(void)
{
	struct flags_result r;
	CHECK_EQ(parse("a --yes b --base B1 -- --n c --base B2", &r), 0);
	CHECK(!r.v[T_N].set && r.v[T_N].n == 4, "--n default %ld", r.v[T_N].n);
	CHECK(!r.v[T_X].set && r.v[T_X].x == 0.25, "--x default %g", r.v[T_X].x);
	CHECK(!r.v[T_HZ].set && r.v[T_HZ].n == cp_options[CP_OPT_HZ].def, "--hz default %ld", r.v[T_HZ].n);
	CHECK(r.v[T_BOOL].set, "--yes");
	/* Operands anywhere; after "--" everything is one. */
	CHECK_EQ(r.noperands, 6);
	const char *want[] = { "a", "b", "--n", "c", "--base", "B2" };
	for (size_t i = 0; i < 6 && i < r.noperands; i++)
		CHECK(strcmp(r.operands[i], want[i]) == 0, "operand %zu: %s", i, r.operands[i]);
	CHECK(r.operands[r.noperands] == NULL, "operands not NULL-terminated");
	CHECK(r.v[T_MANY].nall == 1 && strcmp(r.v[T_MANY].all[0], "B1") == 0, "--base");
	flags_free(&cmd, &r);

	CHECK_EQ(parse("--base B1 --base=B2", &r), 0);
	CHECK(r.v[T_MANY].nall == 2 && strcmp(r.v[T_MANY].all[1], "B2") == 0, "--base twice");
	flags_free(&cmd, &r);

	/* A command follows: the first operand ends the flags. */
	cmd.command_follows = true;
	CHECK_EQ(parse("-y cmd --n 5 -o", &r), 0);
	CHECK(r.noperands == 4 && strcmp(r.operands[0], "cmd") == 0 && strcmp(r.operands[1], "--n") == 0,
	      "command line: %zu operands", r.noperands);
	CHECK(!r.v[T_N].set && !r.v[T_OUT].set, "a flag of the command taken as ours");
	flags_free(&cmd, &r);
	CHECK_EQ(parse("-y -- -cmd", &r), 0);
	CHECK(r.noperands == 1 && strcmp(r.operands[0], "-cmd") == 0, "-- then a command");
	flags_free(&cmd, &r);
	cmd.command_follows = false;

	CHECK_EQ(parse("--n 3 --help --bogus", &r), FLAGS_HELP);
	flags_free(&cmd, &r);
}

static void usage(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	flags_usage(&cmd, f);
	fclose(f);
	for (char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1)
		CHECK(nl - p <= 79 && (nl == p || nl[-1] != ' '), "usage line over 79 columns or with a space at "
		      "its end: '%.*s'", (int)(nl - p), p);
	/* The words, each once apart. */
	size_t w = 0;
	for (size_t i = 0; text[i]; i++)
		if (!(text[i] == ' ' || text[i] == '\n') || (w && text[w - 1] != ' '))
			text[w++] = text[i] == '\n' ? ' ' : text[i];
	text[w] = '\0';
	for (size_t k = 0; k < T_NFLAGS; k++)
		CHECK(strstr(text, table[k].name), "usage lacks %s:\n%s", table[k].name, text);
	CHECK(strstr(text, "-o, --output FILE"), "usage: -o's line:\n%s", text);
	CHECK(strstr(text, "--colour red|green"), "usage: the choices:\n%s", text);
	CHECK(strstr(text, "(default 4)"), "usage: --n's default:\n%s", text);
	/* The library's table: its range, default and cap. */
	char cap[96];
	snprintf(cap, sizeof cap, "%ld at most taken", cp_options[CP_OPT_HZ].cap);
	CHECK(strstr(text, cap) && strstr(text, "1 to 100000"), "usage: the rate's rule:\n%s", text);
	CHECK(strstr(text, "auto, perf, hw, timer, itimer"), "usage: the engines:\n%s", text);
	free(text);
}

int main(void)
{
	values();
	defaults_and_operands();
	usage();
	CHECK_EQ(cp_options[CP_OPT_HZ].cap, 10000);
	CHECK_EQ(cp_option_taken(&cp_options[CP_OPT_HZ], 99999), 10000);
	CHECK_EQ(cp_option_taken(&cp_options[CP_OPT_HZ], 250), 250);
	CHECK_EQ(cp_option_taken(&cp_options[CP_OPT_DEPTH], 1024), 1024);
	printf("ok\n");
	return 0;
}
