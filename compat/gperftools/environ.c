/*
 * environ.c -- gperftools' environment (autostart.c reads it before
 * main(), each start its settings):
 *
 *   CPUPROFILE=FILE              profile the whole run into FILE, written
 *                                at exit; a program it starts (fork+exec)
 *                                writes FILE_<pid> (gperftools' scheme: the
 *                                first process sets the high bit of the
 *                                value's first byte, in place, and every
 *                                process that sees it set adds its pid)
 *   CPUPROFILESIGNAL=N           instead, each delivery of signal N starts
 *                                or stops a profile: FILE.0, FILE.1, ...
 *   CPUPROFILE_FREQUENCY=HZ      samples per second of CPU time (default
 *                                100, at most 4000, as in gperftools)
 *   CPUPROFILE_REALTIME          gperftools' wall-clock timer: cpuprof
 *                                samples CPU time, and says so once
 *   CPUPROFILE_PER_THREAD_TIMERS accepted: every thread has its own timer
 *   CPUPROFILE_TIMER_SIGNAL=N    the sampling signal
 *   CPUPROFILE_FORMAT=F          cpuprof's addition: "pprof" or "legacy"
 *                                (default: pprof for names ending .pb.gz)
 *   CPUPROF_ENGINE=E             cpuprof's own: auto, perf, hw, timer or
 *                                itimer (README, "Engines")
 *
 * A bad value prints one line and takes gperftools' default (a rate, the
 * sampling signal, the engine), or leaves the program unprofiled (the
 * switch's signal, a file); nothing here ever stops the program.  The
 * engine and the sampling signal are checked by the library's own rules
 * (cpuprof_check_setting()): what it takes is taken, what it would refuse
 * is not.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpuprof.h>

#include "environ.h"

#define DEFAULT_HZ 100 /* gperftools' kDefaultFrequency */
#define MAX_HZ 4000    /* gperftools' kMaxFrequency */

void gpt_warn(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cpuprof: %s\n", line);
}

int gpt_unique_path(const char *env, char *out)
{
	unsigned char *v = (unsigned char *)getenv(env);
	if (!v || !*v)
		return 0;
	if (v[0] & 128) {
		snprintf(out, PATH_MAX, "%c%s_%u", v[0] & 127, (char *)v + 1, (unsigned)getpid());
	} else {
		snprintf(out, PATH_MAX, "%s", (char *)v);
		v[0] |= 128; /* for the children to see */
	}
	return 1;
}

/* Parses `s` as a whole integer (base 0: 10, 0x1a, 012) into *v; one too
 * large for a long is LONG_MAX. */
static int whole_long(const char *s, int base, long *v)
{
	char *end;
	errno = 0;
	*v = strtol(s, &end, base);
	return (!errno || (errno == ERANGE && *v == LONG_MAX)) && end != s && !*end;
}

/* The sampling signal of CPUPROFILE_TIMER_SIGNAL (any base, as
 * gperftools reads it), if the library samples with it: else 0, after
 * one warning (*warned) saying why not. */
static int timer_signal(const char *v, int *warned)
{
	char num[32], why[256];
	long n;
	if (whole_long(v, 0, &n))
		snprintf(num, sizeof num, "%ld", n);
	else
		snprintf(num, sizeof num, "%.31s", v);
	if (cpuprof_check_setting("signal", num, why, sizeof why) == 0)
		return (int)n;
	if (!(*warned)++)
		gpt_warn("CPUPROFILE_TIMER_SIGNAL='%s': %s; cpuprof chooses one", v, why);
	return 0;
}

void gpt_env_settings(struct gpt_settings *s)
{
	/* Each warning once per process: a switch that starts many
	 * profiles, or a forked child, does not repeat it. */
	static int warned_hz, warned_realtime, warned_signal, warned_format, warned_engine;
	char why[256];
	const char *v;
	long n;

	s->hz = DEFAULT_HZ;
	if ((v = getenv("CPUPROFILE_FREQUENCY")) != NULL) {
		if (!whole_long(v, 10, &n) || n < 1) {
			if (!warned_hz++)
				gpt_warn("CPUPROFILE_FREQUENCY='%s' is not a positive integer; sampling at gperftools' "
					 "default, %d Hz", v, DEFAULT_HZ);
		} else if (n > MAX_HZ) {
			if (!warned_hz++)
				gpt_warn("CPUPROFILE_FREQUENCY=%s is above gperftools' limit; sampling at %d Hz", v,
					 MAX_HZ);
			s->hz = MAX_HZ;
		} else {
			s->hz = (int)n;
		}
	}
	if (getenv("CPUPROFILE_REALTIME") && !warned_realtime++)
		gpt_warn("CPUPROFILE_REALTIME: cpuprof samples CPU time, not wall-clock time; profiling the CPU "
			 "time of every thread");
	s->signo = 0;
	if ((v = getenv("CPUPROFILE_TIMER_SIGNAL")) != NULL)
		s->signo = timer_signal(v, &warned_signal);
	s->pprof = 0;
	if ((v = getenv("CPUPROFILE_FORMAT")) != NULL) {
		if (!strcmp(v, "pprof"))
			s->pprof = 1;
		else if (!strcmp(v, "legacy"))
			s->pprof = -1;
		else if (!warned_format++)
			gpt_warn("CPUPROFILE_FORMAT='%s' is not pprof or legacy; the format follows the file's name", v);
	}
	s->engine = NULL;
	if ((v = getenv("CPUPROF_ENGINE")) != NULL) {
		if (cpuprof_check_setting("engine", v, why, sizeof why) == 0)
			s->engine = v;
		else if (!warned_engine++)
			gpt_warn("CPUPROF_ENGINE='%s': %s; using auto", v, why);
	}
}
