/*
 * rwmap.c -- the snapshot of readable+writable mappings used to bound
 * stack walks of threads whose stacks we did not see being made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "array.h"
#include "rwmap.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Parses a hex number at *p, advancing it; returns the digits read. */
static int parse_hex(const char **p, const char *end, uintptr_t *out)
{
	int n = 0;
	uintptr_t v = 0;
	for (; *p < end && hexval(**p) >= 0; (*p)++, n++)
		v = v * 16 + (uintptr_t)hexval(**p);
	*out = v;
	return n;
}

struct cp_rwmap *cp_rwmap_parse(const char *text, size_t len)
{
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	struct cp_rwmap *m = malloc(sizeof *m + lines * sizeof m->range[0]);
	if (!m)
		return NULL;
	m->n = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *eol = p;
		while (eol < end && *eol != '\n')
			eol++;
		uintptr_t lo, hi;
		if (parse_hex(&p, eol, &lo) && p < eol && *p++ == '-' && parse_hex(&p, eol, &hi) &&
		    eol - p >= 3 && p[0] == ' ' && p[1] == 'r' && p[2] == 'w' && lo < hi) {
			if (m->n && m->range[m->n - 1][1] == lo)
				m->range[m->n - 1][1] = hi;
			else if (!m->n || m->range[m->n - 1][1] < lo) {
				m->range[m->n][0] = lo;
				m->range[m->n][1] = hi;
				m->n++;
			}
		}
		p = eol + 1;
	}
	return m;
}

struct cp_rwmap *cp_rwmap_snapshot(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 0, len = 0;
	char *buf = NULL;
	for (;;) {
		if (cp_array_grow((void **)&buf, &cap, len + 1, 1, 1 << 16)) {
			free(buf);
			buf = NULL;
			break;
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	struct cp_rwmap *m = buf ? cp_rwmap_parse(buf, len) : NULL;
	free(buf);
	return m;
}

void cp_rwmap_free(struct cp_rwmap *m)
{
	free(m);
}
