/*
 * judge.c -- what a profile says about itself, and its file: the comments
 * (how it was taken, what it covers), the warning that says, in plain
 * words, where it is not what was asked for, and the pprof file they go
 * into with the stack table.  Not signal context.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "engines.h"
#include "pprof_write.h"
#include "session.h"
#include "unwind.h"


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
	const struct cp_engine_stats *ts;
};

/* What the profile is worth, in plain words, into why[len]: one clause per
 * way in which it is not what was asked for, or nothing.  Judged only once
 * the run has used a few dozen periods or kernel ticks (10 ms at most):
 * before that, one sample more or less is already a few percent of it. */
static void judge(char *why, size_t len, const struct run_facts *f)
{
	uint64_t unit = cp_sig.period_ns > 10000000 ? cp_sig.period_ns : 10000000;
	int hw = cp_session.run.engine->user_only;
	why[0] = '\0';
	if (cp_session.run.hz != cp_session.run.hz_asked)
		clause(why, len, "sampled at %d Hz, not the %d Hz asked for: above that the kernel's own cost per "
		       "sample would take a tenth of the program's CPU time", cp_session.run.hz, cp_session.run.hz_asked);
	if (cp_session.run.stopped_why[0])
		clause(why, len, "%s", cp_session.run.stopped_why);
	if (f->ts->blocked)
		clause(why, len, "%llu threads had signal %d blocked when the profile started: the %s engine samples "
		       "them only once they unblock it (the perf engines sample every thread, whatever its mask)",
		       (unsigned long long)f->ts->blocked, cp_session.run.signo, cp_session.run.engine->name);
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
		clause(why, len, "%llu of %llu samples were lost (a ring was full: cpuprof's own thread fell behind); "
		       "their CPU is in [lost]", (unsigned long long)f->lost, (unsigned long long)(f->samples + f->lost));
	if ((f->samples + f->lost) * 8 < f->expected) {
		const char *cause;
		char tick[128];
		if (hw) {
			cause = "the cycle counter overflowed less often than its calibration promised, or the "
				"threads spent most of their CPU in the kernel";
		} else if (cp_session.run.timer_res_ns > CP_TICK_BOUND_NS) {
			snprintf(tick, sizeof tick, "this kernel's timers fire only at its tick, every %ld us, "
				 "and only for a thread running then", cp_session.run.timer_res_ns / 1000);
			cause = tick;
		} else if (cp_session.run.engine->tick_driven) {
			cause = "CPU-time timers fire only at the kernel's tick";
		} else {
			cause = "threads ran for less than a period, or the kernel sent fewer signals than asked for";
		}
		clause(why, len, "%llu samples where %d Hz asks for %llu (%s): the CPU totals come from the "
		       "kernel's clocks, but each function's share rests on those samples",
		       (unsigned long long)(f->samples + f->lost), cp_session.run.hz, (unsigned long long)f->expected, cause);
	}
	if (hw && (f->pcpu - f->user_ns) * 4 > f->pcpu)
		clause(why, len, "about %.0f%% of the CPU time was spent in the kernel (its own estimate), where "
		       "the hw engine counts no cycles: that time is charged to the user code each thread ran next",
		       100.0 * (double)(f->pcpu - f->user_ns) / (double)f->pcpu);
	/* On a tick-bound kernel a sleep also ends at a tick: threads that
	 * work less than a tick between sleeps run in step with it, and the
	 * samples, taken at ticks too (all engines but hw), see the same
	 * moments of every run. */
	if (cp_session.run.timer_res_ns > CP_TICK_BOUND_NS && f->run_ns < cp_session.run.timer_res_ns && !hw)
		clause(why, len, "the threads ran %lld us at a time between waits, less than this kernel's tick "
		       "(%ld us), and sleeps end at ticks, where the samples are taken too: each function's share "
		       "can be far off however many samples there are", (long long)(f->run_ns / 1000),
		       cp_session.run.timer_res_ns / 1000);
	if (f->unsampled_ns * 10 > (uint64_t)f->pcpu)
		clause(why, len, "%.1f%% of the CPU time is in no function but in [unsampled: ...]: threads used it after "
		       "their last sample", 100.0 * (double)f->unsampled_ns / (double)f->pcpu);
}

int cp_session_write_locked(void)
{
	static struct comments c; /* under cp_tab_lock */
	c.n = c.used = 0;
	struct cp_engine_stats ts;
	cp_session_stats_locked(&ts);
	/* The profile accounts for the CPU of its samples, of the samples it
	 * lost, of each thread after its last sample and of cpuprof's own
	 * thread: each of the last three as a sample with a frame that says
	 * what it is. */
	uint64_t lost = atomic_load(&cp_sig.lost) + ts.lost + cp_session.run.dropped;
	struct cp_pseudo_sample pseudo[] = {
		{ "[lost]", lost, atomic_load(&cp_sig.lost_ns) + ts.lost_ns + cp_session.run.dropped_ns },
		{ ts.unsampled_what ? ts.unsampled_what : "[unsampled: after each thread's last sample]", 0,
		  ts.unsampled_ns },
		{ "[profiler: cpuprof's own thread]", 0, cp_session_keeper_cpu_ns() },
	};
	uint64_t prof_ns = cp_session.run.tab.total_ns;
	for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++)
		prof_ns += pseudo[i].ns;
	int64_t pcpu = (cp_session.run.cpu1 ? cp_session.run.cpu1 : cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID)) - cp_session.run.cpu0;
	double cov = pcpu > 0 ? (double)prof_ns / (double)pcpu : 0.0;
	uint64_t expected = pcpu > 0 ? (uint64_t)pcpu / cp_sig.period_ns : 0;
	long waits = cp_session.run.waits1;
	int64_t user = cp_session.run.user1;
	if (!cp_session.run.cpu1)
		cp_process_usage(&waits, &user);
	/* The mean CPU the process used between two waits of the program's
	 * threads. */
	waits -= cp_session.run.waits0 + atomic_load(&cp_session.run.keeper_waits);
	int64_t run_ns = waits > 0 ? pcpu / waits : pcpu;
	struct run_facts facts = {
		.cov = cov,
		.samples = cp_session.run.tab.total_count,
		.lost = lost,
		.expected = expected,
		.unsampled_ns = ts.unsampled_ns,
		.pcpu = pcpu,
		.user_ns = user - cp_session.run.user0,
		.run_ns = run_ns,
		.ts = &ts,
	};
	char warning[1024];
	judge(warning, sizeof warning, &facts);

	comment(&c, "engine=%s", cp_session.run.engine->name);
	if (cp_session.run.engine_reason[0])
		comment(&c, "engine_reason=%s", cp_session.run.engine_reason);
	comment(&c, "hz=%d", cp_session.run.hz);
	if (cp_session.run.hz != cp_session.run.hz_asked)
		comment(&c, "hz_asked=%d", cp_session.run.hz_asked);
	if (cp_session.run.signo)
		comment(&c, "signal=%d", cp_session.run.signo);
	comment(&c, "samples=%llu", (unsigned long long)cp_session.run.tab.total_count);
	/* What the rate asked for: far more than `samples` means the shares
	 * rest on fewer samples than the user thinks (a tick-bound kernel). */
	comment(&c, "expected_samples=%llu", (unsigned long long)expected);
	comment(&c, "lost=%llu", (unsigned long long)lost);
	/* coverage: the process's CPU the profile accounts for; attributed:
	 * the part of it that sampled stacks stand for. */
	comment(&c, "coverage=%.3f", cov);
	comment(&c, "attributed=%.3f", pcpu > 0 ? (double)cp_session.run.tab.total_ns / (double)pcpu : 0.0);
	comment(&c, "profile_cpu_ns=%llu", (unsigned long long)prof_ns);
	comment(&c, "process_cpu_ns=%lld", (long long)pcpu);
	comment(&c, "unsampled_cpu_ns=%llu", (unsigned long long)pseudo[1].ns);
	comment(&c, "profiler_cpu_ns=%llu", (unsigned long long)pseudo[2].ns);
	if (warning[0])
		comment(&c, "warning=%s", warning);
	comment(&c, "timer_resolution_ns=%ld", cp_session.run.timer_res_ns);
	comment(&c, "mean_run_ns=%lld", (long long)run_ns);
	comment(&c, "unwind=%s", unwind_mode_name(cp_sig.unwind_mode));
	if (cp_sig.unwind_mode != CP_UNWIND_FP) {
		struct unwind_summary us = { .c = &c };
		unwind_each_object(summarise_object, &us);
		comment(&c, "unwind_tables=%zu objects, %zu bytes", us.tables, us.bytes);
	}
	comment(&c, "max_depth=%u", cp_sig.max_depth);
	comment(&c, "threads=%llu", (unsigned long long)ts.armed);
	if (ts.throttled)
		comment(&c, "throttled=%llu", (unsigned long long)ts.throttled);
	if (ts.unarmed)
		comment(&c, "unarmed_threads=%llu (%s)", (unsigned long long)ts.unarmed, strerror(-ts.first_error));
	if (ts.blocked)
		comment(&c, "blocked_threads=%llu", (unsigned long long)ts.blocked);
#ifdef CPUPROF_BENCH
	/* Benchmark build only: the handler's own time (bench/run.py). */
	comment(&c, "handler_ns=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_ns));
	comment(&c, "handler_calls=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_calls));
	comment(&c, "handler_preempted=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_slow));
#endif

	struct cp_profile_meta meta = {
		.period_ns = cp_sig.period_ns,
		.time_nanos = cp_session.run.wall0,
		.duration_nanos = (cp_session.run.mono1 ? cp_session.run.mono1 : cp_clock_ns(CLOCK_MONOTONIC)) - cp_session.run.mono0,
		.pseudo = pseudo,
		.npseudo = sizeof pseudo / sizeof pseudo[0],
		.comments = c.list,
		.ncomments = c.n,
	};
	char err[256] = "";
	int rc = pprof_write(cp_session.run.path, &cp_session.run.tab, &meta, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "cpuprof: cannot write %s: %s\n", cp_session.run.path, err[0] ? err : strerror(-rc));
		return rc;
	}
	if (warning[0])
		fprintf(stderr, "cpuprof: warning: %s: %s\n", cp_session.run.path, warning);
	return 0;
}

