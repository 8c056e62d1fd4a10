/*
 * threads.c -- the registry of the threads a signal engine samples.  Each
 * owns a slot in a table that is mapped once and never unmapped (the
 * handler may hold a stale slot pointer; `gen` tells it so).  Threads made
 * with pthread_create() arm themselves in a trampoline and disarm in a
 * thread-specific-data destructor when they exit; threads found in
 * /proc/self/task at start, which we cannot hook, are released by
 * cp_threads_sweep() once they are gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/libc.h"
#include "profile/names.h"
#include "threads.h"
#include "sig/sigprog.h"

#define MAX_THREADS 32768

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct cp_engine *reg_engine; /* non-NULL while arming; under reg_lock */
static int reg_signo;
static pid_t reg_keeper; /* cpuprof's own thread: never armed */
static pid_t reg_starter; /* the thread that started the profile, and */
static int reg_starter_blocks; /* whether it blocked the signal before */
static uint64_t reg_period;
static struct cp_engine_stats reg_stats;
/* Read without the lock by pthread_create() as a hint. */
static _Atomic int arming;
/* Threads log their CPU clock as they end (cp_threads_exit_clocks). */
#define EXIT_LOG 4096
static _Atomic int exit_clocks;
static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { pid_t tid; uint64_t cpu_ns; } exit_log[EXIT_LOG];
static size_t exit_n;
static pthread_key_t clock_key;
static pthread_once_t clock_key_once = PTHREAD_ONCE_INIT;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *unused);
static void make_exit_key(void)
{
	if (pthread_key_create(&exit_key, on_thread_exit) != 0)
		exit_key = (pthread_key_t)-1;
}

/* Allocates the thread table (once per process).  0 or -ENOMEM. */
static int threads_init(void)
{
	pthread_once(&exit_key_once, make_exit_key);
	if (cp_sig.threads)
		return 0;
	void *p = mmap(NULL, MAX_THREADS * sizeof(struct cp_thread), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	cp_sig.threads = p;
	cp_sig.nthreads = MAX_THREADS;
	return 0;
}

/* A free slot, made visible to the handler's scan; NULL if the table is
 * full.  Under reg_lock. */
static struct cp_thread *slot_alloc(void)
{
	size_t hwm = atomic_load(&cp_sig.hwm);
	for (size_t i = 0; i < hwm; i++)
		if (atomic_load(&cp_sig.threads[i].state) == CP_T_FREE)
			return &cp_sig.threads[i];
	if (hwm == cp_sig.nthreads)
		return NULL;
	struct cp_thread *t = &cp_sig.threads[hwm];
	atomic_store(&cp_sig.hwm, hwm + 1);
	return t;
}

static struct cp_thread *slot_by_tid(pid_t tid)
{
	size_t hwm = atomic_load(&cp_sig.hwm);
	for (size_t i = 0; i < hwm; i++) {
		struct cp_thread *t = &cp_sig.threads[i];
		if (atomic_load(&t->state) == CP_T_LIVE && t->tid == tid)
			return t;
	}
	return NULL;
}

/* Does thread tid have signal sig blocked (/proc/self/task/TID/status)? */
static int blocks_signal(pid_t tid, int sig)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	const char *p = strstr(buf, "\nSigBlk:");
	if (!p)
		return 0;
	unsigned long long mask = strtoull(p + 8, NULL, 16);
	return sig > 0 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/* Arms thread tid with the current engine; `self` says it is the calling
 * thread, whose stack bounds can be read directly.  Under reg_lock. */
static struct cp_thread *arm_locked(pid_t tid, int self)
{
	struct cp_thread *t = slot_by_tid(tid);
	if (t)
		return t;
	int err = -ENOSPC;
	if ((t = slot_alloc()) != NULL) {
		t->tid = tid;
		memset(t->engine_state, 0, sizeof t->engine_state);
		t->own = self;
		t->stack_lo = t->stack_hi = 0;
		t->last_ns = t->seen_ns = 0;
		t->name[0] = '\0';
		pthread_attr_t a;
		if (self && pthread_getattr_np(pthread_self(), &a) == 0) {
			void *addr;
			size_t size;
			if (pthread_attr_getstack(&a, &addr, &size) == 0) {
				t->stack_lo = (uintptr_t)addr;
				t->stack_hi = (uintptr_t)addr + size;
			}
			pthread_attr_destroy(&a);
		}
		/* The sample weights start at the CPU time used so far. */
		err = cp_thread_cpu_ns(tid, &t->last_ns);
		t->seen_ns = t->last_ns;
		if (err == 0)
			err = reg_engine->arm(t, reg_signo, reg_period);
		if (err == 0) {
			atomic_store_explicit(&t->state, CP_T_LIVE, memory_order_release);
			reg_stats.armed++;
			if (!self && (tid == reg_starter ? reg_starter_blocks : blocks_signal(tid, reg_signo)))
				reg_stats.blocked++;
			return t;
		}
	}
	reg_stats.unarmed++;
	if (!reg_stats.first_error)
		reg_stats.first_error = err;
	return NULL;
}

/* The CPU thread t has used since its last sample (the handler moves
 * t->last_ns to the thread's CPU clock at every sample).  A thread that
 * has exited cannot be read: for it, what it had used when the registry
 * last saw it alive (cp_threads_sweep reads the threads it cannot hook
 * every second).  Under reg_lock. */
static uint64_t unsampled_ns(struct cp_thread *t)
{
	uint64_t ns = 0;
	if (cp_thread_cpu_ns(t->tid, &ns) == 0)
		t->seen_ns = ns;
	uint64_t last = __atomic_load_n(&t->last_ns, __ATOMIC_RELAXED);
	return t->seen_ns > last ? t->seen_ns - last : 0;
}

/* Under reg_lock; the handler cannot be sampling into t (it is the
 * calling thread with the signal blocked, a dead thread, or the profile is
 * inactive). */
static void release_locked(struct cp_thread *t)
{
	reg_engine->disarm(t);
	if (t->name[0])
		cp_names_set(t->tid, t->name);
	reg_stats.unsampled_ns += unsampled_ns(t);
	atomic_fetch_add(&t->gen, 1);
	atomic_store_explicit(&t->state, CP_T_FREE, memory_order_release);
}

static void arm_self_locked(void)
{
	struct cp_thread *t = arm_locked((pid_t)syscall(SYS_gettid), 1);
	if (t) {
		cp_tls_gen = atomic_load(&t->gen);
		cp_tls_slot = t;
		if (exit_key != (pthread_key_t)-1)
			pthread_setspecific(exit_key, t);
	}
}

int cp_threads_begin(const struct cp_engine *e, const struct cp_engine_conf *c)
{
	if (threads_init() < 0)
		return -ENOMEM;
	pthread_mutex_lock(&reg_lock);
	reg_engine = e;
	reg_signo = c->signo;
	reg_period = c->period_ns;
	reg_keeper = c->keeper_tid;
	reg_starter = c->starter_tid;
	reg_starter_blocks = c->starter_blocks;
	memset(&reg_stats, 0, sizeof reg_stats);
	atomic_store(&arming, 1);
	DIR *d = opendir("/proc/self/task");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			if (*end == '\0' && tid > 0 && tid != reg_keeper)
				arm_locked((pid_t)tid, 0);
		}
		closedir(d);
	}
	int rc = reg_stats.armed ? 0 : reg_stats.first_error ? reg_stats.first_error : -ENODEV;
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void cp_threads_end(void)
{
	pthread_mutex_lock(&reg_lock);
	atomic_store(&arming, 0);
	size_t hwm = atomic_load(&cp_sig.hwm);
	for (size_t i = 0; reg_engine && i < hwm; i++)
		if (atomic_load(&cp_sig.threads[i].state) == CP_T_LIVE)
			release_locked(&cp_sig.threads[i]);
	reg_engine = NULL;
	pthread_mutex_unlock(&reg_lock);
}

int cp_threads_register_self(void)
{
	int rc = 0;
	pthread_mutex_lock(&reg_lock);
	if (reg_engine) {
		uint64_t before = reg_stats.unarmed;
		arm_self_locked();
		if (reg_stats.unarmed != before)
			rc = reg_stats.first_error ? reg_stats.first_error : -EAGAIN;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void cp_threads_sweep(void)
{
	pid_t pid = getpid();
	pthread_mutex_lock(&reg_lock);
	size_t hwm = atomic_load(&cp_sig.hwm);
	for (size_t i = 0; reg_engine && i < hwm; i++) {
		struct cp_thread *t = &cp_sig.threads[i];
		if (atomic_load(&t->state) != CP_T_LIVE)
			continue;
		if (syscall(SYS_tgkill, pid, t->tid, 0) < 0 && errno == ESRCH) {
			release_locked(t);
		} else if (!t->own) {
			/* Its exit will not tell us its CPU time or its name. */
			cp_thread_cpu_ns(t->tid, &t->seen_ns);
			cp_names_get(t->tid, t->name);
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

void cp_threads_stats(struct cp_engine_stats *s)
{
	pthread_mutex_lock(&reg_lock);
	*s = reg_stats;
	/* Live threads: the CPU since their last sample so far.  A sample
	 * the drain has not yet moved into the table may have just moved
	 * last_ns past it: a flushed profile can miss up to one sample per
	 * thread; the one written at stop, with every handler done, cannot. */
	size_t hwm = atomic_load(&cp_sig.hwm);
	for (size_t i = 0; reg_engine && i < hwm; i++)
		if (atomic_load(&cp_sig.threads[i].state) == CP_T_LIVE)
			s->unsampled_ns += unsampled_ns(&cp_sig.threads[i]);
	pthread_mutex_unlock(&reg_lock);
}

void cp_threads_forget(void)
{
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&exit_lock, NULL);
	exit_n = 0;
	atomic_store(&exit_clocks, 0);
	atomic_store(&arming, 0);
	reg_engine = NULL;
	size_t hwm = atomic_load(&cp_sig.hwm);
	for (size_t i = 0; i < hwm; i++) {
		struct cp_thread *t = &cp_sig.threads[i];
		atomic_fetch_add(&t->gen, 1);
		atomic_store(&t->state, CP_T_FREE);
	}
	cp_tls_slot = NULL;
}

/* Thread-specific-data destructor of threads that armed themselves: runs
 * in the exiting thread.  The sampling signal is blocked meanwhile so that
 * the handler never sees a half-released slot. */
static void on_thread_exit(void *unused)
{
	sigset_t block, old;
	sigemptyset(&block);
	pthread_mutex_lock(&reg_lock);
	if (reg_engine)
		sigaddset(&block, reg_signo);
	cp_real_sigmask(SIG_BLOCK, &block, &old);
	struct cp_thread *t = cp_tls_slot;
	if (reg_engine && t && atomic_load(&t->state) == CP_T_LIVE && atomic_load(&t->gen) == cp_tls_gen &&
	    t->tid == (pid_t)syscall(SYS_gettid)) {
		prctl(PR_GET_NAME, t->name, 0, 0, 0);
		release_locked(t);
	}
	cp_tls_slot = NULL;
	pthread_mutex_unlock(&reg_lock);
	cp_real_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- each thread's CPU clock at its end ---- */

/* Where an engine counts with a clock of its own (the perf task clock),
 * the threads the program makes while it samples report their CPU clock
 * as they end, for their tails: the kernel's task clock counts a little
 * less than the scheduler for a thread that sleeps often, and an ended
 * thread's clock cannot be read from outside.  A fixed log, taken by the
 * engine's thread; ends beyond it keep what the engine counted. */

static void on_thread_end(void *unused)
{
	struct timespec ts;
	if (!atomic_load(&exit_clocks) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&exit_lock);
	if (exit_n < EXIT_LOG) {
		exit_log[exit_n].tid = tid;
		exit_log[exit_n].cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		exit_n++;
	}
	pthread_mutex_unlock(&exit_lock);
}

static void make_clock_key(void)
{
	if (pthread_key_create(&clock_key, on_thread_end) != 0)
		clock_key = (pthread_key_t)-1;
}

void cp_threads_exit_clocks(int on)
{
	pthread_once(&clock_key_once, make_clock_key);
	pthread_mutex_lock(&exit_lock);
	exit_n = 0;
	pthread_mutex_unlock(&exit_lock);
	atomic_store(&exit_clocks, on && clock_key != (pthread_key_t)-1);
}

void cp_threads_take_exit_clocks(void (*fn)(pid_t tid, uint64_t cpu_ns))
{
	pthread_mutex_lock(&exit_lock);
	for (size_t i = 0; i < exit_n; i++)
		fn(exit_log[i].tid, exit_log[i].cpu_ns);
	exit_n = 0;
	pthread_mutex_unlock(&exit_lock);
}

/* ---- threads the program makes ---- */

struct start {
	void *(*fn)(void *);
	void *arg;
	uint64_t blocked; /* the creator's cp_prog_blocked */
};

static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	/* A thread inherits its creator's mask: the one the program believes
	 * in too. */
	cp_prog_blocked = s.blocked;
	if (atomic_load_explicit(&arming, memory_order_relaxed))
		cp_threads_register_self();
	if (atomic_load_explicit(&exit_clocks, memory_order_relaxed))
		pthread_setspecific(clock_key, &exit_clocks); /* any non-NULL value */
	return s.fn(s.arg);
}

int cp_threads_wrap(void *(**fn)(void *), void **arg)
{
	if (!atomic_load_explicit(&arming, memory_order_relaxed) &&
	    !atomic_load_explicit(&exit_clocks, memory_order_relaxed) && !cp_prog_blocked)
		return 0;
	struct start *s = malloc(sizeof *s);
	if (!s)
		return 0;
	s->fn = *fn;
	s->arg = *arg;
	s->blocked = cp_prog_blocked;
	*fn = trampoline;
	*arg = s;
	return 1;
}

void cp_threads_unwrap(void *arg)
{
	free(arg);
}

int cp_threads_spawn_internal(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	cp_real_sigmask(SIG_SETMASK, &all, &old);
	int rc = cp_real_pthread_create(th, NULL, fn, arg);
	cp_real_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}
