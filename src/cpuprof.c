/*
 * cpuprof.c -- the profile's life: cpuprof_start() picks an engine and a
 * signal, installs the handler and arms every thread; a drain thread moves
 * samples from the ring into the stack table; cpuprof_stop() disarms,
 * waits out every running handler, hands the signal back and writes the
 * pprof file.  The record stream's reader (stream.c) replaces the drain
 * thread in stream mode.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cpuprof.h"
#include "pprof_write.h"
#include "rwmap.h"
#include "session.h"
#include "threads.h"
#include "unwind.h"

#define API __attribute__((visibility("default")))

#define DEFAULT_HZ 1000
#define MAX_HZ 100000
#define DEFAULT_DEPTH 128
#define MAX_DEPTH 1024
/* Ring cells: half of them absorb a burst while the drain thread wakes. */
#define RING_CELLS 2048
#define DRAIN_INTERVAL_MS 100
#define SWEEP_INTERVAL_NS 1000000000ll

struct cp_session cp_session;
pthread_mutex_t cp_tab_lock = PTHREAD_MUTEX_INITIALIZER;
#define P cp_session

/* Serialises start, stop and flush. */
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

/* Seams for tests (tests/unit_*.c link the static library): a ring of
 * this many cells instead of RING_CELLS, and no drain thread. */
size_t cp_test_ring_cells;
int cp_test_no_drain;
/* ... and a timer resolution to believe instead of the kernel's. */
long cp_test_timer_resolution_ns;

/* Timers coarser than this make a kernel "tick-bound". */
#define TICK_BOUND_NS 1000000

/* The whole process's voluntary context switches so far (each a thread
 * going to sleep: a wait, a sleep, blocking I/O) and its user-mode CPU. */
static void process_usage(long *waits, int64_t *user_ns)
{
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	getrusage(RUSAGE_SELF, &ru);
	*waits = ru.ru_nvcsw;
	*user_ns = (int64_t)ru.ru_utime.tv_sec * 1000000000 + (int64_t)ru.ru_utime.tv_usec * 1000;
}

int64_t cp_clock_ns(clockid_t c)
{
	struct timespec ts = { 0, 0 };
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

API const char *cpuprof_strerror(int code)
{
	switch (code) {
	case 0: return "success";
	case -EBUSY: return "a profile is already running, or its record stream is not read to its end";
	case -ESRCH: return "no profile is running";
	case -EINVAL: return "invalid option";
	case -ENODEV: return "no sampling engine works here";
	case -ENOMEM: return "out of memory";
	}
	return code < 0 ? strerror(-code) : "unknown code";
}

/* The stack table keeps the samples' flags as they are. */
_Static_assert(CP_SAMPLE_TRUNCATED == CP_STACK_TRUNCATED && CP_SAMPLE_LINK_REG == CP_STACK_LINK_REG,
	       "sample and stack flags differ");

void session_drain_locked(void)
{
	struct cp_ring *r = cp_sig.ring;
	struct cp_sample *s;
	while ((s = cp_ring_peek(r)) != NULL) {
		if (stacktab_add(&P.tab, s->pcs, s->n, s->flags, 1, s->weight_ns) < 0) {
			P.dropped++;
			P.dropped_ns += s->weight_ns;
		}
		cp_ring_release(r, s);
	}
}

static void *drain_main(void *unused)
{
	int64_t last_sweep = cp_clock_ns(CLOCK_MONOTONIC);
	struct pollfd pfd = { .fd = cp_sig.wake_fd, .events = POLLIN };
	while (!atomic_load(&P.drain_quit)) {
		if (poll(&pfd, 1, unwind_timeout_ms(DRAIN_INTERVAL_MS)) > 0) {
			uint64_t v;
			if (read(cp_sig.wake_fd, &v, sizeof v) < 0) {
				/* EAGAIN: another wake-up raced us; nothing to do */
			}
		}
		atomic_store(&cp_sig.wake_pending, 0);
		pthread_mutex_lock(&cp_tab_lock);
		session_drain_locked();
		pthread_mutex_unlock(&cp_tab_lock);
		int64_t now = cp_clock_ns(CLOCK_MONOTONIC);
		if (now - last_sweep >= SWEEP_INTERVAL_NS) {
			threads_sweep();
			last_sweep = now;
		}
		unwind_tick();
		/* Its own waits are not the program's (mean_run_ns). */
		struct rusage ru;
		if (getrusage(RUSAGE_THREAD, &ru) == 0)
			atomic_store(&P.drain_waits, ru.ru_nvcsw);
	}
	P.drain_cpu_ns = (uint64_t)cp_clock_ns(CLOCK_THREAD_CPUTIME_ID); /* read after the join */
	return NULL;
}

/* The CPU the profiler's own drain thread has used (it is never sampled). */
static uint64_t drain_cpu_ns(void)
{
	clockid_t c;
	if (!P.has_drain)
		return P.drain_cpu_ns;
	return pthread_getcpuclockid(P.drain, &c) == 0 ? (uint64_t)cp_clock_ns(c) : 0;
}

/* Does the program have a handler of its own for sig? */
static int program_handles(int sig)
{
	struct sigaction cur;
	if (sigaction(sig, NULL, &cur) < 0)
		return 0;
	if (cur.sa_flags & SA_SIGINFO)
		return cur.sa_sigaction != cp_sig_handler;
	return cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
}

/* A real-time signal below `below` nobody has a disposition for, searched
 * from the top (libraries that take one usually start at SIGRTMIN); 0 if
 * none. */
static int free_rt_signal(int below)
{
	for (int s = below - 1; s >= SIGRTMIN; s--) {
		struct sigaction cur;
		if (sigaction(s, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL)
			return s;
	}
	return 0;
}

/* The signal engine e would use: the one asked for, else SIGPROF, else
 * (the program handles SIGPROF itself) a free real-time signal; the
 * itimer engine can send nothing but SIGPROF and will not take the
 * program's.  0 with the reason in why if there is none. */
static int signal_for(const struct cp_engine *e, int asked, char *why, size_t len)
{
	if (asked)
		return asked;
	if (!program_handles(SIGPROF))
		return SIGPROF;
	if (e->kind == CP_ENGINE_ITIMER) {
		snprintf(why, len, "the program has its own SIGPROF handler, the only signal setitimer can send");
		return 0;
	}
	int s = free_rt_signal(SIGRTMAX + 1);
	if (!s)
		snprintf(why, len, "SIGPROF has the program's handler and no real-time signal is free");
	return s;
}

/* The resolution of the kernel's timers: 1 ns with high-resolution timers,
 * the tick (4 ms at HZ=250) on a kernel without them, or booted with
 * highres=off, where every CPU-time timer fires only at the tick. */
static long timer_resolution_ns(void)
{
	struct timespec r;
	if (cp_test_timer_resolution_ns)
		return cp_test_timer_resolution_ns;
	if (clock_getres(CLOCK_MONOTONIC, &r) < 0)
		return 0;
	return r.tv_sec * 1000000000l + r.tv_nsec;
}

/* Every engine, in the order "auto" tries them where the kernel's timers
 * are fine: the task clock fires on time and needs no PMU. */
static const struct cp_engine *const engines[] = { &cp_engine_perf, &cp_engine_timer, &cp_engine_itimer,
						   &cp_engine_hw, NULL };
/* ... and where they are tick-bound.  There sleeps end at ticks and every
 * timer fires at one, so threads that work less than a tick between
 * sleeps are sampled at the same moments of their work: only a hardware
 * counter's overflow lands anywhere in it.  Then the timer engine: its
 * signal comes on the way out of the kernel and charges the system call
 * that was running, where the task clock's (user mode only unless
 * privileged) raises nothing and its CPU lands on whatever user code runs
 * next. */
static const struct cp_engine *const ticked[] = { &cp_engine_hw, &cp_engine_timer, &cp_engine_perf,
						  &cp_engine_itimer, NULL };

int cp_engine_known(const char *name)
{
	if (!strcmp(name, "auto"))
		return 1;
	for (size_t i = 0; engines[i]; i++)
		if (!strcmp(name, engines[i]->name))
			return 1;
	return 0;
}

/* Picks the engine named `want` and its signal, recording why each better
 * engine was not used. */
static const struct cp_engine *choose_engine(const char *want, int asked_signo, uint64_t period, int *signo)
{
	int auto_ = !strcmp(want, "auto");
	long res = P.timer_res_ns;
	const struct cp_engine *const *order = auto_ && res > TICK_BOUND_NS ? ticked : engines;
	size_t used = 0;
	P.engine_reason[0] = '\0';
	if (order == ticked)
		used = (size_t)snprintf(P.engine_reason, sizeof P.engine_reason,
					"the kernel's timers are tick-bound (resolution %ld ns): hw and timer tried before perf",
					res);
	for (size_t i = 0; order[i]; i++) {
		const struct cp_engine *e = order[i];
		if (auto_ ? e == &cp_engine_hw && order != ticked : strcmp(want, e->name) != 0)
			continue;
		char why[256] = "";
		*signo = signal_for(e, asked_signo, why, sizeof why);
		int rc = *signo ? e->probe(*signo, period, why, sizeof why) : -ENODEV;
		/* A real-time signal of our own choice that the system cannot
		 * deliver (qemu-user has no host signal for SIGRTMAX-1 and
		 * SIGRTMAX) is refused by timer_create with EINVAL: try the
		 * free ones below. */
		while (rc == -EINVAL && e->kind == CP_ENGINE_TIMER && !asked_signo && *signo >= SIGRTMIN) {
			int next = free_rt_signal(*signo);
			if (!next)
				break;
			*signo = next;
			rc = e->probe(*signo, period, why, sizeof why);
		}
		if (rc == 0)
			return e;
		int n = snprintf(P.engine_reason + used, sizeof P.engine_reason - used, "%s%s: %s",
				 used ? "; " : "", e->name, why);
		if (n > 0 && (size_t)n < sizeof P.engine_reason - used)
			used += (size_t)n;
	}
	return NULL;
}

static int check_options(const struct cpuprof_options *o, int *hz, const char **engine, int *signo,
			 unsigned *depth, int *unwind)
{
	*unwind = unwind_mode_parse(o && o->unwind ? o->unwind : "auto");
	if (*unwind < 0)
		return -EINVAL;
	*hz = o && o->hz ? o->hz : DEFAULT_HZ;
	*engine = o && o->engine ? o->engine : "auto";
	*signo = o ? o->signal : 0;
	*depth = o && o->max_depth ? (unsigned)o->max_depth : DEFAULT_DEPTH;
	if (*hz < 1 || *hz > MAX_HZ || (o && o->max_depth < 0) || *depth > MAX_DEPTH)
		return -EINVAL;
	if (!cp_engine_known(*engine))
		return -EINVAL;
	/* Signals that cannot be caught or that mean a fault are refused. */
	if (*signo && (*signo < 1 || *signo > SIGRTMAX || *signo == SIGKILL || *signo == SIGSTOP ||
		       *signo == SIGSEGV || *signo == SIGBUS || *signo == SIGILL || *signo == SIGFPE))
		return -EINVAL;
	return 0;
}

void session_release(void)
{
	unwind_stop(1);
	cp_ring_destroy(cp_sig.ring);
	cp_sig.ring = NULL;
	rwmap_free((struct cp_rwmap *)cp_sig.rwmap);
	cp_sig.rwmap = NULL;
	if (cp_sig.wake_fd >= 0)
		close(cp_sig.wake_fd);
	cp_sig.wake_fd = -1;
	stacktab_free(&P.tab);
	free(P.path);
	P.path = NULL;
}

/* Lowers `active` and waits until no handler is past its entry check.
 * Handlers never block, so this is short unless a thread is stopped in
 * one (a debugger); returns 0 if handlers are still running after a
 * generous wait, and the caller must then leak what they may read. */
static int quiesce_handlers(void)
{
	atomic_store(&cp_sig.active, 0);
	for (int i = 0; i < 20000; i++) {
		if (atomic_load(&cp_sig.inflight) == 0)
			return 1;
		if (i < 100)
			sched_yield();
		else
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	return 0;
}

/* Discards sampling signals still pending in any thread (setting SIG_IGN
 * does that), then restores the disposition found at start, exactly, if
 * ours is still installed. */
static void hand_back_signal(void)
{
	struct sigaction cur, ign;
	if (sigaction(cp_sig.signo, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == cp_sig_handler) {
		memset(&ign, 0, sizeof ign);
		ign.sa_handler = SIG_IGN;
		sigaction(cp_sig.signo, &ign, NULL);
		sigaction(cp_sig.signo, &cp_sig.prev, NULL);
	}
}

/* Stops sampling: disarms every thread, waits out the handlers and hands
 * the signal back.  Returns whether the handlers finished (see
 * quiesce_handlers).  Under api_lock. */
static int stop_sampling(void)
{
	if (P.engine->stop)
		P.engine->stop();
	int quiet = quiesce_handlers();
	threads_end();
	hand_back_signal();
	if (P.has_drain) {
		atomic_store(&P.drain_quit, 1);
		uint64_t one = 1;
		if (write(cp_sig.wake_fd, &one, sizeof one) < 0) {
			/* the drain thread also wakes on its own */
		}
		pthread_join(P.drain, NULL);
		P.has_drain = 0;
	}
	P.mono1 = cp_clock_ns(CLOCK_MONOTONIC);
	P.cpu1 = cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	process_usage(&P.waits1, &P.user1);
	P.running = 0;
	return quiet;
}

/* Starts a profile into path (NULL: none), in stream mode or not. */
static int start(const char *path, int stream, const struct cpuprof_options *opts)
{
	int hz, signo, asked, rc, unwind;
	unsigned depth;
	const char *want;

	if ((rc = check_options(opts, &hz, &want, &asked, &depth, &unwind)) < 0)
		return rc;
	pthread_mutex_lock(&api_lock);
	pthread_mutex_lock(&cp_tab_lock);
	int busy = P.running || P.stream_open;
	pthread_mutex_unlock(&cp_tab_lock);
	if (busy) {
		pthread_mutex_unlock(&api_lock);
		return -EBUSY;
	}
	uint64_t period = 1000000000u / (unsigned)hz;
	if ((rc = threads_init()) < 0)
		goto out;
	P.timer_res_ns = timer_resolution_ns();
	P.engine = choose_engine(want, asked, period, &signo);
	if (!P.engine) {
		rc = -ENODEV;
		goto out;
	}
	P.path = path ? strdup(path) : NULL;
	stacktab_init(&P.tab);
	cp_sig.ring = cp_ring_create(cp_test_ring_cells ? cp_test_ring_cells : RING_CELLS, depth);
	cp_sig.rwmap = rwmap_snapshot();
	cp_sig.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if ((path && !P.path) || !cp_sig.ring || cp_sig.wake_fd < 0) {
		rc = -ENOMEM;
		session_release();
		goto out;
	}
	cp_sig.engine = P.engine->kind;
	cp_sig.signo = signo;
	cp_sig.period_ns = period;
	cp_sig.max_depth = depth;
	atomic_store(&cp_sig.samples, 0);
	atomic_store(&cp_sig.lost, 0);
	atomic_store(&cp_sig.lost_ns, 0);
	atomic_store(&cp_sig.foreign, 0);
	atomic_store(&cp_sig.wake_pending, 0);
#ifdef CPUPROF_BENCH
	atomic_store(&cp_sig.bench_handler_ns, 0);
	atomic_store(&cp_sig.bench_handler_calls, 0);
	atomic_store(&cp_sig.bench_handler_slow, 0);
#endif
	P.dropped = P.dropped_ns = 0;
	P.drain_cpu_ns = 0;
	P.hz = hz;
	P.stream = stream;
	P.hdr_sent = 0;
	P.lost_sent = 0;
	P.carry_ns = 0;
	P.mono1 = P.cpu1 = 0;
	P.waits1 = P.user1 = 0;
	atomic_store(&P.drain_waits, 0);
	/* The unwind tables are built before the first sample can be taken. */
	unwind_start(unwind);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = cp_sig_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, signo);
	if (sigaction(signo, &sa, &cp_sig.prev) < 0) {
		rc = -errno;
		session_release();
		goto out;
	}
	atomic_store(&cp_sig.active, 1);
	P.wall0 = cp_clock_ns(CLOCK_REALTIME);
	P.mono0 = P.last_sweep = cp_clock_ns(CLOCK_MONOTONIC);
	P.cpu0 = cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	process_usage(&P.waits0, &P.user0);
	P.running = 1;
	threads_begin(P.engine, signo, period);
	if (P.engine->start && (rc = P.engine->start(signo, period)) < 0)
		goto undo;
	/* In stream mode the stream's reader drains the ring. */
	atomic_store(&P.drain_quit, 0);
	if (!stream && !cp_test_no_drain) {
		if ((rc = threads_spawn_internal(&P.drain, drain_main, NULL)) < 0)
			goto undo;
		P.has_drain = 1;
	}
	if (stream) {
		pthread_mutex_lock(&cp_tab_lock);
		P.stream_open = 1;
		pthread_mutex_unlock(&cp_tab_lock);
	}
	pthread_mutex_unlock(&api_lock);
	return 0;
undo:
	if (stop_sampling())
		session_release();
out:
	pthread_mutex_unlock(&api_lock);
	return rc;
}

API int cpuprof_start(const char *path, const struct cpuprof_options *opts)
{
	if (!path || !*path)
		return -EINVAL;
	return start(path, 0, opts);
}

API int cpuprof_start_stream(const char *path, const struct cpuprof_options *opts)
{
	if (path && !*path)
		return -EINVAL;
	return start(path, 1, opts);
}

/* The profile's comments: "key=value" strings in one buffer. */
#define MAX_COMMENTS 32
struct comments {
	const char *list[MAX_COMMENTS];
	size_t n, used;
	char buf[4096];
};

__attribute__((format(printf, 2, 3))) static void comment(struct comments *c, const char *fmt, ...)
{
	va_list ap;
	if (c->n == MAX_COMMENTS || c->used >= sizeof c->buf)
		return;
	va_start(ap, fmt);
	int len = vsnprintf(c->buf + c->used, sizeof c->buf - c->used, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof c->buf - c->used)
		return; /* no room: dropped whole rather than cut */
	c->list[c->n++] = c->buf + c->used;
	c->used += (size_t)len + 1;
}

/* What the profile says about the unwind tables. */
#define MAX_REJECTED_COMMENTS 4
struct unwind_summary {
	size_t tables, bytes, rejected;
	struct comments *c;
};

static void summarise_object(const struct unwind_object *o, void *arg)
{
	struct unwind_summary *u = arg;
	if (o->has_table) {
		u->tables++;
		u->bytes += o->table_bytes;
	}
	if (o->rejected && u->rejected++ < MAX_REJECTED_COMMENTS)
		comment(u->c, "unwind_rejected=%s: %s", o->name, o->why);
}

/* Appends a clause to the warning in why[len], after "; " if it has one. */
__attribute__((format(printf, 3, 4))) static void clause(char *why, size_t len, const char *fmt, ...)
{
	size_t n = strlen(why);
	if (n && n + 2 < len) {
		memcpy(why + n, "; ", 3);
		n += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why + n, len - n, fmt, ap);
	va_end(ap);
}

/* What judge() looks at. */
struct run_facts {
	double cov;               /* coverage */
	uint64_t samples, lost;
	uint64_t expected;        /* samples hz asks for over the process's CPU */
	uint64_t unsampled_ns;
	int64_t pcpu, user_ns;    /* the process's CPU, and its user-mode part */
	int64_t run_ns;           /* mean CPU between two waits */
	const struct cp_thread_stats *ts;
};

/* What the profile is worth, in plain words, into why[len]: one clause per
 * way in which it is not what was asked for, or nothing.  Judged only once
 * the run has used a few dozen periods or kernel ticks (10 ms at most):
 * before that, one sample more or less is already a few percent of it. */
static void judge(char *why, size_t len, const struct run_facts *f)
{
	uint64_t unit = cp_sig.period_ns > 10000000 ? cp_sig.period_ns : 10000000;
	int hw = P.engine == &cp_engine_hw;
	why[0] = '\0';
	if (f->pcpu < (int64_t)(32 * unit))
		return;
	if (f->cov < 0.9) {
		if (f->ts->unarmed)
			clause(why, len, "covers only %.1f%% of the process's CPU time: %llu threads could not be armed (%s)",
			       f->cov * 100, (unsigned long long)f->ts->unarmed, strerror(-f->ts->first_error));
		else
			clause(why, len, "covers only %.1f%% of the process's CPU time: the rest was used by threads the "
			       "profiler did not see, or saw last more than a second before they ended", f->cov * 100);
	}
	if (f->lost * 100 > f->samples + f->lost)
		clause(why, len, "%llu of %llu samples were lost (the ring was full: the drain thread fell behind); "
		       "their CPU is in [lost]", (unsigned long long)f->lost, (unsigned long long)(f->samples + f->lost));
	if ((f->samples + f->lost) * 8 < f->expected) {
		const char *cause;
		char tick[128];
		if (hw) {
			cause = "the cycle counter overflowed less often than its calibration promised, or the "
				"threads spent most of their CPU in the kernel";
		} else if (P.timer_res_ns > TICK_BOUND_NS) {
			snprintf(tick, sizeof tick, "this kernel's timers fire only at its tick, every %ld us, "
				 "and only for a thread running then", P.timer_res_ns / 1000);
			cause = tick;
		} else if (P.engine->kind != CP_ENGINE_PERF) {
			cause = "CPU-time timers fire only at the kernel's tick";
		} else {
			cause = "threads ran for less than a period, or the kernel sent fewer signals than asked for";
		}
		clause(why, len, "%llu samples where %d Hz asks for %llu (%s): the CPU totals come from the "
		       "kernel's clocks, but each function's share rests on those samples",
		       (unsigned long long)(f->samples + f->lost), P.hz, (unsigned long long)f->expected, cause);
	}
	if (hw && (f->pcpu - f->user_ns) * 4 > f->pcpu)
		clause(why, len, "about %.0f%% of the CPU time was spent in the kernel (its own estimate), where "
		       "the hw engine counts no cycles: that time is charged to the user code each thread ran next",
		       100.0 * (double)(f->pcpu - f->user_ns) / (double)f->pcpu);
	/* On a tick-bound kernel a sleep also ends at a tick: threads that
	 * work less than a tick between sleeps run in step with it, and the
	 * samples, taken at ticks too (all engines but hw), see the same
	 * moments of every run. */
	if (P.timer_res_ns > TICK_BOUND_NS && f->run_ns < P.timer_res_ns && !hw)
		clause(why, len, "the threads ran %lld us at a time between waits, less than this kernel's tick "
		       "(%ld us), and sleeps end at ticks, where the samples are taken too: each function's share "
		       "can be far off however many samples there are", (long long)(f->run_ns / 1000),
		       P.timer_res_ns / 1000);
	if (f->unsampled_ns * 10 > (uint64_t)f->pcpu)
		clause(why, len, "%.1f%% of the CPU time is in no function but in [unsampled: ...]: threads used it after "
		       "their last sample", 100.0 * (double)f->unsampled_ns / (double)f->pcpu);
}

int session_write_locked(void)
{
	static struct comments c; /* under cp_tab_lock */
	c.n = c.used = 0;
	struct cp_thread_stats ts = threads_stats();
	/* The profile accounts for the CPU of its samples, of the samples it
	 * lost, of each thread after its last sample and of its own drain
	 * thread: each of the last three as a sample with a frame that says
	 * what it is. */
	uint64_t lost = atomic_load(&cp_sig.lost) + P.dropped;
	struct cp_pseudo_sample pseudo[] = {
		{ "[lost]", lost, atomic_load(&cp_sig.lost_ns) + P.dropped_ns },
		{ "[unsampled: after each thread's last sample]", 0, ts.unsampled_ns },
		{ "[profiler: cpuprof's drain thread]", 0, drain_cpu_ns() },
	};
	uint64_t prof_ns = P.tab.total_ns;
	for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++)
		prof_ns += pseudo[i].ns;
	int64_t pcpu = (P.cpu1 ? P.cpu1 : cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID)) - P.cpu0;
	double cov = pcpu > 0 ? (double)prof_ns / (double)pcpu : 0.0;
	uint64_t expected = pcpu > 0 ? (uint64_t)pcpu / cp_sig.period_ns : 0;
	long waits = P.waits1;
	int64_t user = P.user1;
	if (!P.cpu1)
		process_usage(&waits, &user);
	/* The mean CPU the process used between two waits of the program's
	 * threads. */
	waits -= P.waits0 + atomic_load(&P.drain_waits);
	int64_t run_ns = waits > 0 ? pcpu / waits : pcpu;
	struct run_facts facts = {
		.cov = cov,
		.samples = P.tab.total_count,
		.lost = lost,
		.expected = expected,
		.unsampled_ns = ts.unsampled_ns,
		.pcpu = pcpu,
		.user_ns = user - P.user0,
		.run_ns = run_ns,
		.ts = &ts,
	};
	char warning[1024];
	judge(warning, sizeof warning, &facts);

	comment(&c, "engine=%s", P.engine->name);
	if (P.engine_reason[0])
		comment(&c, "engine_reason=%s", P.engine_reason);
	comment(&c, "hz=%d", P.hz);
	comment(&c, "signal=%d", cp_sig.signo);
	comment(&c, "samples=%llu", (unsigned long long)P.tab.total_count);
	/* What the rate asked for: far more than `samples` means the shares
	 * rest on fewer samples than the user thinks (a tick-bound kernel). */
	comment(&c, "expected_samples=%llu", (unsigned long long)expected);
	comment(&c, "lost=%llu", (unsigned long long)lost);
	/* coverage: the process's CPU the profile accounts for; attributed:
	 * the part of it that sampled stacks stand for. */
	comment(&c, "coverage=%.3f", cov);
	comment(&c, "attributed=%.3f", pcpu > 0 ? (double)P.tab.total_ns / (double)pcpu : 0.0);
	comment(&c, "profile_cpu_ns=%llu", (unsigned long long)prof_ns);
	comment(&c, "process_cpu_ns=%lld", (long long)pcpu);
	comment(&c, "unsampled_cpu_ns=%llu", (unsigned long long)pseudo[1].ns);
	comment(&c, "profiler_cpu_ns=%llu", (unsigned long long)pseudo[2].ns);
	if (warning[0])
		comment(&c, "warning=%s", warning);
	comment(&c, "timer_resolution_ns=%ld", P.timer_res_ns);
	comment(&c, "mean_run_ns=%lld", (long long)run_ns);
	comment(&c, "unwind=%s", unwind_mode_name(cp_sig.unwind_mode));
	if (cp_sig.unwind_mode != CP_UNWIND_FP) {
		struct unwind_summary us = { .c = &c };
		unwind_each_object(summarise_object, &us);
		comment(&c, "unwind_tables=%zu objects, %zu bytes", us.tables, us.bytes);
	}
	comment(&c, "max_depth=%u", cp_sig.max_depth);
	comment(&c, "threads=%llu", (unsigned long long)ts.armed);
	if (ts.unarmed)
		comment(&c, "unarmed_threads=%llu (%s)", (unsigned long long)ts.unarmed, strerror(-ts.first_error));
#ifdef CPUPROF_BENCH
	/* Benchmark build only: the handler's own time (bench/run.py). */
	comment(&c, "handler_ns=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_ns));
	comment(&c, "handler_calls=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_calls));
	comment(&c, "handler_preempted=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_slow));
#endif

	struct cp_profile_meta meta = {
		.period_ns = cp_sig.period_ns,
		.time_nanos = P.wall0,
		.duration_nanos = (P.mono1 ? P.mono1 : cp_clock_ns(CLOCK_MONOTONIC)) - P.mono0,
		.pseudo = pseudo,
		.npseudo = sizeof pseudo / sizeof pseudo[0],
		.comments = c.list,
		.ncomments = c.n,
	};
	char err[256] = "";
	int rc = pprof_write(P.path, &P.tab, &meta, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "cpuprof: cannot write %s: %s\n", P.path, err[0] ? err : strerror(-rc));
		return rc;
	}
	if (warning[0])
		fprintf(stderr, "cpuprof: warning: %s: %s\n", P.path, warning);
	return 0;
}

API int cpuprof_stop(void)
{
	pthread_mutex_lock(&api_lock);
	if (!P.running) {
		pthread_mutex_unlock(&api_lock);
		return -ESRCH;
	}
	int quiet = stop_sampling();
	int rc = 0;
	if (P.stream) {
		/* The stream's reader drains what is left, writes the file if
		 * there is one, and releases everything at end of stream. */
		uint64_t one = 1;
		if (write(cp_sig.wake_fd, &one, sizeof one) < 0) {
			/* a blocked reader also wakes on its own */
		}
	} else {
		pthread_mutex_lock(&cp_tab_lock);
		session_drain_locked();
		rc = session_write_locked();
		pthread_mutex_unlock(&cp_tab_lock);
		if (quiet) {
			session_release();
		} else {
			/* A handler is stuck (a stopped thread): leave the ring
			 * and map it may still read mapped. */
			fprintf(stderr, "cpuprof: warning: a signal handler did not finish; keeping its buffers\n");
			cp_sig.ring = NULL;
			cp_sig.rwmap = NULL;
			unwind_stop(0);
			session_release();
		}
	}
	pthread_mutex_unlock(&api_lock);
	return rc;
}

API int cpuprof_flush(void)
{
	pthread_mutex_lock(&api_lock);
	int rc = -ESRCH;
	if (P.running && P.stream) {
		rc = -EINVAL;
	} else if (P.running) {
		pthread_mutex_lock(&cp_tab_lock);
		session_drain_locked();
		rc = session_write_locked();
		pthread_mutex_unlock(&cp_tab_lock);
	}
	pthread_mutex_unlock(&api_lock);
	return rc;
}

API int cpuprof_register_thread(void)
{
	int rc = threads_init();
	return rc < 0 ? rc : threads_register_self();
}

/* In a child after fork() the parent's profile is not ours to continue or
 * write: forget it without touching the parent's timers and events. */
static void after_fork_child(void)
{
	pthread_mutex_init(&api_lock, NULL);
	pthread_mutex_init(&cp_tab_lock, NULL);
	atomic_store(&cp_sig.active, 0);
	threads_forget_after_fork();
	unwind_after_fork(); /* before session_release: its lock may be held */
	if (P.running || P.stream_open)
		session_release(); /* the child's copies: memory and the eventfd */
	P.running = 0;
	P.stream_open = 0;
	P.has_drain = 0;
}

__attribute__((constructor)) static void cpuprof_init(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}
