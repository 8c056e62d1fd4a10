/*
 * jit.c -- names of JIT-compiled code from perf maps and jitdumps (jit.h).
 * Both files are read whole, entry by entry, in the order written; then
 * one sweep over the ranges' ends makes them disjoint, each address going
 * to the entry read last that covers it (a JIT that frees code and puts
 * other code where it was names the range again, later in the file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "base/error.h"
#include "jit.h"

/* jitdump's magic ("JiTD" as a little-endian word), and its records. */
#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_MAGIC_SWAPPED 0x4454694Au
enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1, JIT_CODE_DEBUG_INFO = 2, JIT_CODE_CLOSE = 3 };
/* The most a record other than a load's code may hold (a debug info
 * record of a large function is the longest). */
#define JITDUMP_MAX_RECORD (64u << 20)

/* The offset of a copy of s[0..n) in j's strings, or 0 (out of memory, or
 * empty). */
static uint32_t str_add(struct cp_jit *j, const char *s, size_t n)
{
	if (!n)
		return 0;
	if (!j->nstr)
		j->nstr = 1; /* offset 0 is "" */
	if (j->nstr + n + 1 > UINT32_MAX ||
	    cp_array_grow((void **)&j->str, &j->capstr, j->nstr + n + 1, 1, 1 << 16))
		return 0;
	j->str[0] = '\0';
	uint32_t at = (uint32_t)j->nstr;
	memcpy(j->str + at, s, n);
	j->str[at + n] = '\0';
	j->nstr += n + 1;
	return at;
}

/* Appends [start, start + size) named `name`; its lines are the table's
 * last nlines.  0 or -ENOMEM. */
static int sym_add(struct cp_jit *j, uint64_t start, uint64_t size, uint32_t name, size_t nlines)
{
	if (!size || start + size < start)
		return 0;
	if (cp_array_grow((void **)&j->syms, &j->capsyms, j->nsyms + 1, sizeof *j->syms, 1024))
		return -ENOMEM;
	j->syms[j->nsyms++] = (struct cp_jit_sym){ start, start + size, name, (uint32_t)(j->nlines - nlines),
						   (uint32_t)nlines };
	return 0;
}

/* Reads all of fd into a malloc'd buffer with a NUL after it. */
static char *slurp(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	while (b) {
		if (n + 1 >= cap) {
			char *g = realloc(b, cap * 2);
			if (!g)
				break;
			b = g;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			b[n] = '\0';
			*len = n;
			return b;
		}
		n += (size_t)r;
	}
	free(b);
	return NULL;
}

/* A hex number at *p (no 0x needed, one allowed), *p moved past it; -1
 * if there is none. */
static int hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	uint64_t x = 0;
	const char *d = s;
	for (;; d++) {
		unsigned c = (unsigned char)*d, k;
		if (c >= '0' && c <= '9')
			k = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			k = (c | 0x20) - 'a' + 10;
		else
			break;
		if (d - s >= 16)
			return -1;
		x = x << 4 | k;
	}
	if (d == s)
		return -1;
	*v = x;
	*p = d;
	return 0;
}

/* Opens path (from dirfd, with flags) if it was written since
 * j->not_before_ns and is owned by j's process or root: a file, or a
 * negative errno with why[len]. */
static int open_fresh(const struct cp_jit *j, int dirfd, const char *path, int flags, char *why, size_t len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | flags);
	if (fd < 0) {
		int e = errno;
		cp_why(why, len, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	if ((j->not_before_ns || j->owner_known) && fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		cp_why(why, len, "%s: %s", path, strerror(e));
		return -e;
	}
	if (j->not_before_ns &&
	    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec < j->not_before_ns) {
		close(fd);
		cp_why(why, len, "%s: older than the process", path);
		return -ESTALE;
	}
	if (j->owner_known && st.st_uid != 0 && st.st_uid != j->owner) {
		close(fd);
		cp_why(why, len, "%s: owned by uid %u, neither the process's (%u) nor root: not trusted", path,
		       (unsigned)st.st_uid, (unsigned)j->owner);
		return -EPERM;
	}
	return fd;
}

/* The first len - 1 bytes of process pid's file /proc/PID/name, a string
 * in buf: 0, or -1 if it cannot be read. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

int cp_jit_owner(pid_t pid, uid_t *uid)
{
	if (pid == getpid()) {
		*uid = geteuid();
		return 0;
	}
	char buf[4096];
	if (read_proc(pid, "status", buf, sizeof buf) < 0)
		return -1;
	/* "Uid:" real, effective, saved, file system: the effective one
	 * writes the files. */
	const char *at = strstr(buf, "\nUid:");
	unsigned long real, eff;
	if (!at || sscanf(at + 5, "%lu %lu", &real, &eff) != 2)
		return -1;
	*uid = (uid_t)eff;
	return 0;
}

int64_t cp_jit_not_before(pid_t pid)
{
	char buf[1024];
	if (read_proc(pid, "stat", buf, sizeof buf) < 0)
		return 0;
	/* Field 22, starttime (clock ticks after boot), counted from after
	 * the name in parentheses, which may hold anything. */
	const char *at = strrchr(buf, ')');
	unsigned long long ticks = 0;
	if (!at || sscanf(at + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			  &ticks) != 1)
		return 0;
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	long long btime = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	if (f)
		fclose(f);
	long hz = sysconf(_SC_CLK_TCK);
	if (btime <= 0 || hz <= 0)
		return 0;
	return (btime + (long long)(ticks / (unsigned long long)hz) - 2) * 1000000000 +
	       (int64_t)(ticks % (unsigned long long)hz) * (1000000000 / hz);
}

long cp_jit_read_map(struct cp_jit *j, int dirfd, const char *path, char *why, size_t len)
{
	/* Not through a link: in a shared /tmp anyone may put one there, to
	 * a file of root's that the owner's check would let through. */
	int fd = open_fresh(j, dirfd, path, O_NOFOLLOW, why, len);
	if (fd < 0)
		return fd;
	size_t size = 0;
	char *buf = slurp(fd, &size);
	close(fd);
	if (!buf) {
		cp_why(why, len, "%s: out of memory", path);
		return -ENOMEM;
	}
	long n = 0;
	for (const char *p = buf, *end = buf + size; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break; /* a last line without its newline may be cut mid-write */
		uint64_t start, bytes;
		const char *q = p;
		if (hex(&q, &start) == 0 && *q == ' ' && (q++, hex(&q, &bytes) == 0) && *q == ' ') {
			q++;
			size_t nl = (size_t)(eol - q);
			while (nl && (q[nl - 1] == '\r' || q[nl - 1] == ' '))
				nl--;
			uint32_t name = str_add(j, q, nl);
			if ((nl && !name) || sym_add(j, start, bytes, name, 0) < 0) {
				free(buf);
				cp_why(why, len, "%s: out of memory", path);
				return -ENOMEM;
			}
			n++;
		}
		p = eol + 1;
	}
	free(buf);
	j->map_entries += (size_t)n;
	return n;
}

/* Reads exactly n bytes at the file's position; 0, or -1 at its end. */
static int take(FILE *f, void *to, size_t n)
{
	return n == 0 || fread(to, 1, n, f) == n ? 0 : -1;
}

/* Whether s[0..n) is text: UTF-8 without control characters.  node 20's
 * V8 writes the bytes of a pointer where a script's file name should be. */
static int is_text(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
		if (c < 0x20 || c == 0x7f || more > 3 || (more == 1 && c < 0xc2) || i + more >= n + !more)
			return 0;
		for (size_t k = 1; k <= more; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += 1 + more;
	}
	return 1;
}

/* The debug info record's lines (body b[0..n), for code at code_addr),
 * appended to j; how many, or -1 if malformed or out of memory (and
 * none appended: the caller counts only what it was told). */
static long dump_lines(struct cp_jit *j, const uint8_t *b, size_t n)
{
	size_t was = j->nlines;
	if (n < 16)
		return -1;
	uint64_t code_addr, nr;
	memcpy(&code_addr, b, 8);
	memcpy(&nr, b + 8, 8);
	size_t at = 16;
	uint32_t file = 0;
	long got = 0;
	for (uint64_t i = 0; i < nr; i++) {
		if (n - at < 16)
			goto bad;
		uint64_t addr;
		int32_t line;
		memcpy(&addr, b + at, 8);
		memcpy(&line, b + at + 8, 4);
		at += 16; /* address, line, discriminator */
		const uint8_t *nul = memchr(b + at, '\0', n - at);
		if (!nul)
			goto bad;
		size_t len = (size_t)(nul - (b + at));
		/* "\xff" is the file of the entry before. */
		/* A file named again (the lines of one function mostly are
		 * of one file) is kept once. */
		int again = file && !strcmp(j->str + file, (const char *)b + at);
		if (!(len == 1 && b[at] == 0xff) && !again)
			file = is_text(b + at, len) ? str_add(j, (const char *)b + at, len) : 0;
		at += len + 1;
		/* An address below the code's is an offset into it. */
		if (addr < code_addr)
			addr += code_addr;
		if (cp_array_grow((void **)&j->lines, &j->caplines, j->nlines + 1, sizeof *j->lines, 1024))
			goto bad;
		j->lines[j->nlines++] = (struct cp_jit_line){ addr, line > 0 ? (uint32_t)line : 0, file };
		got++;
	}
	return got;
bad:
	j->nlines = was;
	return -1;
}

/* Line entries' address order, for a record's own lines. */
static int by_line_addr(const void *a, const void *b)
{
	const struct cp_jit_line *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* JIT_CODE_MOVE: the code last loaded at `from` is now at `to`. */
static int dump_move(struct cp_jit *j, uint64_t from, uint64_t to, uint64_t size)
{
	for (size_t i = j->nsyms; i-- > 0;) {
		struct cp_jit_sym s = j->syms[i];
		if (s.start != from)
			continue;
		size_t n = s.nlines;
		if (cp_array_grow((void **)&j->lines, &j->caplines, j->nlines + n, sizeof *j->lines, 1024))
			return -ENOMEM;
		for (size_t k = 0; k < n; k++) {
			struct cp_jit_line l = j->lines[s.line0 + k];
			l.addr = l.addr - from + to;
			j->lines[j->nlines++] = l;
		}
		return sym_add(j, to, size ? size : s.end - s.start, s.name, n);
	}
	return 0;
}

long cp_jit_read_dump(struct cp_jit *j, int dirfd, const char *path, char *why, size_t len)
{
	int fd = open_fresh(j, dirfd, path, 0, why, len);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		cp_why(why, len, "%s: out of memory", path);
		return -ENOMEM;
	}
	uint32_t h[4];
	long loads = 0, rc = 0;
	uint8_t *body = NULL;
	size_t cap = 0, pending = 0; /* lines of a debug info record, for the load that follows */
	uint64_t pending_addr = 0;
	if (take(f, h, sizeof h) < 0 || (h[0] != JITDUMP_MAGIC && h[0] != JITDUMP_MAGIC_SWAPPED)) {
		cp_why(why, len, "%s: not a jitdump", path);
		rc = -EINVAL;
		goto out;
	}
	if (h[0] == JITDUMP_MAGIC_SWAPPED) {
		cp_why(why, len, "%s: a jitdump of the other byte order", path);
		rc = -EINVAL;
		goto out;
	}
	/* The header's size is its own third word (40 bytes in version 1). */
	if (h[2] < 16 || h[2] > 4096 || fseek(f, h[2], SEEK_SET) != 0) {
		cp_why(why, len, "%s: a jitdump header of %u bytes", path, h[2]);
		rc = -EINVAL;
		goto out;
	}
	for (;;) {
		uint32_t rh[4]; /* id, total size, timestamp */
		if (take(f, rh, sizeof rh) < 0)
			break; /* its end, or a record still being written */
		uint32_t id = rh[0], total = rh[1];
		if (total < 16) {
			cp_why(why, len, "%s: a record of %u bytes", path, total);
			rc = -EINVAL;
			break;
		}
		size_t n = total - 16, code = 0;
		if (id == JIT_CODE_LOAD) {
			/* pid, tid, vma, code_addr, code_size, code_index, name, code */
			uint8_t fixed[40];
			if (n < 40 || take(f, fixed, 40) < 0)
				break;
			uint64_t size;
			memcpy(&size, fixed + 24, 8);
			if (size > n - 40) {
				cp_why(why, len, "%s: code of %llu bytes in a record of %u", path,
				       (unsigned long long)size, total);
				rc = -EINVAL;
				break;
			}
			code = (size_t)size;
			n -= 40 + code;
			if (n > JITDUMP_MAX_RECORD)
				break;
			if (cp_array_grow((void **)&body, &cap, n + 41, 1, 4096)) {
				rc = -ENOMEM;
				break;
			}
			memcpy(body, fixed, 40);
			if (take(f, body + 40, n) < 0)
				break;
			body[40 + n] = '\0';
			/* A load whose code is not all there yet is not taken:
			 * what is read is only what came whole. */
			struct stat st;
			long pos = ftell(f);
			if (pos < 0 || fstat(fileno(f), &st) != 0 || (uint64_t)pos + code > (uint64_t)st.st_size)
				break;
			uint64_t addr;
			memcpy(&addr, fixed + 16, 8);
			const char *name = (const char *)body + 40;
			if (pending && pending_addr != addr)
				j->nlines -= pending; /* lines of other code: not these */
			uint32_t s = str_add(j, name, strnlen(name, n));
			if (sym_add(j, addr, size, s, pending_addr == addr ? pending : 0) < 0) {
				rc = -ENOMEM;
				break;
			}
			pending = 0;
			loads++;
			if (code && fseek(f, (long)code, SEEK_CUR) != 0)
				break;
			continue;
		}
		if (id != JIT_CODE_MOVE && id != JIT_CODE_DEBUG_INFO) {
			/* JIT_CODE_CLOSE, or one not needed here (unwinding
			 * info) or not known yet: passed over. */
			if (id == JIT_CODE_CLOSE || fseek(f, (long)n, SEEK_CUR) != 0)
				break;
			continue;
		}
		if (n > JITDUMP_MAX_RECORD) {
			cp_why(why, len, "%s: a record of %u bytes", path, total);
			rc = -EINVAL;
			break;
		}
		if (cp_array_grow((void **)&body, &cap, n + 1, 1, 4096)) {
			rc = -ENOMEM;
			break;
		}
		if (take(f, body, n) < 0)
			break;
		if (id == JIT_CODE_MOVE && n >= 48) {
			uint64_t from, to, size;
			memcpy(&from, body + 16, 8);
			memcpy(&to, body + 24, 8);
			memcpy(&size, body + 32, 8);
			if (dump_move(j, from, to, size) < 0) {
				rc = -ENOMEM;
				break;
			}
		} else if (id == JIT_CODE_DEBUG_INFO) {
			j->nlines -= pending; /* the record before's: of code that never loaded */
			pending = 0;
			long got = dump_lines(j, body, n);
			if (got < 0) {
				cp_why(why, len, "%s: a malformed debug info record", path);
				rc = -EINVAL;
				break;
			}
			memcpy(&pending_addr, body, 8);
			pending = (size_t)got;
			qsort(j->lines + j->nlines - pending, pending, sizeof *j->lines, by_line_addr);
		}
	}
	j->nlines -= pending;
out:
	if (rc == -ENOMEM)
		cp_why(why, len, "%s: out of memory", path);
	free(body);
	fclose(f);
	j->dump_entries += (size_t)loads;
	return rc < 0 ? rc : loads;
}

int cp_jit_is_anon_path(const char *path)
{
	return path[0] == '\0' || !strncmp(path, "//anon", 6) || !strncmp(path, "[anon", 5) ||
	       !strncmp(path, "/memfd:", 7);
}

int cp_jit_is_dump_path(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	return n > 9 && !strncmp(base, "jit-", 4) && !strcmp(base + n - 5, ".dump");
}

/* ---- making the ranges disjoint ---- */

/* A max-heap of entry indexes: the one read last on top. */
struct heap {
	uint32_t *v;
	size_t n;
};

static void heap_push(struct heap *h, uint32_t x)
{
	size_t i = h->n++;
	while (i && h->v[(i - 1) / 2] < x) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static void heap_pop(struct heap *h)
{
	uint32_t x = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1] > h->v[c])
			c++;
		if (h->v[c] <= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
}

/* An entry's start and its index: sorted as they are, no comparator
 * needs the table (cp_jit_finish may run in any thread of the profiled
 * program, so no static may hold it). */
struct by_start_key {
	uint64_t start;
	uint32_t i;
};

/* Entries by start, then as read. */
static int by_start(const void *a, const void *b)
{
	const struct by_start_key *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int cp_jit_finish(struct cp_jit *j)
{
	if (j->finished)
		return 0;
	size_t n = j->nsyms;
	if (n > UINT32_MAX)
		return -ENOMEM;
	struct by_start_key *order = malloc((n ? n : 1) * sizeof *order);
	uint64_t *points = malloc((2 * n + 1) * sizeof *points);
	struct heap h = { malloc((n ? n : 1) * sizeof *h.v), 0 };
	struct cp_jit_sym *out = malloc((2 * n + 1) * sizeof *out);
	if (!order || !points || !h.v || !out) {
		free(order);
		free(points);
		free(h.v);
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		order[i] = (struct by_start_key){ j->syms[i].start, (uint32_t)i };
		points[2 * i] = j->syms[i].start;
		points[2 * i + 1] = j->syms[i].end;
	}
	qsort(order, n, sizeof *order, by_start);
	qsort(points, 2 * n, sizeof *points, by_u64);
	size_t nout = 0, next = 0;
	for (size_t p = 0; p < 2 * n; p++) {
		uint64_t x = points[p];
		if (p + 1 < 2 * n && points[p + 1] == x)
			continue; /* the last of equal points: the interval from x on */
		while (next < n && order[next].start <= x)
			heap_push(&h, order[next++].i);
		while (h.n && j->syms[h.v[0]].end <= x)
			heap_pop(&h);
		if (!h.n || p + 1 == 2 * n)
			continue;
		/* The winner covers [x, next point): its own end is no sooner. */
		uint64_t to = points[p + 1];
		const struct cp_jit_sym *w = &j->syms[h.v[0]];
		if (nout && out[nout - 1].end == x && out[nout - 1].name == w->name &&
		    out[nout - 1].line0 == w->line0 && out[nout - 1].nlines == w->nlines) {
			out[nout - 1].end = to;
			continue;
		}
		out[nout] = *w;
		out[nout].start = x;
		out[nout].end = to;
		nout++;
	}
	free(order);
	free(points);
	free(h.v);
	free(j->syms);
	j->syms = out;
	j->nsyms = j->capsyms = nout;
	j->finished = 1;
	return 0;
}

const struct cp_jit_sym *cp_jit_lookup(const struct cp_jit *j, uint64_t pc)
{
	if (!j || !j->finished)
		return NULL;
	size_t lo = 0, hi = j->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (j->syms[mid].end <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < j->nsyms && j->syms[lo].start <= pc ? &j->syms[lo] : NULL;
}

const char *cp_jit_name(const struct cp_jit *j, const struct cp_jit_sym *s)
{
	return s->name && j->str ? j->str + s->name : "";
}

uint32_t cp_jit_line_of(const struct cp_jit *j, const struct cp_jit_sym *s, uint64_t pc, const char **file)
{
	*file = "";
	const struct cp_jit_line *l = NULL;
	for (uint32_t k = 0; k < s->nlines; k++) {
		const struct cp_jit_line *c = &j->lines[s->line0 + k];
		if (c->addr > pc)
			break;
		l = c;
	}
	if (!l)
		return 0;
	*file = l->file && j->str ? j->str + l->file : "";
	return l->line;
}

void cp_jit_region(const struct cp_jit *j, const struct cp_jit_sym *s, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
	*lo = s->start;
	*hi = s->end;
	for (size_t i = 0; i < j->nregions; i++)
		if (j->regions[2 * i] <= pc && pc < j->regions[2 * i + 1]) {
			*lo = j->regions[2 * i];
			*hi = j->regions[2 * i + 1];
			return;
		}
}

/* Notes the anonymous executable mapping [lo, hi) (/proc/self/maps'
 * lines are in address order). */
static void add_region(struct cp_jit *j, uint64_t lo, uint64_t hi)
{
	if (!cp_array_grow((void **)&j->regions, &j->capregions, 2 * j->nregions + 2, sizeof *j->regions, 64)) {
		j->regions[2 * j->nregions] = lo;
		j->regions[2 * j->nregions + 1] = hi;
		j->nregions++;
	}
}

struct cp_jit *cp_jit_load(pid_t pid)
{
	struct cp_jit *j = calloc(1, sizeof *j);
	if (!j)
		return NULL;
	char path[96], why[256];
	j->not_before_ns = cp_jit_not_before(pid);
	j->owner_known = cp_jit_owner(pid, &j->owner) == 0;
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
	cp_jit_read_map(j, AT_FDCWD, path, why, sizeof why);
	/* Its anonymous code, and the jitdumps it has mapped (as a JIT
	 * marks them for perf). */
	int dumps = 0; /* read, or tried: one not read is not tried again below */
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *m = fopen(path, "re");
	char line[4096 + 128];
	while (m && fgets(line, sizeof line, m)) {
		unsigned long long lo, hi;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &at) < 3 || !at)
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = '\0';
		if (strchr(perms, 'x') && cp_jit_is_anon_path(file))
			add_region(j, lo, hi);
		if (file[0] != '/')
			continue;
		if (cp_jit_is_dump_path(file)) {
			cp_jit_read_dump(j, AT_FDCWD, file, why, sizeof why);
			dumps++;
		}
	}
	if (m)
		fclose(m);
	/* A JIT that has closed its dump unmapped it: where perf's JITs put
	 * it, the directory it was started in. */
	snprintf(path, sizeof path, "/proc/%d/cwd/jit-%d.dump", (int)pid, (int)pid);
	if (!dumps)
		cp_jit_read_dump(j, AT_FDCWD, path, why, sizeof why);
	if ((!j->map_entries && !j->dump_entries) || cp_jit_finish(j) < 0) {
		cp_jit_free(j);
		return NULL;
	}
	return j;
}

void cp_jit_free(struct cp_jit *j)
{
	if (!j)
		return;
	free(j->syms);
	free(j->str);
	free(j->lines);
	free(j->regions);
	free(j);
}
