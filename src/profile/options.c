/*
 * options.c -- the table of settings (options.h) and its checks.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "sig/sigstate.h"

static const char *const engines[] = { "auto", CP_ENGINE_PERF, CP_ENGINE_HW, CP_ENGINE_TIMER, CP_ENGINE_ITIMER, NULL };
/* In the order of enum cp_unwind_mode: the parsed value is the mode. */
static const char *const unwinds[] = { "auto", "dwarf", "fp", NULL };
_Static_assert(CP_UNWIND_AUTO == 0 && CP_UNWIND_DWARF == 1 && CP_UNWIND_FP == 2, "unwinds[] follows the modes");

const struct cp_option cp_options[CP_NOPTIONS] = {
	/* Sampled at 10 kHz at most, whatever is asked (with a warning): at
	 * 10 kHz the kernel's part of a perf sample (timer interrupt, stack
	 * copy) already costs a tenth of the thread's CPU on the machines
	 * measured (docs/benchmarks.md); above the tick, the timer engines
	 * fire at the tick whatever is asked.  The library and record's
	 * events from outside alike. */
	[CP_OPT_HZ] = { .name = "hz", .env = "CPUPROF_HZ", .kind = CP_OPT_INT, .min = 1, .max = 100000, .def = 1000,
			.cap = 10000, .what = "the sampling rate, in samples per second of CPU time" },
	[CP_OPT_ENGINE] = { .name = "engine", .env = "CPUPROF_ENGINE", .kind = CP_OPT_CHOICE, .choices = engines,
			    .what = "the sampling engine" },
	[CP_OPT_SIGNAL] = { .name = "signal", .env = "CPUPROF_SIGNAL", .kind = CP_OPT_SIGNO, .min = 1, .max = 64,
			    .what = "the sampling signal of the timer and itimer engines" },
	[CP_OPT_DEPTH] = { .name = "max_depth", .env = "CPUPROF_DEPTH", .kind = CP_OPT_INT, .min = 1, .max = 1024,
			   .def = 128, .what = "the most frames kept per sample" },
	[CP_OPT_UNWIND] = { .name = "unwind", .env = "CPUPROF_UNWIND", .kind = CP_OPT_CHOICE, .choices = unwinds,
			    .what = "how stacks are walked" },
	/* 0 or 1: whether to record off-CPU time too (perf engine, with the
	 * kernel's leave: docs/off-cpu.md). */
	[CP_OPT_OFF_CPU] = { .name = "off_cpu", .env = "CPUPROF_OFF_CPU", .kind = CP_OPT_INT, .min = 0, .max = 1,
			     .what = "whether to record off-CPU time (0 or 1)" },
};

long cp_option_taken(const struct cp_option *o, long v)
{
	return o->cap && v > o->cap ? o->cap : v;
}

const char *cp_signal_unusable(int signo)
{
	if (signo == SIGPROF || (signo >= SIGRTMIN && signo <= SIGRTMAX))
		return NULL;
	if (signo < 1 || signo > 64)
		return "not a signal number";
	if (signo > 31)
		return "reserved by the C library";
	/* SIGTERM, SIGINT, SIGPIPE, SIGALRM... each means something of its
	 * own to the program or its users; SIGSEGV and the like mean a fault,
	 * SIGKILL and SIGSTOP cannot be caught. */
	return "it means something else to programs: use SIGPROF (27) or a real-time signal";
}

const char *cp_option_choices(const struct cp_option *o, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; o->choices && o->choices[i]; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", o->choices[i]);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}

int cp_option_check_int(const struct cp_option *o, long v, char *why, size_t len)
{
	if (o->kind == CP_OPT_SIGNO) {
		const char *bad = cp_signal_unusable((int)v);
		if (bad) {
			snprintf(why, len, "signal %ld cannot sample: %s", v, bad);
			return -1;
		}
		return 0;
	}
	if (v < o->min || v > o->max) {
		snprintf(why, len, "%s must be an integer from %ld to %ld", o->what, o->min, o->max);
		return -1;
	}
	return 0;
}

int cp_option_parse(const struct cp_option *o, const char *s, long *out, char *why, size_t len)
{
	if (o->kind == CP_OPT_CHOICE) {
		for (long i = 0; o->choices[i]; i++)
			if (strcmp(s, o->choices[i]) == 0) {
				*out = i;
				return 0;
			}
		char buf[128];
		snprintf(why, len, "'%s' is not %s: use one of %s", s, o->what, cp_option_choices(o, buf, sizeof buf));
		return -1;
	}
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end) {
		if (o->kind == CP_OPT_SIGNO)
			snprintf(why, len, "'%s' is not a signal number (SIGPROF is 27; real-time signals %d to %d)", s,
				 SIGRTMIN, SIGRTMAX);
		else
			snprintf(why, len, "'%s' is not an integer: %s must be from %ld to %ld", s, o->what, o->min,
				 o->max);
		return -1;
	}
	if (cp_option_check_int(o, v, why, len) < 0)
		return -1;
	*out = v;
	return 0;
}
