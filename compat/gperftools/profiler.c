/*
 * profiler.c -- gperftools' CPU-profiler interface (gperftools/profiler.h)
 * on cpuprof's record stream.  A start opens the file first, as gperftools
 * does (a file that cannot be written fails the start and keeps the
 * program unprofiled), then starts a cpuprof stream; a reader thread of
 * ours, in which no signal handler ever runs, reads the stream's {count,
 * pc...} records into the table of distinct stacks; a
 * stop ends the stream, waits until the reader has read it to its end and
 * writes the binary profile (legacy.c).  A pprof profile is written by
 * cpuprof itself at the end of the stream, and the reader only counts.
 *
 * Counts are cpuprof's: sampling periods of CPU time, so a sample that
 * stands for two periods counts 2 in the file and in samples_gathered.
 *
 * Locks: api_lock serialises start, stop and flush; tab_lock guards
 * the stack table between the reader and the writers (always taken after
 * api_lock).  What ProfilerGetCurrentState() reads is published under a
 * sequence counter, so that it takes no lock and may run in a handler.
 *
 * fork: a child does not continue the parent's profile (cpuprof forgets
 * it in the child) and never writes the parent's file, which gperftools'
 * children overwrite at their exit.  It may start its own; a child that
 * execs a program with this library starts one from CPUPROFILE, into
 * FILE_<pid> (environ.c).  Continuing the profile in every child would
 * cost each fork() 4-5 ms here, thirty times a fork's own cost (cpuprof
 * builds its unwind tables anew in a child), a price fork+exec callers
 * could not avoid.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cpuprof.h>
#include <gperftools/profiler.h>

#include "environ.h"
#include "legacy.h"
#include "gp_session.h"
#include "legacy_stacks.h"

#define GPT_API __attribute__((visibility("default")))

/* Words per cpuprof_read_stream() call: many records at once, and at
 * least one of cpuprof's deepest (1024 frames) and 4 more. */
#define STREAM_WORDS 65536

/* The profile being taken.  Under api_lock; the reader thread reads
 * `words` and `cap`, fixed while it runs. */
static struct {
	int running;
	enum gpt_origin origin;
	int pprof;          /* cpuprof writes `path` as pprof; else fd gets the binary format */
	int fd;
	int hz;
	char name[sizeof ((struct ProfilerState *)0)->profile_name]; /* as the program gave it */
	char path[PATH_MAX]; /* absolute: what fd is, or what cpuprof writes */
	pthread_t reader;
	uint64_t *words;
	size_t cap;
	int stream_rc;      /* the reader's last cpuprof_read_stream() result */
	int finished;       /* at exit: no profile may start any more */
} prof = { .fd = -1 }; /* the profile being taken */

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpt_stacks tab; /* under tab_lock */

/* What ProfilerGetCurrentState() reports.  Written under api_lock between
 * two increments of gen (odd while writing); samples by the reader. */
static struct {
	_Atomic unsigned gen;
	_Atomic int enabled;
	_Atomic long long start_time;
	char name[sizeof ((struct ProfilerState *)0)->profile_name];
	_Atomic uint64_t samples;
	_Atomic uint64_t lost;
} pub;

/* The CPUPROFILESIGNAL switch: the base of its file names, how many it has
 * started, and whether it has said that it leaves a profile of the
 * program's alone.  Under api_lock. */
static struct {
	char base[PATH_MAX];
	unsigned count;
	int warned;
} sw;

/* Under api_lock. */
static void publish(int enabled, const char *name)
{
	atomic_fetch_add_explicit(&pub.gen, 1, memory_order_acq_rel);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&pub.enabled, enabled, memory_order_relaxed);
	atomic_store_explicit(&pub.start_time, enabled ? (long long)time(NULL) : 0, memory_order_relaxed);
	snprintf(pub.name, sizeof pub.name, "%s", enabled ? name : "");
	if (enabled) {
		atomic_store_explicit(&pub.samples, 0, memory_order_relaxed);
		atomic_store_explicit(&pub.lost, 0, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&pub.gen, 1, memory_order_release);
}

/* Is `name` a pprof file by its name: ".pb.gz" at the end, or followed
 * only by the numbered (".3") and per-process ("_4242") suffixes that the
 * switch and child processes add? */
static int pprof_by_name(const char *name)
{
	const char *p = NULL;
	for (const char *q = name; (q = strstr(q, ".pb.gz")) != NULL; q++)
		p = q;
	if (!p)
		return 0;
	p += strlen(".pb.gz");
	return strspn(p, "._0123456789") == strlen(p);
}

/* `name` made absolute into out[PATH_MAX] (a later chdir() must not move
 * the profile).  Returns 0 or -1 with errno set. */
static int absolute(const char *name, char *out)
{
	char cwd[PATH_MAX];
	int n;
	if (name[0] == '/')
		n = snprintf(out, PATH_MAX, "%s", name);
	else if (getcwd(cwd, sizeof cwd))
		n = snprintf(out, PATH_MAX, "%s/%s", cwd, name);
	else
		return -1;
	if (n < 0 || n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Adds the records of words[0..n) to the table.  *hdr says whether the
 * stream's header {3, 0, hz} has been seen. */
static void consume(const uint64_t *w, size_t n, int *hdr)
{
	uint64_t added = 0, lost = 0;
	pthread_mutex_lock(&tab_lock);
	for (size_t i = 0; i + 3 <= n;) {
		uint64_t len = w[i];
		if (len < 3 || len > n - i)
			break; /* not a record: cannot happen */
		if (!*hdr) {
			*hdr = 1; /* {3, 0, hz}: the rate is ours */
		} else if (len == 4 && w[i + 2] == 0) {
			lost += w[i + 3]; /* {4, 0, 0, lost} */
		} else if (gpt_stacks_add(&tab, &w[i + 3], (uint32_t)(len - 3), w[i + 2]) == 0) {
			added += w[i + 2];
		} else {
			lost++;
		}
		i += len;
	}
	pthread_mutex_unlock(&tab_lock);
	atomic_fetch_add_explicit(&pub.samples, added, memory_order_relaxed);
	atomic_fetch_add_explicit(&pub.lost, lost, memory_order_relaxed);
}

/* The reader thread: reads the stream until its end. */
static void *reader_main(void *unused)
{
	int hdr = 0, rc;
	size_t n;
	while ((rc = cpuprof_read_stream(prof.words, prof.cap, &n, 0)) == 0)
		consume(prof.words, n, &hdr);
	prof.stream_rc = rc < 0 ? rc : 0;
	return NULL;
}

/* Reads what is left of a stopped stream in the calling thread: used when
 * no reader thread could be made. */
static void drain_stream(void)
{
	size_t n;
	while (cpuprof_read_stream(prof.words, prof.cap, &n, 0) == 0) {
	}
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* glibc's pthread_create under its own name, for a fully static program
 * (as src/base/libc.c finds it for cpuprof: the drop-in is built on the
 * public API alone); weak, NULL where it is not linked in. */
extern int __pthread_create_2_1(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
	__attribute__((weak));

/* The C library's pthread_create(), past cpuprof's, whose threads a
 * timer engine arms while a profile starts: a thread of ours that blocks
 * every signal would only collect the engine's signals, queued.  (The
 * perf engine's events follow every new thread whatever makes it: there
 * the reader is sampled like any thread, its CPU the profiler's.) */
static create_fn real_create(void)
{
	static _Atomic(create_fn) f;
	create_fn c = atomic_load(&f);
	if (!c) {
		c = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (!c)
			c = __pthread_create_2_1 ? __pthread_create_2_1 : pthread_create;
		atomic_store(&f, c);
	}
	return c;
}

int gpt_spawn(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	create_fn create = real_create();
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Starts a profile into `name`.  Returns 1, or 0 with errno set.  Under
 * api_lock. */
static int start_locked(const char *name, enum gpt_origin origin)
{
	if (prof.finished || prof.running) {
		errno = EBUSY;
		return 0;
	}
	if (!name) {
		errno = EINVAL;
		return 0;
	}
	struct gpt_settings s;
	gpt_env_settings(&s);
	if (absolute(name, prof.path) < 0) {
		int e = errno;
		if (origin != GPT_BY_PROGRAM)
			gpt_warn("cannot turn on CPU profiling for '%s': %s; profiling disabled", name, strerror(e));
		errno = e;
		return 0;
	}
	prof.pprof = s.pprof ? s.pprof > 0 : pprof_by_name(name);

	/* The file is opened (and emptied) now, as gperftools does: a path
	 * that cannot be written fails here, not after the run. */
	prof.fd = open(prof.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (prof.fd < 0) {
		int e = errno;
		if (origin != GPT_BY_PROGRAM)
			gpt_warn("cannot turn on CPU profiling for '%s': %s; profiling disabled", name, strerror(e));
		errno = e;
		return 0;
	}
	if (prof.pprof) {
		close(prof.fd); /* cpuprof writes it at the end of the stream */
		prof.fd = -1;
	}
	prof.cap = STREAM_WORDS;
	prof.words = malloc(prof.cap * sizeof *prof.words);
	struct cpuprof_options o = { .hz = s.hz, .signal = s.signo, .engine = s.engine };
	int rc = prof.words ? cpuprof_start_stream(prof.pprof ? prof.path : NULL, &o) : -ENOMEM;
	if (rc < 0) {
		gpt_warn("cannot turn on CPU profiling for '%s': %s; profiling disabled", name,
			 prof.words ? cpuprof_last_error() : cpuprof_strerror(rc));
		goto fail;
	}
	if ((rc = gpt_spawn(&prof.reader, reader_main, NULL)) != 0) {
		gpt_warn("cannot turn on CPU profiling for '%s': no thread to read samples: %s; profiling disabled",
			 name, strerror(rc));
		cpuprof_stop();
		drain_stream();
		rc = -rc;
		goto fail;
	}
	prof.hz = s.hz;
	prof.origin = origin;
	prof.running = 1;
	snprintf(prof.name, sizeof prof.name, "%s", name);
	publish(1, name);
	return 1;
fail:
	if (prof.fd >= 0)
		close(prof.fd);
	prof.fd = -1;
	free(prof.words);
	prof.words = NULL;
	errno = rc == -EBUSY ? EBUSY : rc == -ENOMEM ? ENOMEM : ENODEV;
	return 0;
}

int gpt_start(const char *name, enum gpt_origin origin)
{
	pthread_mutex_lock(&api_lock);
	int ok = start_locked(name, origin);
	int e = errno;
	pthread_mutex_unlock(&api_lock);
	errno = e;
	return ok;
}

/* Stops the running profile and writes it.  Under api_lock. */
static void stop_locked(void)
{
	if (!prof.running)
		return;
	cpuprof_stop();
	pthread_join(prof.reader, NULL);
	size_t bytes = 0;
	if (!prof.pprof) {
		pthread_mutex_lock(&tab_lock);
		int rc = gpt_legacy_write(prof.fd, &tab, 1000000u / (unsigned)prof.hz, &bytes);
		pthread_mutex_unlock(&tab_lock);
		if (rc < 0)
			gpt_warn("cannot write %s: %s", prof.name, strerror(-rc));
		close(prof.fd);
		prof.fd = -1;
	} else {
		struct stat st;
		if (prof.stream_rc == 0 && stat(prof.path, &st) == 0)
			bytes = (size_t)st.st_size;
		/* cpuprof said why it could not write */
	}
	uint64_t samples = atomic_load(&pub.samples), lost = atomic_load(&pub.lost);
	/* gperftools' closing line, word for word: scripts look for it. */
	fprintf(stderr, "PROFILE: interrupts/evictions/bytes = %llu/%d/%zu\n", (unsigned long long)samples, 0, bytes);
	if (lost * 100 > samples + lost)
		gpt_warn("%s: %llu of %llu samples were lost (cpuprof's buffers were full)", prof.name,
			 (unsigned long long)lost, (unsigned long long)(samples + lost));
	pthread_mutex_lock(&tab_lock);
	gpt_stacks_free(&tab);
	pthread_mutex_unlock(&tab_lock);
	free(prof.words);
	prof.words = NULL;
	prof.running = 0;
	publish(0, NULL);
}

void gpt_stop(int final)
{
	pthread_mutex_lock(&api_lock);
	if (final)
		prof.finished = 1;
	stop_locked();
	pthread_mutex_unlock(&api_lock);
}

void gpt_switch_base(const char *base)
{
	pthread_mutex_lock(&api_lock);
	snprintf(sw.base, sizeof sw.base, "%s", base);
	pthread_mutex_unlock(&api_lock);
}

void gpt_switch(void)
{
	pthread_mutex_lock(&api_lock);
	if (prof.running && prof.origin == GPT_BY_SWITCH) {
		stop_locked();
	} else if (prof.running) {
		if (!sw.warned++)
			gpt_warn("CPUPROFILESIGNAL: a profile the program started is running; the signal leaves it alone");
	} else if (!prof.finished) {
		char name[PATH_MAX + 16];
		snprintf(name, sizeof name, "%s.%u", sw.base, sw.count++);
		start_locked(name, GPT_BY_SWITCH);
	}
	pthread_mutex_unlock(&api_lock);
}

/* In a forked child: its switch names its own files, BASE_<pid>.0 and
 * on, where gperftools' children would reuse the parent's names.  Under
 * api_lock. */
static void switch_after_fork(void)
{
	if (!sw.base[0])
		return;
	size_t len = strlen(sw.base);
	snprintf(sw.base + len, sizeof sw.base - len, "_%d", (int)getpid());
	sw.count = 0;
	sw.warned = 0;
}

/* ---- fork ---- */

/* Whether before_fork() got api_lock.  It never waits for it: cpuprof
 * itself forks (a child reads source lines while a pprof file is written,
 * in our reader thread or under ProfilerStop(), which holds api_lock and
 * waits for that thread).  glibc runs one fork's handlers at a time. */
static int fork_locked;

static void before_fork(void)
{
	fork_locked = pthread_mutex_trylock(&api_lock) == 0;
}

static void after_fork_parent(void)
{
	if (fork_locked)
		pthread_mutex_unlock(&api_lock);
}

/* The child has the forking thread only, and cpuprof has forgotten the
 * parent's profile.  What is left of it here is our copy: forgotten too,
 * never written.  The table and the buffer are the parent's pages, shared
 * copy-on-write, and may be in the middle of a change: they are left
 * alone, not freed.  The file descriptor (close-on-exec) is closed if no
 * start or stop was under way.  The switch names its files anew (its
 * thread is toggle.c's, by a fork handler that runs after this one). */
static void after_fork_child(void)
{
	int quiet = fork_locked;
	pthread_mutex_init(&api_lock, NULL);
	pthread_mutex_init(&tab_lock, NULL);
	if (prof.running) {
		if (quiet && prof.fd >= 0)
			close(prof.fd);
		prof.fd = -1;
		memset(&tab, 0, sizeof tab);
		prof.words = NULL;
		prof.running = 0;
		publish(0, NULL);
	}
	switch_after_fork();
}

void gpt_profiler_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- gperftools/profiler.h ---- */

GPT_API int ProfilerStart(const char *fname)
{
	return gpt_start(fname, GPT_BY_PROGRAM);
}

GPT_API int ProfilerStartWithOptions(const char *fname, const struct ProfilerOptions *options)
{
	static _Atomic int warned;
	int ok = gpt_start(fname, GPT_BY_PROGRAM);
	if (ok && options && options->filter_in_thread && !atomic_exchange(&warned, 1))
		gpt_warn("ProfilerStartWithOptions: filter_in_thread cannot be applied (cpuprof's sampling has no "
			 "hook for it); every thread is profiled");
	return ok;
}

GPT_API void ProfilerStop(void)
{
	gpt_stop(0);
}

/* Takes no lock that another thread could hold for long and allocates
 * nothing: a signal handler may call it.  If a start, stop or flush is
 * under way (in any thread, this one included) it does nothing: that one
 * writes the file. */
GPT_API void ProfilerFlush(void)
{
	int e = errno;
	if (pthread_mutex_trylock(&api_lock) != 0) {
		errno = e;
		return;
	}
	if (prof.running && !prof.pprof) {
		size_t bytes;
		pthread_mutex_lock(&tab_lock);
		gpt_legacy_write(prof.fd, &tab, 1000000u / (unsigned)prof.hz, &bytes);
		pthread_mutex_unlock(&tab_lock);
	}
	pthread_mutex_unlock(&api_lock);
	errno = e;
}

GPT_API void ProfilerEnable(void)
{
}

GPT_API void ProfilerDisable(void)
{
}

GPT_API int ProfilingIsEnabledForAllThreads(void)
{
	return atomic_load_explicit(&pub.enabled, memory_order_relaxed);
}

GPT_API void ProfilerRegisterThread(void)
{
	/* Threads found at start and pthread_create()'s are sampled anyway. */
	if (atomic_load_explicit(&pub.enabled, memory_order_relaxed))
		cpuprof_register_thread();
}

GPT_API void ProfilerGetCurrentState(struct ProfilerState *state)
{
	int e = errno;
	/* A reader that interrupted the writer (a handler in the thread that
	 * publishes) would wait for ever: it takes what it has after a few
	 * tries. */
	for (int tries = 0; tries < 1000; tries++) {
		unsigned g = atomic_load_explicit(&pub.gen, memory_order_acquire);
		state->enabled = atomic_load_explicit(&pub.enabled, memory_order_relaxed);
		state->start_time = (time_t)atomic_load_explicit(&pub.start_time, memory_order_relaxed);
		memcpy(state->profile_name, pub.name, sizeof state->profile_name);
		atomic_thread_fence(memory_order_acquire);
		if (!(g & 1) && atomic_load_explicit(&pub.gen, memory_order_relaxed) == g)
			break;
	}
	state->profile_name[sizeof state->profile_name - 1] = '\0';
	uint64_t n = state->enabled ? atomic_load_explicit(&pub.samples, memory_order_relaxed) : 0;
	state->samples_gathered = n > INT_MAX ? INT_MAX : (int)n;
	errno = e;
}
