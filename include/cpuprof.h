/*
 * cpuprof.h -- the public interface of libcpuprof, a sampling CPU profiler
 * for native Linux programs that writes pprof profiles.
 *
 * Every function returns 0 on success or a negative errno-style code;
 * cpuprof_strerror() turns a code into text.  All calls are thread-safe;
 * none may be called from a signal handler.
 */
#ifndef CPUPROF_H
#define CPUPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Options for cpuprof_start().  Zero / NULL fields take their defaults, so
 * `struct cpuprof_options o = {0};` is the default configuration. */
struct cpuprof_options {
	int hz;             /* samples per second of thread CPU time (default 1000, 1..100000) */
	const char *engine; /* "auto" (default), "perf", "timer" or "itimer" */
	int signal;         /* sampling signal (default SIGPROF) */
	int max_depth;      /* frames kept per sample (default 128, 1..1024) */
	const char *unwind; /* how stacks are walked: "auto" (default: each object's
			       .eh_frame unwind tables, frame pointers where an
			       object has none), "dwarf" (tables only) or "fp"
			       (frame pointers only) */
};

/* Starts profiling the whole process into the pprof file `path` (written by
 * cpuprof_stop() or cpuprof_flush()).  Fails with -EBUSY if a profile is
 * already running, -EINVAL for bad options, -ENODEV if no engine works. */
int cpuprof_start(const char *path, const struct cpuprof_options *opts);

/* Stops sampling, drains every sample and writes the profile.  When it
 * returns no sampling signal handler of this profile is running and none
 * will.  -ESRCH if no profile is running; a write error is returned after
 * sampling has stopped. */
int cpuprof_stop(void);

/* Writes the profile collected so far to the path given to cpuprof_start(),
 * without stopping. */
int cpuprof_flush(void);

/* Registers the calling thread for sampling.  Threads that exist when
 * profiling starts and threads made with pthread_create() are registered
 * automatically; call this from a thread created by other means (raw
 * clone(), a foreign runtime).  Registering twice is harmless. */
int cpuprof_register_thread(void);

/* A static, human-readable description of a code returned above. */
const char *cpuprof_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
