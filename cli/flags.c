/*
 * flags.c -- the table-driven command line of the CLI (flags.h).
 */
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "profile/options.h"

bool flags_int(const char *s, long min, long max, long *out)
{
	char *end;
	if (!s || !(*s == '-' || (*s >= '0' && *s <= '9')))
		return false;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool flags_ids(const char *s, long max, long **out, size_t *n)
{
	size_t cap = 1;
	for (const char *c = s; *c; c++)
		cap += *c == ',';
	long *v = malloc(cap * sizeof *v);
	char *copy = strdup(s);
	size_t k = 0;
	bool ok = v && copy && *s;
	for (char *save = NULL, *tok = ok ? strtok_r(copy, ",", &save) : NULL; tok && ok;
	     tok = strtok_r(NULL, ",", &save))
		ok = flags_int(tok, 1, max, &v[k++]);
	ok = ok && k == cap; /* no empty item: "1,,2", "1," */
	free(copy);
	if (!ok) {
		free(v);
		return false;
	}
	*out = v;
	*n = k;
	return true;
}

bool flags_seconds(const char *s, double *out)
{
	static const struct {
		const char *unit;
		double s;
	} units[] = { { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "m", 60 }, { "h", 3600 } };
	/* Digits with at most one point, then a unit: no sign, exponent,
	 * blank or hexadecimal that strtod() would take. */
	size_t digits = s ? strspn(s, "0123456789.") : 0;
	if (digits == 0 || strchr(s, '.') != strrchr(s, '.') || (digits == 1 && s[0] == '.') || digits > 30)
		return false;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(s + digits, units[i].unit)) {
			*out = strtod(s, NULL) * units[i].s;
			return true;
		}
	return false;
}

bool flags_duration_ms(const char *s, long min, long max, long *out)
{
	double x;
	if (!flags_seconds(s, &x))
		return false;
	double ms = x * 1000 + 0.5;
	if (!(ms >= (double)min && ms < (double)max + 1))
		return false;
	*out = (long)ms;
	return true;
}

const char *flags_name(const struct flag *f, char *buf, size_t len)
{
	if (f->letter)
		snprintf(buf, len, "-%c/%s", f->letter, f->name);
	else
		snprintf(buf, len, "%s", f->name);
	return buf;
}

/* What a good value of f is, in words, into buf. */
static const char *want(const struct flag *f, char *buf, size_t len)
{
	char list[256];
	if (f->kind == FLAG_CHOICE) {
		size_t used = 0;
		list[0] = '\0';
		for (size_t i = 0; f->choices[i]; i++) {
			int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", f->choices[i]);
			if (n < 0 || (size_t)n >= sizeof list - used)
				break;
			used += (size_t)n;
		}
		snprintf(buf, len, "one of %s", list);
	} else if (f->kind == FLAG_SETTING) {
		snprintf(buf, len, "%s", cp_options[f->setting].what);
	} else {
		snprintf(buf, len, "%s", f->want ? f->want : "a value");
	}
	return buf;
}

void flags_refuse(const struct flags *fs, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "cpuprof %s: ", fs->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nusage:\n", stderr);
	flags_usage(fs, stderr);
}

/* Checks the value s of f into *v.  0, or -1 after saying why not. */
static int take(const struct flags *fs, const struct flag *f, const char *s, struct flag_value *v)
{
	char name[64], buf[256], why[256];
	flags_name(f, name, sizeof name);
	bool ok = true;
	char *end;
	regex_t re;
	switch (f->kind) {
	case FLAG_BOOL:
		break;
	case FLAG_TEXT:
		ok = *s != '\0';
		break;
	case FLAG_INT:
		ok = flags_int(s, f->min, f->max, &v->n);
		break;
	case FLAG_REAL:
	case FLAG_SECONDS:
		if (f->kind == FLAG_REAL) {
			v->x = strtod(s, &end);
			ok = *s && !*end;
		} else {
			ok = flags_seconds(s, &v->x);
		}
		ok = ok && (f->lo_open ? v->x > f->lo : v->x >= f->lo) && v->x <= f->hi;
		break;
	case FLAG_CHOICE:
		for (v->n = 0; f->choices[v->n] && strcmp(s, f->choices[v->n]) != 0; v->n++)
			;
		if (!f->choices[v->n]) {
			flags_refuse(fs, "%s is %s", name, want(f, buf, sizeof buf));
			return -1;
		}
		s = f->choices[v->n];
		break;
	case FLAG_SETTING:
		if (cp_option_parse(&cp_options[f->setting], s, &v->n, why, sizeof why) < 0) {
			flags_refuse(fs, "%s %s: %s", name, s, why);
			return -1;
		}
		if (cp_options[f->setting].kind == CP_OPT_CHOICE)
			s = cp_options[f->setting].choices[v->n];
		break;
	case FLAG_DURATION:
		ok = flags_duration_ms(s, f->min, f->max, &v->n);
		break;
	case FLAG_REGEX:
		ok = regcomp(&re, s, REG_EXTENDED | REG_NOSUB) == 0;
		if (ok)
			regfree(&re);
		break;
	}
	if (!ok) {
		flags_refuse(fs, "%s needs %s", name, want(f, buf, sizeof buf));
		return -1;
	}
	v->set = true;
	v->text = s;
	if (f->many)
		v->all[v->nall++] = s;
	return 0;
}

/* The flag argv[*i] names, and its value (moving *i past a value of its
 * own): *val is NULL for a flag without a value, and for a missing one
 * (*missing then set).  NULL if it names none. */
static const struct flag *match(const struct flags *fs, int argc, char **argv, int *i, const char **val,
				bool *missing)
{
	const char *a = argv[*i];
	*val = NULL;
	*missing = false;
	for (size_t k = 0; k < fs->n; k++) {
		const struct flag *f = &fs->flag[k];
		size_t len = strlen(f->name);
		bool whole = strcmp(a, f->name) == 0 || (f->letter && a[1] == f->letter && a[2] == '\0');
		if (f->kind == FLAG_BOOL) {
			if (whole)
				return f;
			continue;
		}
		if (whole) {
			if (*i + 1 < argc && strcmp(argv[*i + 1], "--") != 0)
				*val = argv[++*i];
			else
				*missing = true;
			return f;
		}
		if (strncmp(a, f->name, len) == 0 && a[len] == '=') {
			*val = a + len + 1;
			return f;
		}
		if (f->letter && a[1] == f->letter) {
			*val = a + 2;
			return f;
		}
	}
	return NULL;
}

int flags_parse(const struct flags *fs, int argc, char **argv, struct flags_result *r)
{
	memset(r, 0, sizeof *r);
	r->v = calloc(fs->n, sizeof *r->v);
	r->operands = calloc((size_t)argc + 1, sizeof *r->operands);
	bool oom = !r->v || !r->operands;
	for (size_t k = 0; k < fs->n && !oom; k++) {
		const struct flag *f = &fs->flag[k];
		r->v[k].n = f->kind == FLAG_SETTING ? cp_options[f->setting].def : (long)f->def;
		r->v[k].x = fs->flag[k].def;
	}
	for (size_t k = 0; k < fs->n && !oom; k++)
		if (fs->flag[k].many && !(r->v[k].all = calloc((size_t)argc, sizeof *r->v[k].all)))
			oom = true;
	if (oom) {
		fprintf(stderr, "cpuprof %s: out of memory\n", fs->cmd);
		return -1;
	}
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;
		bool missing;
		if (!opts || a[0] != '-' || a[1] == '\0') {
			if (fs->command_follows)
				opts = false;
			r->operands[r->noperands++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			opts = false;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs("usage:\n", stdout);
			flags_usage(fs, stdout);
			return FLAGS_HELP;
		}
		const struct flag *f = match(fs, argc, argv, &i, &val, &missing);
		if (!f) {
			flags_refuse(fs, "unknown option '%s'", a);
			return -1;
		}
		if (missing && f->kind != FLAG_CHOICE) { /* a choice's message lists them */
			char name[64], buf[256];
			flags_refuse(fs, "%s needs a value: %s", flags_name(f, name, sizeof name),
				     want(f, buf, sizeof buf));
			return -1;
		}
		if (take(fs, f, val ? val : "", &r->v[f - fs->flag]) < 0)
			return -1;
	}
	return 0;
}

void flags_free(const struct flags *fs, struct flags_result *r)
{
	for (size_t k = 0; r->v && k < fs->n; k++)
		free(r->v[k].all);
	free(r->v);
	free(r->operands);
	memset(r, 0, sizeof *r);
}

/* Writes text to f in lines of at most 79 columns, the first going on
 * from column col (where the cursor is), the others indented to indent. */
static void wrap(FILE *f, const char *text, size_t col, size_t indent)
{
	bool fresh = true; /* nothing written on this line yet */
	for (const char *p = text; *p;) {
		size_t word = strcspn(p, " ");
		if (!fresh && col + 1 + word > 79) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
			fresh = true;
		}
		if (!fresh) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, word, f);
		col += word;
		fresh = false;
		p += word;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

/* What the library's table says of setting o, for the usage. */
static void setting_help(const struct cp_option *o, char *buf, size_t len)
{
	char list[128];
	if (o->kind == CP_OPT_CHOICE)
		snprintf(buf, len, "%s: %s (default %s)", o->what, cp_option_choices(o, list, sizeof list),
			 o->choices[0]);
	else if (o->kind == CP_OPT_SIGNO)
		snprintf(buf, len, "%s: SIGPROF (%d) or a real-time signal (%d to %d)", o->what, SIGPROF, SIGRTMIN,
			 SIGRTMAX);
	else if (o->cap)
		snprintf(buf, len, "%s: %ld to %ld asked (default %ld), %ld at most taken (the profile says so)",
			 o->what, o->min, o->max, o->def, o->cap);
	else
		snprintf(buf, len, "%s: %ld to %ld (default %ld)", o->what, o->min, o->max, o->def);
}

#define HELP_COLUMN 24

void flags_usage(const struct flags *fs, FILE *f)
{
	fputs(fs->synopsis, f);
	for (size_t k = 0; k < fs->n; k++) {
		const struct flag *fl = &fs->flag[k];
		char head[128], text[1024], lib[512] = "", meta[64] = "";
		if (fl->meta)
			snprintf(meta, sizeof meta, " %s", fl->meta);
		for (size_t i = 0; !fl->meta && fl->kind == FLAG_CHOICE && fl->choices[i]; i++) {
			size_t used = strlen(meta);
			snprintf(meta + used, sizeof meta - used, "%c%s", i ? '|' : ' ', fl->choices[i]);
		}
		int n = fl->letter ? snprintf(head, sizeof head, "      -%c, %s%s", fl->letter, fl->name, meta)
				   : snprintf(head, sizeof head, "      %s%s", fl->name, meta);
		/* What the table says of the value (a setting's rule, a
		 * default), then the help. */
		if (fl->kind == FLAG_SETTING)
			setting_help(&cp_options[fl->setting], lib, sizeof lib);
		if (fl->kind == FLAG_SETTING || !fl->help)
			snprintf(text, sizeof text, "%s%s%s", lib, lib[0] && fl->help ? "; " : "", fl->help ? fl->help : "");
		else
			snprintf(text, sizeof text, "%s", fl->help);
		if ((fl->kind == FLAG_INT || fl->kind == FLAG_REAL) && !fl->no_def) {
			size_t used = strlen(text);
			snprintf(text + used, sizeof text - used, "%s(default %g)", used ? " " : "", fl->def);
		}
		fputs(head, f);
		if (!text[0]) {
			fputc('\n', f);
			continue;
		}
		if (n + 2 > HELP_COLUMN)
			fprintf(f, "\n%*s", HELP_COLUMN, "");
		else
			fprintf(f, "%*s", HELP_COLUMN - n, "");
		n = HELP_COLUMN;
		wrap(f, text, (size_t)n, HELP_COLUMN);
	}
	fprintf(f, "%-*s%s\n", HELP_COLUMN, "      -h, --help", "this text");
	if (fs->notes)
		fputs(fs->notes, f);
}
