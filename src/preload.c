/*
 * preload.c -- profiling a whole program with LD_PRELOAD=libcpuprof.so:
 * CPUPROF=FILE starts a profile before main() and writes it when the
 * program exits (return from main or exit() from any thread).  A bad
 * setting prints one warning and leaves the program unprofiled; setuid and
 * other secure-exec programs are never profiled.
 *
 * Environment: CPUPROF (output file), CPUPROF_HZ, CPUPROF_ENGINE,
 * CPUPROF_DEPTH, CPUPROF_SIGNAL, CPUPROF_UNWIND.  A process started by a
 * profiled process (fork+exec, which inherits the environment) writes
 * FILE.<pid> so that nothing is overwritten.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cpuprof.h"
#include "engine.h"

static int preload_started;

/* Parses env var `name` as an integer in [lo, hi] into *out (unchanged
 * when unset).  Returns -1 after printing the warning if it is bad. */
static int env_int(const char *name, long lo, long hi, int *out)
{
	const char *s = getenv(name);
	if (!s)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "cpuprof: %s=%s is not an integer in %ld..%ld; profiling disabled\n", name, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

__attribute__((constructor)) static void preload_start(void)
{
	const char *path = getenv("CPUPROF");
	if (!path || !*path || getauxval(AT_SECURE))
		return;

	struct cpuprof_options o = { 0 };
	if (env_int("CPUPROF_HZ", 1, 100000, &o.hz) < 0 || env_int("CPUPROF_DEPTH", 1, 1024, &o.max_depth) < 0 ||
	    env_int("CPUPROF_SIGNAL", 1, 64, &o.signal) < 0)
		return;
	o.engine = getenv("CPUPROF_ENGINE");
	if (o.engine && !cp_engine_known(o.engine)) {
		fprintf(stderr, "cpuprof: CPUPROF_ENGINE=%s is not one of auto, perf, hw, timer, itimer; profiling disabled\n",
			o.engine);
		return;
	}
	o.unwind = getenv("CPUPROF_UNWIND");
	if (o.unwind && strcmp(o.unwind, "auto") && strcmp(o.unwind, "dwarf") && strcmp(o.unwind, "fp")) {
		fprintf(stderr, "cpuprof: CPUPROF_UNWIND=%s is not one of auto, dwarf, fp; profiling disabled\n",
			o.unwind);
		return;
	}

	/* The first profiled process of a run owns FILE; its descendants
	 * write FILE.<pid>. */
	char own[32], file[PATH_MAX];
	snprintf(own, sizeof own, "%d", (int)getpid());
	const char *owner = getenv("CPUPROF_OWNER");
	if (owner && strcmp(owner, own) != 0) {
		if (snprintf(file, sizeof file, "%s.%s", path, own) >= (int)sizeof file) {
			fprintf(stderr, "cpuprof: CPUPROF path too long; profiling disabled\n");
			return;
		}
		path = file;
	} else {
		setenv("CPUPROF_OWNER", own, 1);
	}

	int rc = cpuprof_start(path, &o);
	if (rc < 0) {
		fprintf(stderr, "cpuprof: cannot start profiling: %s; profiling disabled\n", cpuprof_strerror(rc));
		return;
	}
	preload_started = 1;
}

__attribute__((destructor)) static void preload_stop(void)
{
	if (preload_started) {
		preload_started = 0;
		cpuprof_stop(); /* reports its own errors */
	}
}
