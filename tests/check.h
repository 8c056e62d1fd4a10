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

/* ---- which engines this machine allows ---- */

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Opens a counting event of type/config on the calling thread, user mode
 * only (what any perf_event_paranoid below 3 allows), disabled.  The fd or
 * -errno. */
static inline int probe_perf_event(uint32_t type, uint64_t config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	return fd < 0 ? -errno : (int)fd;
}

/* Why this machine cannot run `engine`, or NULL if it can, which makes a
 * test that cannot start it fail instead of passing untested.  Decided
 * without cpuprof: timer and itimer need only POSIX timers; perf needs a
 * plain perf_event_open of the task clock to succeed, which the kernel
 * refuses under perf_event_paranoid 3 without privileges, under seccomp
 * filters (Docker's default) and under qemu-user (ENOSYS); hw needs that
 * and a PMU that counts the cycles of a short spin; off-cpu (not an engine:
 * what `record --off-cpu` and CPUPROF_OFF_CPU need) needs that and a
 * context-switch event sampled in kernel mode
 * (/sys/bus/event_source/devices/cpu* is the PMU on x86, armv8_pmu* on
 * Arm; most virtual machines have none). */
static inline const char *engine_unavailable(const char *engine)
{
	static char why[512];
	if (!strcmp(engine, "timer") || !strcmp(engine, "itimer") || !strcmp(engine, "auto"))
		return NULL;
	if (strcmp(engine, "perf") && strcmp(engine, "hw") && strcmp(engine, "off-cpu")) {
		snprintf(why, sizeof why, "unknown engine %s", engine);
		return why;
	}
	int paranoid = -9;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = -9;
		fclose(f);
	}
	const char *emu = getenv("EMU");
	int fd = probe_perf_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	if (fd < 0) {
		if (paranoid == -9)
			snprintf(why, sizeof why, "%s: this kernel has no perf events (no perf_event_paranoid)", engine);
		else
			snprintf(why, sizeof why, "%s: perf_event_open: %s (perf_event_paranoid=%d, uid %d%s)", engine,
				 strerror(-fd), paranoid, (int)getuid(),
				 emu && *emu ? ", under qemu-user" : fd == -EPERM || fd == -EACCES ? ", or a seccomp filter" : "");
		return why;
	}
	close(fd);
	if (!strcmp(engine, "perf"))
		return NULL;
	if (!strcmp(engine, "off-cpu")) {
		/* A sample at every switch-out, which the kernel takes in
		 * kernel mode: root, CAP_PERFMON or perf_event_paranoid <= 1. */
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		a.sample_period = 1;
		a.disabled = 1;
		a.exclude_hv = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
		if (fd < 0) {
			snprintf(why, sizeof why, "off-cpu: context-switch samples in kernel mode: perf_event_open: %s "
				 "(perf_event_paranoid=%d, uid %d)", strerror(errno), paranoid, (int)getuid());
			return why;
		}
		close(fd);
		return NULL;
	}
	fd = probe_perf_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	if (fd < 0) {
		snprintf(why, sizeof why, "hw: no PMU counts CPU cycles here (perf_event_open: %s; "
			 "/sys/bus/event_source/devices has %s)", strerror(-fd),
			 access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ? "a cpu PMU" : "no cpu PMU");
		return why;
	}
	uint64_t count = 0;
	volatile uint64_t x = 1;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (int i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ull + 1;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &count, sizeof count) != (ssize_t)sizeof count)
		count = 0;
	close(fd);
	if (count < 100000) {
		snprintf(why, sizeof why, "hw: the PMU counted %llu cycles in 2 million multiplications",
			 (unsigned long long)count);
		return why;
	}
	return NULL;
}

/* The engines a per-engine test runs for: the one tests/run.sh names in
 * CPUPROF_TEST_ENGINE (a test whose source has a "TEST_ENGINES:" line is
 * run once for each engine listed there), or all of `list` when the
 * program is run by hand.  Calls fn for each engine this machine allows;
 * skips (77) with the reason when run for one it does not allow, and
 * otherwise only says which it left out.  Fails if it ran none. */
static inline void for_each_engine(const char *const *list, void (*fn)(const char *engine))
{
	const char *only = getenv("CPUPROF_TEST_ENGINE"), *why;
	if (only && *only) {
		if ((why = engine_unavailable(only)) != NULL)
			SKIP("%s", why);
		fn(only);
		return;
	}
	int ran = 0;
	for (size_t i = 0; list[i]; i++) {
		if ((why = engine_unavailable(list[i])) != NULL) {
			fprintf(stderr, "not run: %s\n", why);
			continue;
		}
		fn(list[i]);
		ran++;
	}
	CHECK(ran > 0, "no engine of the list can run here");
}

/* cpuprof_start() for an engine this machine allows: a refusal is a
 * failure (the engine is dead), not a reason to pass untested. */
#define START_ENGINE(path, opts)                                                              \
	do {                                                                                  \
		int start_rc_ = cpuprof_start((path), (opts));                                \
		CHECK(start_rc_ == 0, "engine %s: cpuprof_start: %s (this machine allows it)",  \
		      (opts)->engine ? (opts)->engine : "auto", cpuprof_strerror(start_rc_)); \
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

/* pprof_raw_totals of the profile at path, read with `go tool pprof -raw`. */
static inline void pprof_file_totals(const char *path, long long *count, long long *ns, long *nsamples)
{
	char *raw = pprof_run("-raw", path);
	CHECK(raw, "pprof -raw %s", path);
	pprof_raw_totals(raw, count, ns, nsamples);
	free(raw);
}

/* The cumulative `index` time (ns: cpu, off_cpu, wall) of function `fn`
 * in the profile, from `go tool pprof -top`; -1 if it is not in the
 * profile (or pprof failed). */
static inline long long pprof_cum_index_ns(const char *file, const char *index, const char *fn)
{
	char args[128];
	snprintf(args, sizeof args, "-top -sample_index=%s -unit=ns -nodecount=1000", index);
	char *out = pprof_run(args, file);
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

/* The cumulative CPU time (ns) of function `fn` in the profile. */
static inline long long pprof_cum_ns(const char *file, const char *fn)
{
	return pprof_cum_index_ns(file, "cpu", fn);
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

/* A profile as `go tool pprof -raw` prints it: each sample's count, CPU
 * (ns), tid label (0 if none: the frames that are not code have none) and
 * the functions of its frames (every Line of every Location, inlined ones
 * included), leaf first. */
struct raw_sample {
	long long count, ns;
	long tid;
	int nfn;
	int fn[256]; /* indexes into raw_profile.names */
};

struct raw_profile {
	struct raw_sample *s;
	size_t n;
	char (*names)[128];
	size_t nnames;
};

static inline int raw_name_id(struct raw_profile *p, const char *name, size_t len)
{
	if (len > 127)
		len = 127;
	for (size_t i = 0; i < p->nnames; i++)
		if (!strncmp(p->names[i], name, len) && p->names[i][len] == '\0')
			return (int)i;
	p->names = realloc(p->names, (p->nnames + 1) * sizeof *p->names);
	CHECK(p->names, "oom");
	memcpy(p->names[p->nnames], name, len);
	p->names[p->nnames][len] = '\0';
	return (int)p->nnames++;
}

/* Reads file with `go tool pprof -raw` into *p (raw_free frees it). */
static inline void raw_read(const char *file, struct raw_profile *p)
{
	char *text = pprof_run("-raw", file);
	CHECK(text, "go tool pprof -raw %s failed", file);
	memset(p, 0, sizeof *p);
	/* Locations first: "ID: 0xADDR [M=N] NAME FILE:LINE s=N", then one
	 * line "NAME FILE:LINE s=N" per further (outer) Line. */
	size_t maxloc = 0;
	int *locfn = NULL; /* per location id: up to 16 function ids, -1 ended */
	char *loc = strstr(text, "\nLocations\n");
	char *maps = loc ? strstr(loc, "\nMappings\n") : NULL;
	CHECK(loc, "no Locations in -raw output of %s", file);
	long cur = -1;
	int curn = 0;
	for (char *line = loc + 11; line && *line && (!maps || line < maps);) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[1024];
		snprintf(buf, sizeof buf, "%.*s", (int)len, line);
		line = nl ? nl + 1 : NULL;
		char *q = buf;
		while (*q == ' ')
			q++;
		char *colon = strchr(q, ':');
		char *name;
		if (colon && q[0] >= '0' && q[0] <= '9' && colon[1] == ' ' && strspn(q, "0123456789") == (size_t)(colon - q)) {
			cur = strtol(q, NULL, 10);
			curn = 0;
			if ((size_t)cur >= maxloc) {
				size_t m = (size_t)cur * 2 + 16;
				locfn = realloc(locfn, m * 16 * sizeof *locfn);
				CHECK(locfn, "oom");
				for (size_t i = maxloc * 16; i < m * 16; i++)
					locfn[i] = -1;
				maxloc = m;
			}
			name = colon + 2;
			name += strcspn(name, " "); /* the address */
			while (*name == ' ')
				name++;
			if (!strncmp(name, "M=", 2)) {
				name += strcspn(name, " ");
				while (*name == ' ')
					name++;
			}
		} else {
			name = q;
		}
		if (cur < 0 || !*name)
			continue;
		/* NAME ends before the last " FILE:LINE s=N". */
		char *s_at = strstr(name, " s=");
		char *end = s_at ? s_at : name + strlen(name);
		while (end > name && end[-1] != ' ')
			end--; /* FILE:LINE */
		while (end > name && end[-1] == ' ')
			end--;
		if (end > name && curn < 16)
			locfn[cur * 16 + curn++] = raw_name_id(p, name, (size_t)(end - name));
	}
	char *smp = strstr(text, "samples/count cpu/nanoseconds\n");
	CHECK(smp && (!loc || smp < loc), "no Samples in -raw output of %s", file);
	size_t cap = 0;
	for (char *line = strchr(smp, '\n') + 1; line && line < loc;) {
		char *nl = strchr(line, '\n');
		char *e, *f;
		long long c = strtoll(line, &e, 10), v = strtoll(e, &f, 10);
		if (e != line && f != e && *f == ':') {
			if (p->n == cap) {
				cap = cap ? 2 * cap : 256;
				p->s = realloc(p->s, cap * sizeof *p->s);
				CHECK(p->s, "oom");
			}
			struct raw_sample *r = &p->s[p->n++];
			memset(r, 0, sizeof *r);
			r->count = c;
			r->ns = v;
			char *q = f + 1;
			for (;;) {
				long id = strtol(q, &e, 10);
				if (e == q)
					break;
				q = e;
				for (int k = 0; id >= 0 && (size_t)id < maxloc && k < 16 && locfn[id * 16 + k] >= 0; k++)
					if (r->nfn < 256)
						r->fn[r->nfn++] = locfn[id * 16 + k];
			}
		} else if (p->n) {
			char *t = strstr(line, "tid:[");
			if (t && (!nl || t < nl))
				p->s[p->n - 1].tid = strtol(t + 5, NULL, 10);
		}
		line = nl ? nl + 1 : NULL;
	}
	free(locfn);
	free(text);
}

static inline void raw_free(struct raw_profile *p)
{
	free(p->s);
	free(p->names);
	memset(p, 0, sizeof *p);
}

/* Does sample r have a frame of a function whose name starts with prefix? */
static inline int raw_has(const struct raw_profile *p, const struct raw_sample *r, const char *prefix)
{
	for (int i = 0; i < r->nfn; i++)
		if (!strncmp(p->names[r->fn[i]], prefix, strlen(prefix)))
			return 1;
	return 0;
}

/* The CPU (ns) and count of the samples with a frame of a function named
 * with prefix (tid 0: of every thread). */
static inline long long raw_cum_ns(const struct raw_profile *p, const char *prefix, long tid, long long *count)
{
	long long ns = 0, c = 0;
	for (size_t i = 0; i < p->n; i++)
		if ((!tid || p->s[i].tid == tid) && raw_has(p, &p->s[i], prefix)) {
			ns += p->s[i].ns;
			c += p->s[i].count;
		}
	if (count)
		*count = c;
	return ns;
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

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

#include <zlib.h>

/* Rewrites a cache file (src/base/cachefile.h: its contents, then their
 * CRC-32) with data[0..n) at off and its CRC made good again: a forgery
 * that only the checks of the contents themselves can refuse. */
static inline void forge_cache_file(const char *path, size_t off, const void *data, size_t n)
{
	size_t len;
	unsigned char *b = read_file(path, &len);
	CHECK(len >= 4 && off + n <= len - 4, "offset %zu beyond %s", off, path);
	memcpy(b + off, data, n);
	uint32_t crc = (uint32_t)crc32(0, b, (uInt)(len - 4));
	memcpy(b + len - 4, &crc, 4);
	write_file(path, b, len);
	free(b);
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

/* Threads born and ending, four at a time, each burning ms of CPU in
 * work (and named `name`, if not NULL), from churn_start() until
 * churn_stop(): each holds cpuprof's locks a moment (registration and
 * release, names from the perf engine's comm records and from threads
 * that end). */
#include <pthread.h>
#include <stdatomic.h>
struct churn {
	_Atomic int quit;
	void (*work)(double ms);
	double ms;
	const char *name;
	pthread_t thread;
};

static inline void *churn_one_(void *arg)
{
	const struct churn *c = arg;
	if (c->name)
		pthread_setname_np(pthread_self(), c->name);
	c->work(c->ms);
	return NULL;
}

static inline void *churn_loop_(void *arg)
{
	struct churn *c = arg;
	while (!atomic_load(&c->quit)) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, churn_one_, c), 0);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	return NULL;
}

static inline void churn_start(struct churn *c, void (*work)(double ms), double ms, const char *name)
{
	atomic_store(&c->quit, 0);
	c->work = work;
	c->ms = ms;
	c->name = name;
	CHECK_EQ(pthread_create(&c->thread, NULL, churn_loop_, c), 0);
}

static inline void churn_stop(struct churn *c)
{
	atomic_store(&c->quit, 1);
	pthread_join(c->thread, NULL);
}

#endif
