/*
 * preload.c -- profiling a whole program with LD_PRELOAD=libcpuprof.so:
 * CPUPROF=FILE starts a profile before main() and writes it when the
 * program exits (return from main, exit() or _exit() from any thread) or
 * execs another program.  A bad setting prints one warning and leaves the
 * program unprofiled; setuid and other secure-exec programs are never
 * profiled.
 *
 * Environment: CPUPROF (output file) and the settings of options.h
 * (CPUPROF_HZ, CPUPROF_ENGINE, CPUPROF_DEPTH, CPUPROF_SIGNAL,
 * CPUPROF_UNWIND, CPUPROF_OFF_CPU).  A process started by a profiled process (fork+exec,
 * which inherits the environment) writes FILE.<pid> so that nothing is
 * overwritten.
 *
 * Under `cpuprof record`, CPUPROF_SHM names record's shared memory
 * instead: every process of the tree (forked children too) writes its
 * samples there as it takes them, and record writes the profile.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cpuprof.h"
#include "profile/options.h"
#include "session.h"
#include "shm/shm.h"
#include "shm/writer.h"

static int preload_started;

/* Reads the settings of options.h from their CPUPROF_* variables into
 * *o, each by the table's own rule: as the user set them, or as `cpuprof
 * record` hands them on (the values it took, record.c).  A choice is the
 * table's own name.  Returns -1 after printing the warning if one is
 * bad. */
static int env_options(struct cpuprof_options *o)
{
	long v[CP_NOPTIONS] = { 0 };
	for (int id = 0; id < CP_NOPTIONS; id++) {
		const struct cp_option *opt = &cp_options[id];
		const char *s = getenv(opt->env);
		char why[256];
		if (s && cp_option_parse(opt, s, &v[id], why, sizeof why) < 0) {
			fprintf(stderr, "cpuprof: %s=%s: %s; profiling disabled\n", opt->env, s, why);
			return -1;
		}
	}
	o->hz = (int)v[CP_OPT_HZ];
	o->max_depth = (int)v[CP_OPT_DEPTH];
	o->signal = (int)v[CP_OPT_SIGNAL];
	o->off_cpu = (int)v[CP_OPT_OFF_CPU];
	o->engine = cp_options[CP_OPT_ENGINE].choices[v[CP_OPT_ENGINE]];
	o->unwind = cp_options[CP_OPT_UNWIND].choices[v[CP_OPT_UNWIND]];
	return 0;
}

/* Why the start failed, in words: the library's reason (where no engine
 * could sample, each engine's own, the engine asked for or every one auto
 * tried). */
static const char *start_failure(int rc)
{
	return cpuprof_last_error();
}

__attribute__((constructor)) static void preload_start(void)
{
	const char *path = getenv("CPUPROF"), *shm = getenv(CP_SHM_ENV);
	if ((!path || !*path) && (!shm || !*shm))
		return;
	if (getauxval(AT_SECURE))
		return;

	struct cpuprof_options o = { 0 };
	if (env_options(&o) < 0)
		return;

	if (shm && *shm) {
		char why[512];
		if (cp_shm_attach(shm, why, sizeof why) < 0) {
			fprintf(stderr, "cpuprof: %s; profiling disabled\n", why);
			return;
		}
		int rc = cp_session_start_recorded(&o);
		if (rc < 0) {
			fprintf(stderr, "cpuprof: cannot start profiling: %s; profiling disabled\n",
				rc == -ENOSPC ? "cpuprof record has no room for another process" : start_failure(rc));
			return;
		}
		preload_started = 1;
		return;
	}

	/* The first profiled process of a run owns FILE; its descendants
	 * write FILE.<pid>; the program a process exec'd, FILE.<pid>.<n> after
	 * its n-th exec (as `record --per-process` names them), so that what
	 * ran before the exec, written at it, is kept.  CPUPROF_IMAGE, "pid.n"
	 * of the last image that started, tells an image that follows an exec
	 * of the same process (where the program passed its environment on)
	 * from a new process. */
	char own[32], file[PATH_MAX], image[48];
	snprintf(own, sizeof own, "%d", (int)getpid());
	const char *owner = getenv("CPUPROF_OWNER"), *last = getenv("CPUPROF_IMAGE");
	size_t ownlen = strlen(own);
	long n = last && strncmp(last, own, ownlen) == 0 && last[ownlen] == '.' ? atol(last + ownlen + 1) + 1 : 0;
	snprintf(image, sizeof image, "%s.%ld", own, n);
	setenv("CPUPROF_IMAGE", image, 1);
	int len = 0;
	if (n > 0)
		len = snprintf(file, sizeof file, "%s.%s.%ld", path, own, n);
	else if (owner && strcmp(owner, own) != 0)
		len = snprintf(file, sizeof file, "%s.%s", path, own);
	else
		setenv("CPUPROF_OWNER", own, 1);
	if (len >= (int)sizeof file) {
		fprintf(stderr, "cpuprof: CPUPROF path too long; profiling disabled\n");
		return;
	}
	if (len > 0)
		path = file;

	/* After an exec the process's CPU clock holds the images before it,
	 * whose files have their CPU: this one's starts with its profile. */
	int rc = cp_session_start_preloaded(path, n == 0, &o);
	if (rc < 0) {
		fprintf(stderr, "cpuprof: cannot start profiling: %s; profiling disabled\n", start_failure(rc));
		return;
	}
	preload_started = 1;
}

__attribute__((destructor)) static void preload_stop(void)
{
	if (preload_started) {
		preload_started = 0;
		cp_session_stop_at_exit(); /* reports its own errors */
	}
}
