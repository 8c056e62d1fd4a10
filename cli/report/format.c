/*
 * format.c -- number formatting shared by the formats of `cpuprof report`
 * (see format.h).
 */
#include "format.h"
#include "stacks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double ns_per_unit(const char *unit)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {
		{ "nanoseconds", 1 },     { "nanosecond", 1 },   { "ns", 1 },
		{ "microseconds", 1e3 },  { "microsecond", 1e3 }, { "us", 1e3 },
		{ "milliseconds", 1e6 },  { "millisecond", 1e6 }, { "ms", 1e6 },
		{ "seconds", 1e9 },       { "second", 1e9 },      { "s", 1e9 },
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].ns;
	return 0;
}

void format_value(char *buf, size_t len, int64_t v, const char *unit)
{
	double scale = ns_per_unit(unit);
	if (scale == 0 || v == 0) {
		snprintf(buf, len, "%" PRId64, v);
		return;
	}
	double ns = (double)v * scale, a = ns < 0 ? -ns : ns;
	const char *suffix = "ns";
	double x = ns;
	if (a >= 1e9) {
		x = ns / 1e9;
		suffix = "s";
	} else if (a >= 1e6) {
		x = ns / 1e6;
		suffix = "ms";
	} else if (a >= 1e3) {
		x = ns / 1e3;
		suffix = "us";
	}
	snprintf(buf, len, "%.2f", x);
	size_t n = strlen(buf);
	if (n > 3 && strcmp(buf + n - 3, ".00") == 0)
		buf[n - 3] = '\0';
	if (strcmp(buf, "0") == 0 || strcmp(buf, "-0") == 0) {
		snprintf(buf, len, "0");
		return;
	}
	strncat(buf, suffix, len - strlen(buf) - 1);
}

void format_pct(char *buf, size_t len, int64_t v, int64_t total)
{
	double pct = total ? 100.0 * (double)v / (double)total : 0;
	if (v == 0)
		snprintf(buf, len, "0%%");
	else if (pct >= 99.995 && pct < 100.005)
		snprintf(buf, len, "100%%");
	else
		snprintf(buf, len, "%.2f%%", pct);
}

size_t utf8_char_len(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	uint32_t cp, min;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void put_name(FILE *out, const char *s, const char *also)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	while (n > 0) {
		size_t k = utf8_char_len(p, n);
		if (k == 0) {
			fputs("\xef\xbf\xbd", out); /* U+FFFD */
			k = 1;
		} else if ((k == 1 && (*p < 0x20 || *p == 0x7f ||
				       (also && strchr(also, *p)))) ||
			   (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
			/* C0 and C1 controls, DEL */
			fputc('?', out);
		} else {
			fwrite(p, 1, k, out);
		}
		p += k;
		n -= k;
	}
}

void put_frame_folded(FILE *out, const struct frame *f)
{
	/* The marks flamegraph.pl and inferno colour by: "_[k]" the kernel's,
	 * "_[j]" a JIT's (their --color=java), in place of the label's. */
	const char *suffix = f->kind == FRAME_KERNEL ? "_[k]" : f->kind == FRAME_JIT ? "_[j]" : NULL;
	const char *m = frame_kind_mark(f->kind);
	size_t len = strlen(f->label), mark = strlen(m);
	char *s = suffix && len >= mark && !strcmp(f->label + len - mark, m) ? strndup(f->label, len - mark) : NULL;
	put_name(out, s ? s : f->label, ";");
	free(s);
	if (suffix)
		fputs(suffix, out);
}
