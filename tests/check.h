/*
 * check.h -- assertions for cpuprof's test programs.  Each test program is
 * its own process (tests/run.sh runs it with a timeout), so a failed check
 * prints where and why and exits 1; a test that cannot run here exits 77.
 */
#ifndef CPUPROF_CHECK_H
#define CPUPROF_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, \
				__LINE__, #cond);                             \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define CHECK_EQ(a, b)                                                        \
	CHECK((long long)(a) == (long long)(b), "%lld != %lld",               \
	      (long long)(a), (long long)(b))

#define SKIP(...)                                                             \
	do {                                                                  \
		fprintf(stderr, "skip: " __VA_ARGS__);                        \
		fputc('\n', stderr);                                          \
		exit(77);                                                     \
	} while (0)

/* ---- reading profiles back with `go tool pprof` ---- */

#include <string.h>

/* Runs `go tool pprof ARGS FILE` and returns its standard output
 * (malloc'd, NUL-terminated), or NULL if it could not run or failed. */
static inline char *pprof_run(const char *args, const char *file)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "go tool pprof %s '%s' 2>/dev/null", args, file);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	size_t r;
	while (out && (r = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += r;
		if (len + 1 == cap)
			out = realloc(out, cap *= 2);
	}
	int st = pclose(p);
	if (!out || st != 0) {
		free(out);
		return NULL;
	}
	out[len] = '\0';
	return out;
}

/* Skips the test when `go tool pprof` is not installed. */
static inline void require_pprof(void)
{
	if (system("go version >/dev/null 2>&1") != 0)
		SKIP("go (go tool pprof) is not installed");
}

/* The function named in row `row` (0 = first) of `go tool pprof -top`
 * (flat order) into name; 0 if found. */
static inline int pprof_top_row(const char *file, int row, char *name, size_t len)
{
	char *out = pprof_run("-top -nodecount=20", file);
	if (!out)
		return -1;
	int rc = -1;
	char *line = strstr(out, "flat%");
	for (int i = -1; line && i < row; i++) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	char f[64], fp[64], sp[64], c[64], cp[64], rest[1024];
	if (line && sscanf(line, "%63s %63s %63s %63s %63s %1023[^\n]", f, fp, sp, c, cp, rest) == 6) {
		snprintf(name, len, "%.*s", (int)(len ? len - 1 : 0), rest);
		rc = 0;
	}
	free(out);
	return rc;
}

/* Sums the values of the samples in `go tool pprof -raw` output (one line
 * per sample: "count ns: location ids", then its labels on lines of their
 * own, "key:[value] ...").  (strtoll, not sscanf: glibc's sscanf takes
 * strlen of its whole input on every call.) */
static inline void pprof_raw_totals(const char *text, long long *count, long long *ns, long *nsamples)
{
	const char *p = strstr(text, "samples/count cpu/nanoseconds\n");
	CHECK(p != NULL, "no Samples in -raw output");
	p = strchr(p, '\n') + 1;
	*count = *ns = 0;
	*nsamples = 0;
	for (;;) {
		char *e, *f;
		long long c = strtoll(p, &e, 10);
		long long v = strtoll(e, &f, 10);
		if (e == p || f == e || *f != ':')
			break;
		*count += c;
		*ns += v;
		++*nsamples;
		p = strchr(f, '\n');
		if (!p)
			break;
		p++;
		/* Its labels. */
		for (;;) {
			const char *q = p;
			while (*q == ' ')
				q++;
			const char *nl = strchr(q, '\n');
			if (!nl || !((*q >= 'a' && *q <= 'z') && memchr(q, '[', (size_t)(nl - q))))
				break;
			p = nl + 1;
		}
	}
}

/* The cumulative CPU time (ns) of function `fn` in the profile, from
 * `go tool pprof -top`; -1 if it is not in the profile (or pprof failed). */
static inline long long pprof_cum_ns(const char *file, const char *fn)
{
	char *out = pprof_run("-top -sample_index=cpu -unit=ns -nodecount=1000", file);
	if (!out)
		return -1;
	long long cum = -1;
	char *line = strstr(out, "flat%");
	while (line && (line = strchr(line, '\n')) != NULL) {
		line++;
		char f[64], fp[64], sp[64], c[64], cp[64], name[512];
		if (sscanf(line, "%63s %63s %63s %63s %63s %511s", f, fp, sp, c, cp, name) == 6 && !strcmp(name, fn)) {
			cum = strtoll(c, NULL, 10);
			break;
		}
	}
	free(out);
	return cum;
}

/* The value of profile comment KEY=VALUE into val; 0 if present. */
static inline int pprof_comment(const char *file, const char *key, char *val, size_t len)
{
	char *out = pprof_run("-comments", file);
	if (!out)
		return -1;
	int rc = -1;
	size_t kl = strlen(key);
	for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		while (*line == ' ')
			line++;
		if (!strncmp(line, key, kl) && line[kl] == '=') {
			size_t n = strcspn(line + kl + 1, "\n");
			if (n >= len)
				n = len - 1;
			memcpy(val, line + kl + 1, n);
			val[n] = '\0';
			rc = 0;
			break;
		}
	}
	free(out);
	return rc;
}

/* Number of entries of a /proc directory such as /proc/self/fd. */
#include <dirent.h>
static inline int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Open file descriptors of this process (less the one counting them). */
static inline int count_fds(void)
{
	return count_entries("/proc/self/fd") - 1;
}

/* Threads of this process. */
static inline int count_threads(void)
{
	return count_entries("/proc/self/task");
}

/* Number of POSIX timers of this process (/proc/self/timers). */
static inline int count_timers(void)
{
	FILE *f = fopen("/proc/self/timers", "r");
	char line[256];
	int n = 0;
	while (f && fgets(line, sizeof line, f))
		n += !strncmp(line, "ID:", 3);
	if (f)
		fclose(f);
	return n;
}

/* Burns `ms` milliseconds of the calling thread's CPU time in fn(). */
#include <time.h>
static inline double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- files ---- */

/* Reads the whole of path into memory (malloc'd). */
static inline unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL, "open %s", path);
	size_t cap = 1 << 20, n = 0, r;
	unsigned char *p = malloc(cap);
	while (p && (r = fread(p + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap)
			p = realloc(p, cap *= 2);
	}
	CHECK(p != NULL, "out of memory");
	fclose(f);
	*len = n;
	return p;
}

/* Writes len bytes of data to path. */
static inline void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL, "create %s", path);
	CHECK(fwrite(data, 1, len, f) == len && fclose(f) == 0, "write %s", path);
}

#define DEFINE_BURNER(fn)                                                     \
	__attribute__((noinline)) void fn(double ms)                          \
	{                                                                     \
		static _Thread_local volatile unsigned long long sink;        \
		double end = thread_cpu_ms() + ms;                            \
		unsigned long long x = 1;                                     \
		while (thread_cpu_ms() < end)                                 \
			for (int i = 0; i < 200000; i++)                       \
				x = x * 6364136223846793005ull + 1;           \
		sink += x;                                                    \
	}

#endif
