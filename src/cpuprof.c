/*
 * cpuprof.c -- the profile's life.  cpuprof_start() picks an engine (and,
 * for a signal engine, its signal) and starts the keeper: cpuprof's own
 * thread, which has every signal blocked and a descriptor table of its own
 * (so the program can neither close nor stumble on what cpuprof opens),
 * starts the engine, drains the perf engines' rings into the sample ring,
 * moves samples into the stack table (file mode) and looks after the
 * unwind tables and the threads.  cpuprof_stop() stops the keeper and the
 * engine, waits out every running handler, gives the signal back and
 * writes the pprof file (judge.c).  In stream mode the stream's reader
 * (stream.c) takes the samples instead.  An exec stops the profile and
 * writes it first; a failed exec resumes it.
 */
#include <errno.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpuprof.h"
#include "engines/choose.h"
#include "profile/times.h"
#include "base/libc.h"
#include "profile/judge.h"
#include "base/error.h"
#include "base/loader.h"
#include "profile/names.h"
#include "profile/options.h"
#include "base/rwmap.h"
#include "base/testhooks.h"
#include "session.h"
#include "shm/writer.h"
#include "engines/sampling_signal.h"
#include "symbolize/symbols.h"
#include "engines/threads.h"
#include "unwind/tables.h"

/* Ring cells: half of them absorb a burst while the keeper wakes.  As
 * many as RING_WINDOW_MS of samples at the rate asked on every CPU (a CPU
 * clock fires at most HZ times a CPU-second, however many threads share
 * the CPU), or RING_CELLS_PER_CPU a CPU, whichever is more (the perf
 * engines hand on a whole pass of their rings, at least 31 samples each);
 * a power of two, at most RING_CELLS: 1024 cells (1.1 MiB at the default
 * depth) at 10 kHz on 2 CPUs, 256 up to 1 kHz, where all of them were
 * 2048 (2.2 MiB), touched at every rate. */
#define RING_CELLS 2048
#define RING_CELLS_MIN 256
#define RING_CELLS_PER_CPU 32
#define RING_WINDOW_MS 50
/* How long the keeper sleeps at most. */
#define KEEPER_SLEEP_MS 100
/* How often it sweeps the signal engines' threads. */
#define SWEEP_INTERVAL_NS 1000000000ll
/* How often a recorded profile publishes its facts, and how long its
 * keeper sleeps at most: a process killed by a signal takes with it what
 * the kernel wrote into its perf rings since the keeper last drained
 * them. */
#define PUBLISH_INTERVAL_NS 200000000ll
#define RECORDED_SLEEP_MS 10

struct cp_session cp_session;
pthread_mutex_t cp_tab_lock = PTHREAD_MUTEX_INITIALIZER;

static void publish(int ended, int status);

/* Serialises start, stop and flush. */
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread is in the API (set before it waits for the lock): a hook
 * that runs inside it (an _exit or exec from a signal handler that
 * interrupted a flush) must not wait for itself. */
static __thread int api_held;

static void api_enter(void)
{
	api_held = 1;
	pthread_mutex_lock(&api_lock);
}

static void api_leave(void)
{
	pthread_mutex_unlock(&api_lock);
	api_held = 0;
}

/* The whole process's voluntary context switches so far (each a thread
 * going to sleep: a wait, a sleep, blocking I/O) and its user-mode CPU. */
void cp_process_usage(long *waits, int64_t *user_ns)
{
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	getrusage(RUSAGE_SELF, &ru);
	*waits = ru.ru_nvcsw;
	*user_ns = (int64_t)ru.ru_utime.tv_sec * 1000000000 + (int64_t)ru.ru_utime.tv_usec * 1000;
}

const char *cpuprof_strerror(int code)
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
_Static_assert(CP_SAMPLE_TRUNCATED == CP_STACK_TRUNCATED && CP_SAMPLE_LINK_REG == CP_STACK_LINK_REG &&
		       CP_SAMPLE_OFF_CPU == CP_STACK_OFF_CPU && CP_SAMPLE_RUNNABLE == CP_STACK_RUNNABLE &&
		       CP_SAMPLE_BEFORE == CP_STACK_BEFORE,
	       "sample and stack flags differ");

void cp_session_keep_locked(const struct cp_sample *s)
{
	if (cp_stacktab_add_at(&cp_session.run.tab, s->tid, s->pcs, s->n, s->flags, s->weight_ns, s->time) < 0) {
		cp_session.run.dropped++;
		cp_session.run.dropped_ns += s->weight_ns;
	}
}

void cp_session_drain_locked(void)
{
	struct cp_ring *r = cp_sig.ring;
	struct cp_sample *s;
	while ((s = cp_ring_peek(r)) != NULL) {
		cp_session_keep_locked(s);
		cp_ring_release(r, s);
	}
}

void cp_session_stats_locked(struct cp_engine_stats *s)
{
	if (cp_session.running)
		cp_session.run.engine->stats(s);
	else
		*s = cp_session.run.stats;
}

void cp_session_wait(_Atomic uint32_t *w, uint32_t seen, int ms, int private_futex)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	syscall(SYS_futex, w, private_futex ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Gives the calling thread a descriptor table of its own, empty: what it
 * opens there, the program cannot close or reuse, and it holds none of
 * the program's files open. */
static void private_descriptors(void)
{
	if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0)
		return;
	/* Before Linux 5.9: a copy of the table, then closed. */
	if (unshare(CLONE_FILES) < 0)
		return;
	struct rlimit rl;
	long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (long)rl.rlim_cur : 65536;
	for (long fd = 0; fd < max; fd++)
		close((int)fd);
}

/* Holds *ns to the threads' CPU clocks: multiplies it by f (a
 * clock_factor, at most 1); returns what that took off. */
static uint64_t hold_ns(uint64_t *ns, double f)
{
	uint64_t kept = (uint64_t)((double)*ns * f + 0.5);
	if (kept >= *ns)
		return 0;
	uint64_t off = *ns - kept;
	*ns = kept;
	return off;
}

static void *keeper_main(void *unused)
{
	struct cp_run *R = &cp_session.run;
	atomic_store(&R->keeper_tid, (pid_t)syscall(SYS_gettid));
	private_descriptors();
	struct cp_engine_conf conf = {
		.period_ns = cp_sig.period_ns,
		.signo = R->signo,
		.keeper_tid = atomic_load(&R->keeper_tid),
		.starter_tid = R->starter_tid,
		.starter_blocks = R->starter_blocks,
		.off_cpu = R->off_cpu_asked && !R->off_cpu_why[0],
	};
	int rc = R->engine->start(&conf);
	atomic_store(&R->keeper_state, rc < 0 ? rc : 1);
	syscall(SYS_futex, &R->keeper_state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (rc < 0)
		return NULL;

	int64_t last_sweep = cp_clock_ns(CLOCK_MONOTONIC), last_publish = 0;
	int sleep_ms = KEEPER_SLEEP_MS;
	while (!atomic_load(&R->keeper_quit)) {
		uint32_t seen = atomic_load(cp_sig.wake);
		atomic_store(&cp_sig.wake_pending, 0);
		pthread_mutex_lock(&cp_tab_lock);
		if (R->engine->drain)
			sleep_ms = R->engine->drain();
		if (R->recorded && sleep_ms > RECORDED_SLEEP_MS)
			sleep_ms = RECORDED_SLEEP_MS;
		if (R->keeper_drains)
			cp_session_drain_locked();
		pthread_mutex_unlock(&cp_tab_lock);
		int64_t now = cp_clock_ns(CLOCK_MONOTONIC);
		if (R->engine->signal_source != CP_SIG_NONE && now - last_sweep >= SWEEP_INTERVAL_NS) {
			cp_threads_sweep();
			last_sweep = now;
		}
		cp_unwind_tick();
		if (R->recorded) {
			cp_shm_objects(0);
			if (now - last_publish >= PUBLISH_INTERVAL_NS) {
				publish(CP_END_NONE, 0);
				last_publish = now;
			}
		}
		/* Its own waits are not the program's (mean_run_ns). */
		struct rusage ru;
		if (getrusage(RUSAGE_THREAD, &ru) == 0)
			atomic_store(&R->keeper_waits, ru.ru_nvcsw);
		if (atomic_load(&R->keeper_quit))
			break;
		cp_session_wait(cp_sig.wake, seen, cp_unwind_timeout_ms(sleep_ms), cp_sig.wake_private);
	}
	pthread_mutex_lock(&cp_tab_lock);
	R->engine->stop();
	R->engine->stats(&R->stats);
	/* A file's samples, all in now, are held to their threads' CPU
	 * clocks (record holds those it was sent by the engine's ahead_ns,
	 * and those it took from outside to the processes' CPU). */
	if (R->engine->clock_factor && !R->recorded && !R->stream) {
		cp_session_drain_locked();
		R->stats.ahead_ns = cp_stacktab_scale_down(&R->tab, R->engine->clock_factor);
		/* The samples lost and the periods that ended in the kernel
		 * weigh the same clock: held to all threads'. */
		double f = R->engine->clock_factor(0);
		uint64_t lost = atomic_load(&cp_sig.lost_ns);
		R->stats.ahead_ns += hold_ns(&lost, f) + hold_ns(&R->stats.lost_ns, f) + hold_ns(&R->stats.kernel_ns, f);
		atomic_store(&cp_sig.lost_ns, lost);
	}
	pthread_mutex_unlock(&cp_tab_lock);
	R->keeper_cpu_ns = (uint64_t)cp_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

uint64_t cp_session_keeper_cpu_ns(void)
{
	clockid_t c;
	if (!cp_session.run.has_keeper)
		return cp_session.run.keeper_cpu_ns;
	return pthread_getcpuclockid(cp_session.run.keeper, &c) == 0 ? (uint64_t)cp_clock_ns(c) : 0;
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

/* The options checked against the table of settings (options.h). */
struct settings {
	int hz, signo, unwind, off_cpu;
	unsigned depth;
	const char *engine;
};

/* Checks the number v for option id: 0, or -EINVAL with the reason. */
static int check_int(enum cp_option_id id, long v)
{
	char why[160];
	if (cp_option_check_int(&cp_options[id], v, why, sizeof why) == 0)
		return 0;
	cp_error_set("%s %s=%ld: %s", cpuprof_strerror(-EINVAL), cp_options[id].name, v, why);
	return -EINVAL;
}

/* Checks the text v for option id, its value into *out: 0, or -EINVAL
 * with the reason. */
static int check_text(enum cp_option_id id, const char *v, long *out)
{
	char why[200];
	if (cp_option_parse(&cp_options[id], v, out, why, sizeof why) == 0)
		return 0;
	cp_error_set("%s %s: %s", cpuprof_strerror(-EINVAL), cp_options[id].name, why);
	return -EINVAL;
}

static int check_options(const struct cpuprof_options *o, struct settings *s)
{
	s->hz = o && o->hz ? o->hz : (int)cp_options[CP_OPT_HZ].def;
	s->depth = o && o->max_depth ? (unsigned)o->max_depth : (unsigned)cp_options[CP_OPT_DEPTH].def;
	s->signo = o ? o->signal : 0;
	s->engine = o && o->engine ? o->engine : "auto";
	s->off_cpu = o ? o->off_cpu : 0;
	long v, unwind;
	if (check_int(CP_OPT_HZ, s->hz) < 0 || check_int(CP_OPT_OFF_CPU, s->off_cpu) < 0 ||
	    check_int(CP_OPT_DEPTH, o && o->max_depth ? o->max_depth : (long)s->depth) < 0 ||
	    (s->signo && check_int(CP_OPT_SIGNAL, s->signo) < 0) || check_text(CP_OPT_ENGINE, s->engine, &v) < 0 ||
	    check_text(CP_OPT_UNWIND, o && o->unwind ? o->unwind : "auto", &unwind) < 0)
		return -EINVAL;
	s->unwind = (int)unwind; /* an enum cp_unwind_mode (options.c) */
	return 0;
}

void cp_session_release(void)
{
	if (cp_session.stuck) {
		/* A handler is stuck (a thread stopped in it): leave the ring,
		 * the map and the tables it may still read mapped. */
		fprintf(stderr, "cpuprof: warning: a signal handler did not finish; keeping its buffers\n");
		cp_unwind_stop(0);
	} else {
		cp_unwind_stop(1);
		cp_ring_destroy(cp_sig.ring);
		cp_rwmap_free((struct cp_rwmap *)cp_sig.rwmap);
	}
	cp_sig.ring = NULL;
	cp_sig.rwmap = NULL;
	cp_stacktab_free(&cp_session.run.tab);
	free(cp_session.run.path);
	cp_session.run.path = NULL;
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

/* Starts sampling with the settings in cp_session.run: takes the signal
 * (signal engines), raises `active` and starts the keeper, which starts
 * the engine.  Returns 0 or a negative errno (nothing is left running).
 * Under api_lock. */
static int begin_sampling(void)
{
	struct cp_run *R = &cp_session.run;
	int rc;
	if (R->engine->signal_source != CP_SIG_NONE && (rc = cp_signal_take(R->signo)) < 0)
		return rc;
	cp_sig.engine = R->engine->signal_source;
	cp_sig.signo = R->signo;
	sigset_t mask;
	R->starter_tid = (pid_t)syscall(SYS_gettid);
	R->starter_blocks = R->signo && cp_real_sigmask(SIG_BLOCK, NULL, &mask) == 0 && sigismember(&mask, R->signo) == 1;
	atomic_store(&cp_sig.active, 1);
	atomic_store(&R->keeper_quit, 0);
	atomic_store(&R->keeper_state, 0);
	if ((rc = cp_threads_spawn_internal(&R->keeper, keeper_main, NULL)) == 0) {
		R->has_keeper = 1;
		int st;
		while ((st = atomic_load(&R->keeper_state)) == 0)
			syscall(SYS_futex, &R->keeper_state, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		if (st < 0) {
			pthread_join(R->keeper, NULL);
			R->has_keeper = 0;
			rc = st;
		}
	}
	if (rc < 0) {
		quiesce_handlers();
		if (R->engine->signal_source != CP_SIG_NONE)
			cp_signal_release(R->signo);
		return rc;
	}
	pthread_mutex_lock(&cp_tab_lock);
	cp_session.running = 1;
	pthread_mutex_unlock(&cp_tab_lock);
	return 0;
}

/* Stops sampling: waits out the handlers (noting in cp_session.stuck if
 * one did not finish), stops the keeper (which stops the engine) and
 * hands the signal back.  Under api_lock. */
static void end_sampling(void)
{
	struct cp_run *R = &cp_session.run;
	cp_session.stuck = !quiesce_handlers();
	atomic_store(&R->keeper_quit, 1);
	cp_wake_reader();
	if (R->has_keeper) {
		pthread_join(R->keeper, NULL);
		R->has_keeper = 0;
	}
	if (R->engine->signal_source != CP_SIG_NONE)
		cp_signal_release(R->signo);
	R->mono1 = cp_clock_ns(CLOCK_MONOTONIC);
	R->cpu1 = cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	cp_process_usage(&R->waits1, &R->user1);
	/* The stream's reader looks at `running` under cp_tab_lock. */
	pthread_mutex_lock(&cp_tab_lock);
	cp_session.running = 0;
	pthread_mutex_unlock(&cp_tab_lock);
}

/* The options of a recorded profile: a forked child starts its own with
 * them. */
static struct cpuprof_options recorded_opts;
static char recorded_engine[16], recorded_unwind[16];

/* 0 if a profile may start now, else -EBUSY with the reason.  Under
 * api_lock. */
static int check_idle(void)
{
	pthread_mutex_lock(&cp_tab_lock);
	/* Also while a handler of the last profile is stuck in it: it could
	 * still put a sample of that profile into this one. */
	int busy = cp_session.running || cp_session.stream_open || cp_session.suspended ||
		   (cp_session.stuck && atomic_load(&cp_sig.inflight));
	if (busy)
		cp_error_set("%s", cp_session.running	  ? "a profile is already running"
				   : cp_session.stream_open ? "the last profile's record stream is not read to its end"
				   : cp_session.suspended   ? "a profile is paused while its process execs"
							    : "a sampling handler of the last profile has not returned "
							      "(a thread is stopped in it)");
	pthread_mutex_unlock(&cp_tab_lock);
	return busy ? -EBUSY : 0;
}

/* Puts the settings into R and chooses its engine (and signal), or says
 * why none works here (-ENODEV).  Off-CPU time is a file's, of the perf
 * engines (record's shared memory takes CPU only: record itself records
 * off-CPU time, from outside). */
static int choose_engine(struct cp_run *R, const struct settings *s)
{
	R->hz_asked = s->hz;
	R->hz = (int)cp_option_taken(&cp_options[CP_OPT_HZ], s->hz);
	R->depth = s->depth;
	R->unwind = s->unwind;
	R->timer_res_ns = timer_resolution_ns();
	R->engine = cp_engine_choose(s->engine, s->signo, 1000000000u / (unsigned)R->hz, R->timer_res_ns, &R->signo,
				     R->engine_reason, sizeof R->engine_reason);
	if (!R->engine) {
		cp_error_set("%s: %s", cpuprof_strerror(-ENODEV), R->engine_reason);
		return -ENODEV;
	}
	R->off_cpu_asked = s->off_cpu && !R->recorded;
	if (R->off_cpu_asked && R->stream)
		snprintf(R->off_cpu_why, sizeof R->off_cpu_why, "the record stream carries CPU samples only");
	else if (R->off_cpu_asked && R->engine->signal_source != CP_SIG_NONE)
		snprintf(R->off_cpu_why, sizeof R->off_cpu_why, "it needs the perf engine's context-switch events, and "
			 "the %s engine samples with signals%s%.280s", R->engine->name, R->engine_reason[0] ? ": " : "",
			 R->engine_reason);
	return 0;
}

/* The sample ring's cells for R's rate on this machine's CPUs (above);
 * the most with off-CPU time, whose switch-outs come as often as the
 * program switches, and for a record stream, drained when its reader
 * reads. */
static size_t ring_cells(const struct cp_run *R)
{
	if (cp_test_ring_cells)
		return cp_test_ring_cells;
	if (R->off_cpu_asked || R->stream)
		return RING_CELLS;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t per_cpu = (uint64_t)R->hz * RING_WINDOW_MS / 1000;
	uint64_t want = (per_cpu > RING_CELLS_PER_CPU ? per_cpu : RING_CELLS_PER_CPU) * (uint64_t)(cpus > 0 ? cpus : 1);
	size_t n = RING_CELLS_MIN;
	while (n < want && n < RING_CELLS)
		n *= 2;
	return n;
}

/* Makes what the profile keeps its samples in: the path, the table, the
 * sample ring (for a recorded profile, a slot of record's shared memory:
 * *claimed) and, for a signal engine, whose handler walks live stacks, where
 * threads' stacks are (the perf engines walk the kernel's copies, whose
 * bounds come with them).  Returns 0 or a negative errno. */
static int make_buffers(struct cp_run *R, const char *path, unsigned depth, int *claimed)
{
	R->path = path ? strdup(path) : NULL;
	cp_stacktab_init(&R->tab);
	*claimed = R->recorded && cp_shm_claim() == 0;
	if (R->recorded)
		cp_sig.ring = *claimed ? cp_shm_ring() : NULL;
	else
		cp_sig.ring = cp_ring_create(ring_cells(R), depth);
	if (R->recorded && !cp_sig.ring) {
		cp_error_set("cpuprof record has no room for another process");
		return -ENOSPC;
	}
	cp_sig.rwmap = R->engine->signal_source != CP_SIG_NONE ? cp_rwmap_snapshot() : NULL;
	if ((path && !R->path) || !cp_sig.ring) {
		cp_session_release();
		return -ENOMEM;
	}
	return 0;
}

/* The state every sampler shares, for a new profile. */
static void reset_sampler_state(const struct cp_run *R)
{
	cp_sig.period_ns = 1000000000u / (unsigned)R->hz;
	cp_sig.max_depth = R->depth;
	cp_sig.wake = R->recorded ? cp_shm_wake() : &cp_session.wake;
	cp_sig.wake_private = !R->recorded;
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
}

/* Where off-CPU time was asked for and cannot be had, one line says so. */
static void say_no_off_cpu(void)
{
	struct cp_facts f;
	pthread_mutex_lock(&cp_tab_lock);
	cp_session_facts_locked(&f);
	pthread_mutex_unlock(&cp_tab_lock);
	if (f.off_cpu == CP_OFF_CPU_ABSENT)
		fprintf(stderr, "cpuprof: no off-CPU time: %s; recording CPU only\n", f.off_cpu_why);
}

/* Keeps a recorded profile's options for forked children (which start
 * with these, and keep them as they are). */
static void keep_recorded_opts(const struct cpuprof_options *opts, const struct settings *s)
{
	recorded_opts = opts ? *opts : (struct cpuprof_options){ 0 };
	snprintf(recorded_engine, sizeof recorded_engine, "%s", s->engine);
	snprintf(recorded_unwind, sizeof recorded_unwind, "%s", opts && opts->unwind ? opts->unwind : "auto");
	recorded_opts.engine = recorded_engine;
	recorded_opts.unwind = recorded_unwind;
}

/* Starts a profile into path (NULL: none), in stream mode, recorded (its
 * samples go to `cpuprof record`), or neither.  Returns 0, or a negative
 * errno with the calling thread's reason. */
static int start_profile(const char *path, int stream, int recorded, int whole, const struct cpuprof_options *opts)
{
	struct settings s;
	int rc;

	if ((rc = check_options(opts, &s)) < 0)
		return rc;
	api_enter();
	if ((rc = check_idle()) < 0) {
		api_leave();
		return rc;
	}

	cp_session.stuck = 0;
	int claimed = 0; /* a slot of record's shared memory */
	struct cp_run *R = &cp_session.run;
	memset(R, 0, sizeof *R);
	R->stream = stream;
	R->recorded = recorded;
	R->whole = whole;
	if (recorded && s.depth > cp_shm_depth())
		s.depth = cp_shm_depth();
	if ((rc = choose_engine(R, &s)) < 0)
		goto out;
	if ((rc = make_buffers(R, path, s.depth, &claimed)) < 0)
		goto out;
	reset_sampler_state(R);
	R->keeper_drains = !stream && !recorded && !cp_test_no_drain;
	cp_session.pid = getpid();
	cp_names_reset();
	/* The objects are listed before the first sample can be taken, and
	 * for a signal engine, whose handler walks the live stack once, their
	 * unwind tables built.  A perf engine's keeper builds a table when a
	 * walk first needs it and walks the kernel's copy again: no cost at
	 * start, but the rings are not drained while it builds (libc's table:
	 * ~5 ms here, a sixth of a ring's room at 1 kHz; 0.3 s on the
	 * emulated CPU of docs/vm.md, where 10-279 samples were lost).  Under
	 * record -- the in-process path is taken where the kernel's timers
	 * are tick-bound or perf events are refused, and record judges every
	 * process's samples whole -- the tables are built at start too.
	 * Record knows the objects before the first sample names one. */
	cp_unwind_start(s.unwind, R->engine->signal_source != CP_SIG_NONE || recorded);
	if (recorded)
		cp_shm_objects(1);

	R->wall0 = cp_clock_ns(CLOCK_REALTIME);
	R->mono0 = cp_clock_ns(CLOCK_MONOTONIC);
	cp_times_begin((uint64_t)R->mono0, cp_sig.period_ns);
	R->cpu0 = cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	cp_process_usage(&R->waits0, &R->user0);
	if ((rc = begin_sampling()) < 0) {
		cp_error_set("the %s engine did not start: %s", R->engine->name, strerror(-rc));
		cp_session_release();
		goto out;
	}
	if (R->off_cpu_asked)
		say_no_off_cpu();
	if (stream) {
		pthread_mutex_lock(&cp_tab_lock);
		cp_session.stream_open = 1;
		pthread_mutex_unlock(&cp_tab_lock);
	}
	if (recorded && opts != &recorded_opts)
		keep_recorded_opts(opts, &s);
out:
	if (rc < 0 && claimed)
		cp_shm_end(); /* the slot taken for nothing */
	api_leave();
	return rc;
}

/* The end of a public call: a failure says why (cpuprof_last_error()). */
static int api_return(int rc)
{
	return cp_error_end(rc, cpuprof_strerror(rc));
}

static int start(const char *path, int stream, int recorded, int whole, const struct cpuprof_options *opts)
{
	cp_error_begin();
	return api_return(start_profile(path, stream, recorded, whole, opts));
}

const char *cpuprof_last_error(void)
{
	return cp_error_last();
}

int cpuprof_start(const char *path, const struct cpuprof_options *opts)
{
	if (!path || !*path) {
		cp_error_set("%s: cpuprof_start needs the path of the file to write", cpuprof_strerror(-EINVAL));
		return -EINVAL;
	}
	return start(path, 0, 0, 0, opts);
}

int cpuprof_start_stream(const char *path, const struct cpuprof_options *opts)
{
	if (path && !*path) {
		cp_error_set("%s: an empty path (NULL writes no file)", cpuprof_strerror(-EINVAL));
		return -EINVAL;
	}
	return start(path, 1, 0, 0, opts);
}

int cp_session_start_preloaded(const char *path, int whole, const struct cpuprof_options *opts)
{
	return start(path, 0, 0, whole, opts);
}

int cp_session_start_recorded(const struct cpuprof_options *opts)
{
	return start(NULL, 0, 1, 0, opts);
}

/* Publishes a recorded profile's facts, with how it ended (CP_END_*).
 * Under cp_tab_lock or on the keeper's own. */
static void publish_locked(int ended, int status)
{
	struct cp_facts f;
	cp_session_facts_locked(&f);
	f.ended = ended;
	f.exit_status = status;
	f.exec_pending = ended == CP_END_EXEC;
	cp_shm_facts(&f);
}

static void publish(int ended, int status)
{
	pthread_mutex_lock(&cp_tab_lock);
	publish_locked(ended, status);
	pthread_mutex_unlock(&cp_tab_lock);
}

/* Drains, writes and releases a stopped file-mode profile; a recorded one
 * says how it ended (CP_END_*) and gives its slot up.  Under api_lock. */
static int finish(int ended, int status)
{
	int rc = 0;
	pthread_mutex_lock(&cp_tab_lock);
	if (cp_session.run.recorded) {
		publish_locked(ended, status);
	} else {
		cp_session_drain_locked();
		rc = cp_session_write_locked(1); /* released below */
	}
	pthread_mutex_unlock(&cp_tab_lock);
	if (cp_session.run.recorded)
		cp_shm_end();
	cp_session_release();
	return rc;
}

/* Is a profile of this process (not of a parent we were forked or
 * vforked from) running? */
static int ours(void)
{
	return cp_session.running && cp_session.pid == getpid();
}

/* Stops the profile, which ended as `ended` says (CP_END_*). */
static int stop(int ended, int status)
{
	api_enter();
	if (!cp_session.running && !cp_session.suspended) {
		api_leave();
		return -ESRCH;
	}
	int rc = 0;
	if (cp_session.running)
		end_sampling();
	cp_session.suspended = 0;
	if (cp_session.run.stream) {
		/* The stream's reader drains what is left, writes the file if
		 * there is one, and releases everything at end of stream. */
		cp_wake_reader();
	} else {
		rc = finish(ended, status);
	}
	api_leave();
	return rc;
}

/* Under `cpuprof record` the profile is record's: the program's own
 * calls leave it alone (the process's end stops it). */
static int recorded_session(void)
{
	return cp_session.running && cp_session.run.recorded;
}

/* The reason a recorded profile refuses the program's own calls. */
#define RECORDED_WHY "the profile is cpuprof record's: it ends with the process"

int cpuprof_stop(void)
{
	cp_error_begin();
	if (recorded_session()) {
		cp_error_set("%s", RECORDED_WHY);
		return api_return(-EBUSY);
	}
	return api_return(stop(CP_END_EXIT, 0));
}

void cp_session_stop_at_exit(void)
{
	stop(CP_END_EXIT, 0);
}

int cpuprof_flush(void)
{
	cp_error_begin();
	api_enter();
	int rc = -ESRCH;
	if (recorded_session()) {
		cp_error_set("%s", RECORDED_WHY);
		rc = -EBUSY;
	} else if (cp_session.running && cp_session.run.stream) {
		cp_error_set("a record stream's profile is written at the end of the stream, not flushed");
		rc = -EINVAL;
	} else if (cp_session.running) {
		/* Written from a copy of the table: the keeper goes on moving
		 * samples into it meanwhile (symbols and lines can take a
		 * while), where holding the lock would fill the rings. */
		struct cp_facts f;
		struct cp_stacktab copy;
		pthread_mutex_lock(&cp_tab_lock);
		if (cp_session.run.engine->drain)
			cp_session.run.engine->drain();
		cp_session_drain_locked();
		cp_session_facts_locked(&f);
		int copied = cp_stacktab_copy(&copy, &cp_session.run.tab) == 0;
		/* The copy held to the threads' CPU clocks as they are now, as
		 * the file written at the stop is. */
		const struct cp_engine *e = cp_session.run.engine;
		if (copied && e->clocks_now && e->clock_factor && !cp_session.run.recorded) {
			e->clocks_now(1);
			uint64_t ahead = cp_stacktab_scale_down(&copy, e->clock_factor);
			double all = e->clock_factor(0);
			e->clocks_now(0);
			f.sampled_ns -= ahead < f.sampled_ns ? ahead : f.sampled_ns;
			/* The lost samples and the kernel's periods weigh the same
			 * clocks, as at the stop. */
			ahead += hold_ns(&f.lost_ns, all) + hold_ns(&f.kernel_ns, all);
			f.ahead_ns += ahead;
		}
		if (!copied)
			rc = cp_session_write_profile(&cp_session.run.tab, &f, 0);
		pthread_mutex_unlock(&cp_tab_lock);
		if (copied) {
			rc = cp_session_write_profile(&copy, &f, 1);
			cp_stacktab_free(&copy);
		}
	}
	api_leave();
	return api_return(rc);
}

int cpuprof_register_thread(void)
{
	cp_error_begin();
	return api_return(cp_threads_register_self());
}

int cp_session_exec_begin(void)
{
	/* A start, stop or flush under way in another thread is waited for:
	 * nothing of ours may be armed across the exec. */
	if (api_held)
		return 0; /* an exec from a signal handler inside the API */
	api_enter();
	int stopped = 0;
	if (ours() && !cp_session.run.stream) {
		/* This image ends here: keep what it sampled (record learns
		 * that it exec'd once the new image takes a slot). */
		end_sampling();
		pthread_mutex_lock(&cp_tab_lock);
		if (cp_session.run.recorded) {
			publish_locked(CP_END_EXEC, 0);
		} else {
			/* Kept: if the exec fails, sampling goes on into it. */
			cp_session_drain_locked();
			cp_session_write_locked(0);
		}
		pthread_mutex_unlock(&cp_tab_lock);
		cp_session.suspended = 1;
		stopped = 1;
	} else if (ours()) {
		/* A stream: its reader must not take the pause for its end. */
		end_sampling();
		pthread_mutex_lock(&cp_tab_lock);
		cp_session.suspended = 1;
		pthread_mutex_unlock(&cp_tab_lock);
		stopped = 1;
	}
	api_leave();
	return stopped;
}

void cp_session_exec_failed(void)
{
	api_enter();
	if (cp_session.suspended && cp_session.pid == getpid()) {
		pthread_mutex_lock(&cp_tab_lock);
		cp_session.suspended = 0;
		pthread_mutex_unlock(&cp_tab_lock);
		struct cp_run *R = &cp_session.run;
		R->mono1 = R->cpu1 = 0;
		R->waits1 = R->user1 = 0;
		if (R->recorded)
			publish(CP_END_NONE, 0);
		if (begin_sampling() < 0 && !R->stream)
			finish(CP_END_EXIT, 0); /* what was written at the exec stays */
		else if (!cp_session.running)
			cp_wake_reader(); /* a stream that cannot resume ends */
	}
	api_leave();
}

void cp_session_exit_now(int status)
{
	if (ours() && !cp_session.run.stream && !api_held)
		stop(CP_END_UNDERSCORE_EXIT, status);
}

void cp_session_program_took_itimer(void)
{
	const char *why;
	if (!ours() || !cp_session.run.engine->program_set_itimer || !(why = cp_session.run.engine->program_set_itimer()))
		return;
	snprintf(cp_session.run.stopped_why, sizeof cp_session.run.stopped_why, "%.3f s after the start, %s",
		 (double)(cp_clock_ns(CLOCK_MONOTONIC) - cp_session.run.mono0) / 1e9, why);
}

/* In a child after fork() the parent's profile is not ours to continue or
 * write: forget it without touching the parent's timers and events. */
static void after_fork_child(void)
{
	cp_loader_after_fork_child();
	pthread_mutex_init(&api_lock, NULL);
	api_held = 0;
	pthread_mutex_init(&cp_tab_lock, NULL);
	atomic_store(&cp_sig.active, 0);
	int had = cp_session.running || cp_session.stream_open || cp_session.suspended;
	/* Every lock another thread may have held at the fork is made anew
	 * (that thread is not in the child): this runs inside every fork of
	 * the program, and in the line reader's. */
	cp_threads_forget();
	cp_names_after_fork();
	if (had && cp_session.run.engine)
		cp_session.run.engine->forget();
	cp_unwind_after_fork(); /* before cp_session_release: its lock may be held */
	if (had)
		cp_session_release(); /* the child's copies of our memory */
	int recorded = had && cp_session.run.recorded;
	cp_session.running = 0;
	cp_session.stream_open = 0;
	cp_session.suspended = 0;
	cp_session.run.has_keeper = 0;
	if (cp_shm_attached()) {
		/* Under `cpuprof record` a forked child is profiled too, into
		 * a slot of its own. */
		cp_shm_after_fork();
		if (recorded)
			start(NULL, 0, 1, 0, &recorded_opts);
	}
}

__attribute__((constructor)) static void cpuprof_init(void)
{
	pthread_atfork(cp_loader_before_fork, cp_loader_after_fork_parent, after_fork_child);
}
