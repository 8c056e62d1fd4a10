/*
 * cpuprof.h -- the public interface of libcpuprof, a sampling CPU profiler
 * for native Linux programs that writes pprof profiles.
 *
 * Every function returns 0 on success or a negative errno-style code;
 * cpuprof_strerror() turns a code into text, and cpuprof_last_error() says
 * why the calling thread's last call failed.  All calls are thread-safe;
 * none may be called from a signal handler.
 */
#ifndef CPUPROF_H
#define CPUPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports: it is built with hidden visibility, and its
 * definitions take their visibility from these declarations. */
#define CPUPROF_API __attribute__((visibility("default")))

/* Options for cpuprof_start().  Zero / NULL fields take their defaults, so
 * `struct cpuprof_options o = {0};` is the default configuration. */
struct cpuprof_options {
	int hz;             /* samples per second of thread CPU time (default 1000, 1..100000) */
	const char *engine; /* "auto" (default), "perf", "hw", "timer" or "itimer" */
	int signal;         /* sampling signal (default: SIGPROF, or a free real-time
	                       signal if the program has a SIGPROF handler of its own) */
	int max_depth;      /* frames kept per sample (default 128, 1..1024) */
	const char *unwind; /* how stacks are walked: "auto" (default: each object's
			       .eh_frame unwind tables, frame pointers where an
			       object has none), "dwarf" (tables only) or "fp"
			       (frame pointers only) */
	int off_cpu;        /* 1: also the time each thread spends off the CPU
			       (blocked, or waiting to run), charged to the stack
			       where it left the CPU: the profile gets the sample
			       types off_cpu and wall beside cpu.  Needs the perf
			       engine (perf or hw) and the kernel's leave to sample
			       kernel mode (root, CAP_PERFMON or
			       perf_event_paranoid <= 1); where it has neither the
			       profile holds CPU only, says why in its comments, and
			       one line on stderr says so at the start.  Files only
			       (not the record stream).  0 (default): CPU only.
			       Fields are only ever added at the end. */
};

/* Starts profiling the whole process into the pprof file `path` (written by
 * cpuprof_stop() or cpuprof_flush()).  Fails with -EBUSY if a profile is
 * already running, -EINVAL for bad options, -ENODEV if no engine works. */
CPUPROF_API int cpuprof_start(const char *path, const struct cpuprof_options *opts);

/* Stops sampling, drains every sample and writes the profile.  When it
 * returns no sampling signal handler of this profile is running and none
 * will.  -ESRCH if no profile is running; a write error is returned after
 * sampling has stopped. */
CPUPROF_API int cpuprof_stop(void);

/* Writes the profile collected so far to the path given to cpuprof_start(),
 * without stopping. */
CPUPROF_API int cpuprof_flush(void);

/* Registers the calling thread for sampling.  Threads that exist when
 * profiling starts and threads made with pthread_create() are registered
 * automatically; call this from a thread created by other means (raw
 * clone(), a foreign runtime).  Registering twice is harmless. */
CPUPROF_API int cpuprof_register_thread(void);

/*
 * The record stream, for language runtimes that build their own profile:
 * the words of Go's runtime/pprof profBuf stream.  A header {3, 0, hz}
 * first and once; a sample {3+n, 0, count, pc[0..n)} with the interrupted
 * PC first and return addresses after it, count in sampling periods of CPU
 * time (fractions carry to the next sample); lost samples {4, 0, 0, lost}.
 *
 * cpuprof_start_stream() starts a profile whose samples are read with
 * cpuprof_read_stream() (by one reader at a time) instead of a drain
 * thread; it writes `path` too, at end of stream, unless path is NULL.
 * cpuprof_stop() ends sampling; the reader then gets what is left and
 * CPUPROF_EOF.  Until the reader has seen CPUPROF_EOF no new profile can
 * start (-EBUSY), so no sample of one profile can reach the next.  A
 * reader that falls behind makes samples lost, never a handler block.
 */
CPUPROF_API int cpuprof_start_stream(const char *path, const struct cpuprof_options *opts);

#define CPUPROF_NONBLOCK 1 /* flag: return at once when nothing is ready */
#define CPUPROF_EOF 1      /* return value: end of stream */

/* Reads whole records into words[0..cap) and their length into *nwords.
 * Returns 0 (with *nwords 0 only under CPUPROF_NONBLOCK), CPUPROF_EOF once
 * the stream is stopped and drained (and whenever no stream is open), or a
 * negative code: -EINVAL if cap < max_depth + 4 words.  Blocking reads
 * wait until a record is ready or the stream ends. */
CPUPROF_API int cpuprof_read_stream(uint64_t *words, size_t cap, size_t *nwords, int flags);

/* A static, human-readable description of a code returned above. */
CPUPROF_API const char *cpuprof_strerror(int code);

/* Checks `value`, a setting of struct cpuprof_options given as text (as
 * an environment gives it), by the rule cpuprof_start() holds that field
 * to: `name` is the field's ("hz", "engine", "signal", "max_depth",
 * "unwind" or "off_cpu"), `value` a decimal number or, for engine and
 * unwind, a name.  Returns 0, or -EINVAL (-ENOENT for a name that is no
 * setting) with one line saying why in why[len]. */
CPUPROF_API int cpuprof_check_setting(const char *name, const char *value, char *why, size_t len);

/* Why the calling thread's last failed cpuprof_* call failed, in one line:
 * the reason where cpuprof knows one ("invalid option hz=-1: ...", "no
 * sampling engine works here: hw: ..."), else cpuprof_strerror()'s text
 * for its code.  Never NULL: "" until a call of this thread fails.  A call
 * that succeeds leaves it as it is (as errno); each failed call replaces
 * it.  The text is the thread's own and stays until its next failed
 * call. */
CPUPROF_API const char *cpuprof_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
