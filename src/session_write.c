/*
 * session_write.c -- what a profile says about itself (its facts, from the
 * session, the engine and the unwind tables) and its file: the comments,
 * the pseudo-frames and the pprof written whole (session.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpuprof.h"
#include "base/error.h"
#include "profile/judge.h"
#include "profile/names.h"
#include "profile/pprof_write.h"
#include "session.h"
#include "symbolize/jit.h"
#include "symbolize/symbols.h"
#include "unwind/tables.h"

/* What the unwind tables add up to, into facts. */
static void summarise_object(const struct unwind_object *o, void *arg)
{
	struct cp_facts *f = arg;
	if (o->has_table) {
		f->unwind_tables++;
		f->unwind_bytes += o->table_bytes;
		f->unwind_cached += (uint64_t)o->cached;
	}
	for (size_t i = 0; o->rejected && i < sizeof f->unwind_rejected / sizeof f->unwind_rejected[0]; i++)
		if (!f->unwind_rejected[i][0]) {
			snprintf(f->unwind_rejected[i], sizeof f->unwind_rejected[i], "%s: %s", o->name, o->why);
			break;
		}
}

void cp_session_facts_locked(struct cp_facts *f)
{
	struct cp_run *R = &cp_session.run;
	struct cp_engine_stats ts;
	cp_session_stats_locked(&ts);
	memset(f, 0, sizeof *f);
	snprintf(f->engine, sizeof f->engine, "%s", R->engine->name);
	snprintf(f->engine_reason, sizeof f->engine_reason, "%s", R->engine_reason);
	snprintf(f->stopped_why, sizeof f->stopped_why, "%s", R->stopped_why);
	f->hz = R->hz;
	f->hz_asked = R->hz_asked;
	f->signo = R->signo;
	f->depth = (int32_t)R->depth;
	f->unwind = R->unwind;
	f->tick_driven = R->engine->tick_driven;
	f->user_only = R->engine->user_only || ts.user_only;
	f->timer_res_ns = R->timer_res_ns;
	f->period_ns = cp_sig.period_ns;
	f->wall0_ns = R->wall0;
	f->mono0_ns = R->mono0;
	f->cpu0_ns = R->cpu0;
	f->duration_ns = (R->mono1 ? R->mono1 : cp_clock_ns(CLOCK_MONOTONIC)) - R->mono0;
	f->cpu_ns = (R->cpu1 ? R->cpu1 : cp_clock_ns(CLOCK_PROCESS_CPUTIME_ID)) - R->cpu0;
	/* Preloaded, the profile is of the process's whole life: what it ran
	 * before the start (the loader, the constructors, the start itself)
	 * is in it, under a frame that says so, as record counts it. */
	if (R->whole) {
		f->before_ns = (uint64_t)R->cpu0;
		f->cpu_ns += R->cpu0;
	}
	long waits = R->waits1;
	int64_t user = R->user1;
	if (!R->cpu1)
		cp_process_usage(&waits, &user);
	f->user_ns = user - R->user0;
	/* The program's waits: cpuprof's own thread's are not. */
	f->waits = waits - R->waits0 - atomic_load(&R->keeper_waits);
	f->samples = R->tab.total_count;
	f->sampled_ns = R->tab.total_ns;
	f->lost = atomic_load(&cp_sig.lost) + ts.lost + R->dropped;
	f->lost_ns = atomic_load(&cp_sig.lost_ns) + ts.lost_ns + R->dropped_ns;
	f->unsampled_ns = ts.unsampled_ns;
	f->kernel_ns = ts.kernel_ns;
	f->wakeup_ns = ts.wakeup_ns;
	if (ts.unsampled_what)
		snprintf(f->unsampled_what, sizeof f->unsampled_what, "%s", ts.unsampled_what);
	f->profiler_ns = cp_session_keeper_cpu_ns();
	f->armed = ts.armed;
	f->unarmed = ts.unarmed;
	f->blocked = ts.blocked;
	f->throttled = ts.throttled;
	f->ahead_ns = ts.ahead_ns;
	f->first_error = ts.first_error;
	if (R->unwind != CP_UNWIND_FP)
		cp_unwind_each_object(summarise_object, f);
	if (R->off_cpu_asked) {
		f->off_cpu = R->off_cpu_why[0] ? CP_OFF_CPU_ABSENT : ts.off_cpu ? ts.off_cpu : CP_OFF_CPU_ABSENT;
		snprintf(f->off_cpu_why, sizeof f->off_cpu_why, "%s",
			 R->off_cpu_why[0] ? R->off_cpu_why : ts.off_cpu_why ? ts.off_cpu_why : "");
		f->off_ns = R->tab.total_off_ns;
		f->runnable_ns = R->tab.total_runnable_ns;
		f->off_switches = R->tab.total_off_count;
		f->off_stackless = ts.off_stackless;
		f->off_unpaired = ts.off_unpaired;
		f->acct = ts.acct;
	}
}

/* This process's name: its program's base name. */
static const char *own_name(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	const char *slash = strrchr(buf, '/');
	return slash ? slash + 1 : buf;
}

static const char *own_thread_name(const void *arg, uint32_t tid)
{
	char *buf = (char *)arg;
	return cp_names_get((pid_t)tid, buf) ? buf : NULL;
}

/* Writes the profile file from a table and the facts taken with it.
 * Needs no lock: the table is the session's (sampling stopped) or a copy
 * of it. */
int cp_session_write_profile(struct cp_stacktab *tab, const struct cp_facts *f, int spend)
{
	/* Not calloc: zeroing its 32 KiB buffer would touch pages a short
	 * process's few comments never reach. */
	struct cp_comments *c = malloc(sizeof *c);
	if (!c) {
		cp_error_set("cannot write %s: out of memory", cp_session.run.path);
		fprintf(stderr, "cpuprof: %s\n", cp_error_last());
		return -ENOMEM;
	}
	c->n = c->used = 0;
	struct cp_warning warning;
	cp_judge(f, &warning);
	cp_facts_comments(c, f, warning.text);
#ifdef CPUPROF_BENCH
	/* Benchmark build only: the handler's own time (bench/run.py). */
	cp_comment(c, "handler_ns=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_ns));
	cp_comment(c, "handler_calls=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_calls));
	cp_comment(c, "handler_preempted=%llu", (unsigned long long)atomic_load(&cp_sig.bench_handler_slow));
#endif
	/* The profile accounts for the CPU of its samples, of the samples it
	 * lost, of each thread after its last sample and of cpuprof's own
	 * thread: each of the last three as a sample with a frame that says
	 * what it is. */
	struct cp_pseudo_sample pseudo[CP_FACTS_PSEUDO];
	struct cp_profile_meta meta = {
		.period_ns = f->period_ns,
		.time_nanos = f->wall0_ns,
		.start_mono_ns = (uint64_t)f->mono0_ns,
		.duration_nanos = f->duration_ns,
		.pseudo = pseudo,
		.npseudo = cp_facts_pseudo(f, pseudo),
		.comments = c->list,
		.ncomments = c->n,
		.off_cpu = f->off_cpu == CP_OFF_CPU_ON,
	};
	char err[256] = "", exe[4096], name[CP_NAME_MAX];
	const char *path = cp_session.run.path;
	/* One part: this process, symbolized from what it has loaded now,
	 * labelled with its pid and name and its threads'. */
	struct cp_profile_part part = {
		/* A profile without a stack names no object: no snapshot. */
		.syms = tab->len ? cp_symbols_load() : cp_symbols_from_objects(NULL, 0, NULL),
		/* What a JIT of this process told perf of its code. */
		.jit = tab->len ? cp_jit_load(getpid()) : NULL,
		.tab = tab,
		.spend = spend ? tab : NULL,
		.pid = getpid(),
		.process = own_name(exe, sizeof exe),
		.thread_name = own_thread_name,
		.arg = name,
	};
	int rc = part.syms ? cp_pprof_write_parts(path, &part, 1, &meta, err, sizeof err) : -ENOMEM;
	cp_symbols_free((struct cp_symbols *)part.syms);
	cp_jit_free((struct cp_jit *)part.jit);
	free(c);
	if (rc < 0) {
		cp_error_set("cannot write %s: %s", path, err[0] ? err : strerror(-rc));
		fprintf(stderr, "cpuprof: %s\n", cp_error_last());
		return rc;
	}
	if (warning.text[0])
		fprintf(stderr, "cpuprof: warning: %s: %s\n", path, warning.text);
	return 0;
}

int cp_session_write_locked(int spend)
{
	struct cp_facts f;
	cp_session_facts_locked(&f);
	return cp_session_write_profile(&cp_session.run.tab, &f, spend);
}
