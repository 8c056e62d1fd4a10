/*
 * tool_mkprof.c -- writes a pprof profile described by a small text
 * language, for the tests of `cpuprof report`: profiles with source lines,
 * inlined frames, labels, hostile names and hostile shapes that the
 * library's writer never makes.  A protobuf encoder of its own (varints
 * and length-delimited fields, as in Go's runtime/pprof/protobuf.go), so
 * that the tests do not trust the reader they test.
 *
 * Usage: tool_mkprof [-z] OUT < DESCRIPTION      (-z: gzip OUT)
 *
 * One statement a line; '#' starts a comment line.  Words are separated
 * by blanks; in a word, %XX is the byte 0xXX (so a name may hold blanks,
 * '<', or invalid UTF-8), and a word ending in *N stands for N copies of
 * itself.  Strings go to the string table in order of first use.
 *   type TYPE UNIT                  a sample type (in order)
 *   period TYPE UNIT N              period_type and period
 *   duration NS | time NS           duration_nanos, time_nanos
 *   timeunit NS                     cpuprof's unit of sample times (field 1001)
 *   comment TEXT                    a comment (one word: use %20)
 *   mapping ID FILE [START LIMIT OFFSET]   a mapping (memory 0x1000-0x100000)
 *   function ID NAME [FILE [START_LINE [SYSTEM_NAME]]]
 *   location ID MAPPING ADDRESS [FUNC:LINE...]   lines, innermost first
 *   sample V... [: LOC...] [| KEY=STR... KEY#NUM...] [@ T[/W]...]
 *                                   locations leaf first; times (cpuprof's
 *                                   field 1001, profile/times.h) in units
 *                                   since the start, in order, each with
 *                                   its weight in us if irregular (/W);
 *                                   after "@+" instead, each time DT units
 *                                   after the one before
 *   timeunit NS                     the unit of the samples' times
 *   repeat N STATEMENT              the statement N times
 *   raw HEX                         bytes appended to the Profile message
 *   empty-samples N                 N empty Sample messages (fast)
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A growable byte buffer. */
struct buf {
	unsigned char *p;
	size_t n, cap;
};

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "tool_mkprof: %s%s%s\n", msg, arg ? ": " : "",
		arg ? arg : "");
	exit(2);
}

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		if (!(b->p = realloc(b->p, b->cap)))
			die("out of memory", NULL);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
	unsigned char c[10];
	int n = 0;
	do {
		c[n] = v & 0x7f;
		v >>= 7;
		if (v)
			c[n] |= 0x80;
		n++;
	} while (v);
	put(b, c, (size_t)n);
}

/* Field `num` as a varint (wire type 0). */
static void field_int(struct buf *b, unsigned num, uint64_t v)
{
	varint(b, (uint64_t)num << 3);
	varint(b, v);
}

/* Field `num` as length-delimited bytes (wire type 2). */
static void field_bytes(struct buf *b, unsigned num, const void *d, size_t n)
{
	varint(b, (uint64_t)num << 3 | 2);
	varint(b, n);
	put(b, d, n);
}

/* Field `num` holding the message in m, which is then emptied. */
static void field_msg(struct buf *b, unsigned num, struct buf *m)
{
	field_bytes(b, num, m->p, m->n);
	m->n = 0;
}

/* ---- the string table ---- */

static struct {
	char **s;
	size_t *len;
	size_t n, cap;
} strs;

/* The index of string s[len], added on first use. */
static uint64_t str_index(const char *s, size_t len)
{
	for (size_t i = 0; i < strs.n; i++)
		if (strs.len[i] == len && memcmp(strs.s[i], s, len) == 0)
			return i;
	if (strs.n == strs.cap) {
		strs.cap = strs.cap ? strs.cap * 2 : 64;
		strs.s = realloc(strs.s, strs.cap * sizeof *strs.s);
		strs.len = realloc(strs.len, strs.cap * sizeof *strs.len);
		if (!strs.s || !strs.len)
			die("out of memory", NULL);
	}
	strs.s[strs.n] = malloc(len + 1);
	memcpy(strs.s[strs.n], s, len);
	strs.len[strs.n] = len;
	return strs.n++;
}

/* ---- words ---- */

/* Decodes %XX escapes of w in place; returns the length. */
static size_t unescape(char *w)
{
	size_t o = 0;
	for (size_t i = 0; w[i]; i++) {
		if (w[i] == '%' && isxdigit((unsigned char)w[i + 1]) &&
		    isxdigit((unsigned char)w[i + 2])) {
			char h[3] = { w[i + 1], w[i + 2], 0 };
			w[o++] = (char)strtol(h, NULL, 16);
			i += 2;
		} else {
			w[o++] = w[i];
		}
	}
	w[o] = '\0';
	return o;
}

/* Splits line into words, expanding WORD*N; returns the count.  *words
 * is a growing array owned by the caller. */
static size_t split(char *line, char ***words, size_t *cap)
{
	size_t n = 0;
	for (char *w = strtok(line, " \t\n"); w; w = strtok(NULL, " \t\n")) {
		long rep = 1;
		char *star = strrchr(w, '*');
		if (star && star[1] && strspn(star + 1, "0123456789") == strlen(star + 1)) {
			rep = atol(star + 1);
			*star = '\0';
		}
		for (long r = 0; r < rep; r++) {
			if (n == *cap) {
				*cap = *cap ? *cap * 2 : 64;
				*words = realloc(*words, *cap * sizeof **words);
				if (!*words)
					die("out of memory", NULL);
			}
			(*words)[n++] = w;
		}
	}
	return n;
}

static uint64_t num(const char *w)
{
	char *e;
	unsigned long long v = strtoull(w, &e, 0);
	if (*w == '-')
		v = (unsigned long long)strtoll(w, &e, 0);
	if (*e)
		die("not a number", w);
	return v;
}

/* The string-table index of word w (unescaped; w is modified). */
static uint64_t word_str(char *w)
{
	size_t len = unescape(w);
	return str_index(w, len);
}

/* Appends the encoding of one statement (words w[0..n)) to the profile. */
static void statement(struct buf *prof, char **w, size_t n)
{
	struct buf m = { 0 }, sub = { 0 };
	const char *k = w[0];
	if (!strcmp(k, "type") && n == 3) {
		field_int(&m, 1, word_str(w[1]));
		field_int(&m, 2, word_str(w[2]));
		field_msg(prof, 1, &m);
	} else if (!strcmp(k, "period") && n == 4) {
		field_int(&m, 1, word_str(w[1]));
		field_int(&m, 2, word_str(w[2]));
		field_msg(prof, 11, &m);
		field_int(prof, 12, num(w[3]));
	} else if (!strcmp(k, "duration") && n == 2) {
		field_int(prof, 10, num(w[1]));
	} else if (!strcmp(k, "time") && n == 2) {
		field_int(prof, 9, num(w[1]));
	} else if (!strcmp(k, "timeunit") && n == 2) {
		field_int(prof, 1001, num(w[1]));
	} else if (!strcmp(k, "comment") && n == 2) {
		field_int(prof, 13, word_str(w[1]));
	} else if (!strcmp(k, "mapping") && (n == 3 || n == 6)) {
		field_int(&m, 1, num(w[1]));
		field_int(&m, 2, n == 6 ? num(w[3]) : 0x1000);
		field_int(&m, 3, n == 6 ? num(w[4]) : 0x100000);
		if (n == 6)
			field_int(&m, 4, num(w[5]));
		field_int(&m, 5, word_str(w[2]));
		field_int(&m, 7, 1);
		field_msg(prof, 3, &m);
	} else if (!strcmp(k, "function") && n >= 3 && n <= 6) {
		field_int(&m, 1, num(w[1]));
		uint64_t name = word_str(w[2]);
		field_int(&m, 2, name);
		field_int(&m, 3, n > 5 ? word_str(w[5]) : name);
		if (n > 3)
			field_int(&m, 4, word_str(w[3]));
		if (n > 4)
			field_int(&m, 5, num(w[4]));
		field_msg(prof, 5, &m);
	} else if (!strcmp(k, "location") && n >= 4) {
		field_int(&m, 1, num(w[1]));
		field_int(&m, 2, num(w[2]));
		field_int(&m, 3, num(w[3]));
		for (size_t i = 4; i < n; i++) {
			char *colon = strchr(w[i], ':');
			if (colon)
				*colon = '\0';
			field_int(&sub, 1, num(w[i]));
			if (colon)
				field_int(&sub, 2, num(colon + 1));
			field_msg(&m, 4, &sub);
			if (colon)
				*colon = ':';
		}
		field_msg(prof, 4, &m);
	} else if (!strcmp(k, "sample")) {
		size_t i = 1;
		struct buf vals = { 0 }, locs = { 0 }, times = { 0 };
		for (; i < n && strcmp(w[i], ":") && strcmp(w[i], "|") && strcmp(w[i], "@") && strcmp(w[i], "@+"); i++)
			varint(&vals, num(w[i]));
		if (i < n && !strcmp(w[i], ":"))
			for (i++; i < n && strcmp(w[i], "|") && strcmp(w[i], "@") && strcmp(w[i], "@+"); i++)
				varint(&locs, num(w[i]));
		if (locs.n)
			field_bytes(&m, 1, locs.p, locs.n);
		if (vals.n)
			field_bytes(&m, 2, vals.p, vals.n);
		if (i < n && !strcmp(w[i], "|"))
			for (i++; i < n && strcmp(w[i], "@") && strcmp(w[i], "@+"); i++) {
				char *eq = strpbrk(w[i], "=#");
				if (!eq)
					die("a label is KEY=STR or KEY#NUM", w[i]);
				char sep = *eq;
				*eq = '\0';
				field_int(&sub, 1, word_str(w[i]));
				if (sep == '=')
					field_int(&sub, 2, word_str(eq + 1));
				else
					field_int(&sub, 3, num(eq + 1));
				field_msg(&m, 3, &sub);
				*eq = sep;
			}
		/* Each time as the delta since the one before, shifted left,
		 * its low bit set when a weight follows. */
		int deltas = i < n && !strcmp(w[i], "@+");
		if (i < n && (!strcmp(w[i], "@") || deltas))
			i++;
		for (uint64_t last = 0; i < n; i++) {
			char *slash = strchr(w[i], '/');
			if (slash)
				*slash = '\0';
			uint64_t t = deltas ? last + num(w[i]) : num(w[i]);
			if (t < last)
				die("times go in order", w[i]);
			varint(&times, (t - last) << 1 | (slash != NULL));
			if (slash) {
				varint(&times, num(slash + 1));
				*slash = '/';
			}
			last = t;
		}
		if (times.n)
			field_bytes(&m, 1001, times.p, times.n);
		field_msg(prof, 2, &m);
		free(vals.p);
		free(locs.p);
		free(times.p);
	} else if (!strcmp(k, "empty-samples") && n == 2) {
		unsigned char c[4096];
		for (size_t i = 0; i < sizeof c; i += 2)
			c[i] = 0x12, c[i + 1] = 0;
		uint64_t left = num(w[1]) * 2;
		while (left > 0) {
			size_t k2 = left < sizeof c ? (size_t)left : sizeof c;
			put(prof, c, k2);
			left -= k2;
		}
	} else if (!strcmp(k, "raw") && n == 2) {
		for (const char *h = w[1]; h[0] && h[1]; h += 2) {
			char x[3] = { h[0], h[1], 0 };
			unsigned char c = (unsigned char)strtol(x, NULL, 16);
			put(prof, &c, 1);
		}
	} else {
		die("bad statement", k);
	}
	free(m.p);
	free(sub.p);
}

int main(int argc, char **argv)
{
	int gz = argc == 3 && !strcmp(argv[1], "-z");
	if (argc != 2 + gz)
		die("usage: tool_mkprof [-z] OUT < DESCRIPTION", NULL);
	const char *out = argv[1 + gz];
	str_index("", 0);
	struct buf body = { 0 };
	char *line = NULL, **words = NULL, *copy = NULL;
	size_t lcap = 0, wcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, stdin)) > 0) {
		if (line[0] == '#' || strspn(line, " \t\n") == (size_t)len)
			continue;
		long rep = 1;
		char *stmt = line;
		if (!strncmp(line, "repeat ", 7)) {
			rep = strtol(line + 7, &stmt, 10);
			while (*stmt == ' ')
				stmt++;
		}
		for (long r = 0; r < rep; r++) {
			/* Words are unescaped in place: split a fresh copy. */
			free(copy);
			copy = strdup(stmt);
			size_t n = split(copy, &words, &wcap);
			if (n)
				statement(&body, words, n);
		}
	}
	struct buf prof = { 0 };
	for (size_t i = 0; i < strs.n; i++)
		field_bytes(&prof, 6, strs.s[i], strs.len[i]);
	put(&prof, body.p ? body.p : (unsigned char *)"", body.n);
	if (gz) {
		gzFile f = gzopen(out, "wb");
		if (!f || (prof.n && gzwrite(f, prof.p, (unsigned)prof.n) != (int)prof.n) ||
		    gzclose(f) != Z_OK)
			die("cannot write", out);
	} else {
		FILE *f = fopen(out, "wb");
		if (!f || fwrite(prof.p, 1, prof.n, f) != prof.n || fclose(f))
			die("cannot write", out);
	}
	return 0;
}
