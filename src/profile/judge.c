/*
 * judge.c -- what a profile says about itself (judge.h): from its facts,
 * the comments that say how it was taken and what it covers, and the
 * warning that says, in plain words, where it is not what was asked for.
 * Plain computation, shared by the library and `cpuprof record`.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "judge.h"
#include "options.h"
#include "sig/sigstate.h"

__attribute__((format(printf, 2, 3))) void cp_comment(struct cp_comments *c, const char *fmt, ...)
{
	va_list ap;
	if (c->n == CP_MAX_COMMENTS || c->used >= sizeof c->buf)
		return;
	va_start(ap, fmt);
	int len = vsnprintf(c->buf + c->used, sizeof c->buf - c->used, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof c->buf - c->used)
		return; /* no room: dropped whole rather than cut */
	c->list[c->n++] = c->buf + c->used;
	c->used += (size_t)len + 1;
}

void cp_warning_add(struct cp_warning *w, const char *fmt, ...)
{
	size_t n = strlen(w->text), len = sizeof w->text;
	if (n && n + 2 < len) {
		memcpy(w->text + n, "; ", 3);
		n += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->text + n, len - n, fmt, ap);
	va_end(ap);
}

const char *cp_facts_unsampled_frame(const struct cp_facts *f)
{
	return f->unsampled_what[0] ? f->unsampled_what : "[unsampled: after each thread's last sample]";
}

size_t cp_facts_pseudo(const struct cp_facts *f, struct cp_pseudo_sample out[CP_FACTS_PSEUDO])
{
	out[0] = (struct cp_pseudo_sample){ "[lost]", f->lost, f->lost_ns };
	out[1] = (struct cp_pseudo_sample){ cp_facts_unsampled_frame(f), 0, f->unsampled_ns };
	out[2] = (struct cp_pseudo_sample){ "[profiler: cpuprof's own thread]", 0, f->profiler_ns };
	out[3] = (struct cp_pseudo_sample){ "[unsampled: before the profile started]", 0, f->before_ns };
	out[4] = (struct cp_pseudo_sample){ CP_FRAME_KERNEL_UNSAMPLED, 0, f->kernel_ns };
	out[5] = (struct cp_pseudo_sample){ CP_FRAME_WAKEUP, 0, f->wakeup_ns };
	return CP_FACTS_PSEUDO;
}

uint64_t cp_facts_profile_ns(const struct cp_facts *f)
{
	return f->sampled_ns + f->lost_ns + f->unsampled_ns + f->profiler_ns + f->before_ns + f->kernel_ns +
	       f->wakeup_ns;
}

double cp_facts_coverage(const struct cp_facts *f)
{
	return f->cpu_ns > 0 ? (double)cp_facts_profile_ns(f) / (double)f->cpu_ns : 0.0;
}

uint64_t cp_facts_expected(const struct cp_facts *f)
{
	return f->cpu_ns > 0 && f->period_ns ? (uint64_t)f->cpu_ns / f->period_ns : 0;
}

int64_t cp_facts_mean_run_ns(const struct cp_facts *f)
{
	return f->waits > 0 ? f->cpu_ns / f->waits : f->cpu_ns;
}

/* The off-CPU clauses: threads whose CPU and off-CPU time do not add up
 * to their lifetime (switch records lost, or wrong), switch-outs whose
 * stack was lost.  Judged however little CPU the run used: a program that
 * only waits is what off-CPU profiles are for. */
static void cp_judge_off_cpu(const struct cp_facts *f, struct cp_warning *w)
{
	if (f->off_cpu != CP_OFF_CPU_ON)
		return;
	if (f->acct.threads && (f->acct.min < 0.9 || f->acct.max > 1.1))
		cp_warning_add(w, "thread %d's CPU and off-CPU time add up to %.1f%% of its lifetime (%.3f s of %.3f s): "
		       "the profile's wall time is not the threads' (context-switch records lost?)", f->acct.worst,
		       100.0 * (double)(f->acct.cpu_ns + f->acct.off_ns) / (double)(f->acct.life_ns ? f->acct.life_ns : 1),
		       (double)(f->acct.cpu_ns + f->acct.off_ns) / 1e9, (double)f->acct.life_ns / 1e9);
	if (f->off_stackless * 100 > f->off_switches && f->off_switches)
		cp_warning_add(w, "%llu of %llu switch-outs lost their stack (a ring was full): their off-CPU time is in "
		       "[no stack]", (unsigned long long)f->off_stackless, (unsigned long long)f->off_switches);
}

/* Judged only once the run has used a few dozen periods or kernel ticks
 * (10 ms at most): before that, one sample more or less is already a few
 * percent of it. */
void cp_judge(const struct cp_facts *f, struct cp_warning *w)
{
	uint64_t unit = f->period_ns > 10000000 ? f->period_ns : 10000000;
	double cov = cp_facts_coverage(f);
	uint64_t expected = cp_facts_expected(f);
	int64_t run_ns = cp_facts_mean_run_ns(f);
	w->text[0] = '\0';
	if (f->hz != f->hz_asked)
		cp_warning_add(w, "sampled at %d Hz, not the %d Hz asked for: above that the kernel's own cost per "
		       "sample would take a tenth of the program's CPU time", f->hz, f->hz_asked);
	if (f->stopped_why[0])
		cp_warning_add(w, "%s", f->stopped_why);
	if (f->blocked)
		cp_warning_add(w, "%llu threads had signal %d blocked when the profile started: the %s engine samples "
		       "them only once they unblock it (the perf engines sample every thread, whatever its mask)",
		       (unsigned long long)f->blocked, f->signo, f->engine);
	/* A rate so low that no sample came: nothing says where the CPU
	 * went, however little of it there was. */
	if (f->samples + f->lost == 0 && f->cpu_ns >= 10000000 && f->period_ns && expected < 2 && !f->unarmed)
		cp_warning_add(w, "no sample in %.0f ms of CPU: at %d Hz a thread is sampled once every %.0f ms of its "
		       "CPU, so no function is shown; ask for a higher rate (-F)", (double)f->cpu_ns / 1e6, f->hz,
		       (double)f->period_ns / 1e6);
	if (f->cpu_ns < (int64_t)(32 * unit))
		return;
	if (cov < 0.9) {
		if (f->unarmed)
			cp_warning_add(w, "covers only %.1f%% of the process's CPU time: %llu threads could not be armed (%s)",
			       cov * 100, (unsigned long long)f->unarmed, strerror(-f->first_error));
		else
			cp_warning_add(w, "covers only %.1f%% of the process's CPU time: the rest was used by threads the "
			       "profiler did not see, or saw last more than a second before they ended", cov * 100);
	}
	if (f->lost * 100 > f->samples + f->lost)
		cp_warning_add(w, "%llu of %llu samples were lost (a ring was full: cpuprof's own thread fell behind); "
		       "their CPU is in [lost]", (unsigned long long)f->lost, (unsigned long long)(f->samples + f->lost));
	if ((f->samples + f->lost) * 8 < expected) {
		const char *cause;
		char tick[128];
		if (f->user_only) {
			cause = "the cycle counter overflowed less often than its calibration promised, or the "
				"threads spent most of their CPU in the kernel";
		} else if (f->timer_res_ns > CP_TICK_BOUND_NS) {
			snprintf(tick, sizeof tick, "this kernel's timers fire only at its tick, every %lld us, "
				 "and only for a thread running then", (long long)(f->timer_res_ns / 1000));
			cause = tick;
		} else if (f->tick_driven) {
			cause = "CPU-time timers fire only at the kernel's tick";
		} else {
			cause = "threads ran for less than a period, or the kernel sent fewer signals than asked for";
		}
		cp_warning_add(w, "%llu samples where %d Hz asks for %llu (%s): the CPU totals come from the "
		       "kernel's clocks, but each function's share rests on those samples",
		       (unsigned long long)(f->samples + f->lost), f->hz, (unsigned long long)expected, cause);
	}
	if (f->user_only && strcmp(f->engine, CP_ENGINE_HW) == 0 && (f->cpu_ns - f->user_ns) * 4 > f->cpu_ns)
		cp_warning_add(w, "about %.0f%% of the CPU time was spent in the kernel (its own estimate), where the hw "
		       "engine counts no cycles: that time is charged to the user code each thread ran next",
		       100.0 * (double)(f->cpu_ns - f->user_ns) / (double)f->cpu_ns);
	if (f->user_only && f->kernel_ns * 20 > (uint64_t)f->cpu_ns)
		cp_warning_add(w, "%.1f%% of the CPU time was spent in the kernel (system calls, page faults), where no "
		       "sample is taken without root, CAP_PERFMON or perf_event_paranoid <= 1: it is in %s, not charged "
		       "to the code that entered the kernel", 100.0 * (double)f->kernel_ns / (double)f->cpu_ns,
		       CP_FRAME_KERNEL_UNSAMPLED);
	/* On a tick-bound kernel a sleep also ends at a tick: threads that
	 * work less than a tick between sleeps run in step with it, and the
	 * samples, taken at ticks too (all engines but hw), see the same
	 * moments of every run. */
	if (f->timer_res_ns > CP_TICK_BOUND_NS && run_ns < f->timer_res_ns && !f->user_only)
		cp_warning_add(w, "the threads ran %lld us at a time between waits, less than this kernel's tick "
		       "(%lld us), and sleeps end at ticks, where the samples are taken too: each function's share "
		       "can be far off however many samples there are", (long long)(run_ns / 1000),
		       (long long)(f->timer_res_ns / 1000));
	cp_judge_off_cpu(f, w);
	if (f->unsampled_ns * 10 > (uint64_t)f->cpu_ns)
		cp_warning_add(w, "%.1f%% of the CPU time is in no function but in [unsampled: ...]: threads used it after "
		       "their last sample", 100.0 * (double)f->unsampled_ns / (double)f->cpu_ns);
}

/* What the profile says of off-CPU time: nothing unless it was asked
 * for; then whether it has it (or why not), how much, and how well each
 * thread's CPU and off-CPU time add up to its lifetime. */
static void cp_off_cpu_comments(struct cp_comments *c, const struct cp_facts *f)
{
	if (f->off_cpu == CP_OFF_CPU_ABSENT) {
		cp_comment(c, "off_cpu=absent: %s", f->off_cpu_why[0] ? f->off_cpu_why : "not recorded");
		return;
	}
	if (f->off_cpu != CP_OFF_CPU_ON)
		return;
	cp_comment(c, "off_cpu=recorded: a sample at every context switch, with the user stack where the thread left "
		   "the CPU, until it ran again");
	cp_comment(c, "off_cpu_ns=%llu", (unsigned long long)f->off_ns);
	cp_comment(c, "waiting_to_run_ns=%llu", (unsigned long long)f->runnable_ns);
	cp_comment(c, "off_cpu_switches=%llu", (unsigned long long)f->off_switches);
	if (f->off_stackless || f->off_unpaired)
		cp_comment(c, "off_cpu_lost=%llu stacks, %llu switch records", (unsigned long long)f->off_stackless,
			   (unsigned long long)f->off_unpaired);
	if (f->acct.threads)
		cp_comment(c, "off_cpu_accounted=%.4f..%.4f over %llu threads: (cpu + off-CPU) / lifetime; furthest: "
			   "thread %d, %llu + %llu ns of %llu ns", f->acct.min, f->acct.max,
			   (unsigned long long)f->acct.threads, f->acct.worst, (unsigned long long)f->acct.cpu_ns,
			   (unsigned long long)f->acct.off_ns, (unsigned long long)f->acct.life_ns);
	else
		cp_comment(c, "off_cpu_accounted=no thread whose lifetime and CPU are both known");
}

/* What the profile says of kernel frames: nothing unless they were asked
 * for; then whether it has them (or what refused them), and how much CPU
 * the samples taken in the kernel, under them, stand for. */
static void cp_kframes_comments(struct cp_comments *c, const struct cp_facts *f)
{
	if (f->kframes == CP_KFRAMES_ABSENT) {
		cp_comment(c, "kernel_frames=absent: %s", f->kframes_why[0] ? f->kframes_why : "not recorded");
	} else if (f->kframes == CP_KFRAMES_ON) {
		cp_comment(c, "kernel_frames=recorded: the kernel's part of each stack sampled in it, named from "
			   "/proc/kallsyms, in the mapping [kernel.kallsyms]");
		cp_comment(c, "kernel_frames_cpu_ns=%llu (the samples taken in the kernel, its part of the CPU by "
			   "samples)", (unsigned long long)f->kframes_ns);
	}
}

void cp_facts_comments(struct cp_comments *c, const struct cp_facts *f, const char *warning)
{
	cp_comment(c, "engine=%s", f->engine);
	if (f->engine_reason[0])
		cp_comment(c, "engine_reason=%s", f->engine_reason);
	cp_comment(c, "hz=%d", f->hz);
	if (f->hz != f->hz_asked)
		cp_comment(c, "hz_asked=%d", f->hz_asked);
	if (f->signo)
		cp_comment(c, "signal=%d", f->signo);
	cp_comment(c, "samples=%llu", (unsigned long long)f->samples);
	/* What the rate asked for: far more than `samples` means the shares
	 * rest on fewer samples than the user thinks (a tick-bound kernel). */
	cp_comment(c, "expected_samples=%llu", (unsigned long long)cp_facts_expected(f));
	cp_comment(c, "lost=%llu", (unsigned long long)f->lost);
	/* coverage: the CPU the kernel charged that the profile accounts for;
	 * attributed: the part of it that sampled stacks stand for. */
	cp_comment(c, "coverage=%.3f", cp_facts_coverage(f));
	cp_comment(c, "attributed=%.3f", f->cpu_ns > 0 ? (double)f->sampled_ns / (double)f->cpu_ns : 0.0);
	cp_comment(c, "profile_cpu_ns=%llu", (unsigned long long)cp_facts_profile_ns(f));
	cp_comment(c, "process_cpu_ns=%lld", (long long)f->cpu_ns);
	cp_comment(c, "unsampled_cpu_ns=%llu", (unsigned long long)f->unsampled_ns);
	if (f->user_ns > 0 && f->user_ns < f->cpu_ns)
		cp_comment(c, "kernel_cpu_ns=%lld (the kernel's estimate; %s)", (long long)(f->cpu_ns - f->user_ns),
			   f->user_only ? "user-mode samples only" :
			   f->kframes == CP_KFRAMES_ON ? "sampled, in kernel frames above the user stack that entered it" :
			   "sampled, charged to the user stack that entered it");
	cp_kframes_comments(c, f);
	if (f->user_only && f->kernel_ns)
		cp_comment(c, "kernel_unsampled_cpu_ns=%llu", (unsigned long long)f->kernel_ns);
	if (f->wakeup_ns)
		cp_comment(c, "switch_unseen_cpu_ns=%llu (charged by the scheduler to threads as they were switched in, "
			   "not counted by perf's task clock)", (unsigned long long)f->wakeup_ns);
	cp_comment(c, "profiler_cpu_ns=%llu", (unsigned long long)f->profiler_ns);
	if (f->before_ns)
		cp_comment(c, "before_start_cpu_ns=%llu", (unsigned long long)f->before_ns);
	if (warning && warning[0])
		cp_comment(c, "warning=%s", warning);
	cp_comment(c, "timer_resolution_ns=%lld", (long long)f->timer_res_ns);
	cp_comment(c, "mean_run_ns=%lld", (long long)cp_facts_mean_run_ns(f));
	cp_comment(c, "unwind=%s", cp_options[CP_OPT_UNWIND].choices[f->unwind]);
	cp_off_cpu_comments(c, f);
	if (f->unwind != CP_UNWIND_FP) {
		char cached[64] = "";
		if (f->unwind_cached)
			snprintf(cached, sizeof cached, ", %llu of them from the cache", (unsigned long long)f->unwind_cached);
		cp_comment(c, "unwind_tables=%llu objects, %llu bytes%s", (unsigned long long)f->unwind_tables,
			   (unsigned long long)f->unwind_bytes, cached);
	}
	for (size_t i = 0; i < sizeof f->unwind_rejected / sizeof f->unwind_rejected[0]; i++)
		if (f->unwind_rejected[i][0])
			cp_comment(c, "unwind_rejected=%.*s", (int)sizeof f->unwind_rejected[i], f->unwind_rejected[i]);
	cp_comment(c, "max_depth=%d", f->depth);
	cp_comment(c, "threads=%llu", (unsigned long long)f->armed);
	if (f->throttled)
		cp_comment(c, "throttled=%llu", (unsigned long long)f->throttled);
	if (f->ahead_ns)
		cp_comment(c, "clock_ahead_ns=%llu (taken off the samples: the task clock ran on where the kernel "
			   "charged no CPU, as while a VM's host takes its CPU)", (unsigned long long)f->ahead_ns);
	if (f->unarmed)
		cp_comment(c, "unarmed_threads=%llu (%s)", (unsigned long long)f->unarmed, strerror(-f->first_error));
	if (f->blocked)
		cp_comment(c, "blocked_threads=%llu", (unsigned long long)f->blocked);
}
