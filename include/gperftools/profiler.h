/*
 * gperftools/profiler.h -- gperftools 2.10's CPU-profiler interface, as
 * cpuprof's libprofiler provides it (compat/gperftools/): the same
 * functions, structures and layout, so that programs written for
 * gperftools build against this header and programs built against
 * gperftools' own run on cpuprof's library unchanged.
 *
 * Profiling starts with ProfilerStart() or before main() when the
 * environment names a file (CPUPROFILE=FILE); every thread of the process
 * is sampled, whether or not it calls ProfilerRegisterThread().  The file
 * is gperftools' binary CPU profile, which `pprof`, `google-pprof` and
 * `go tool pprof` read; a name ending in ".pb.gz" (or CPUPROFILE_FORMAT=
 * pprof) gets a gzipped pprof profile instead.  README.md ("A drop-in for
 * gperftools' CPU profiler") lists the environment and the differences
 * from gperftools.  All functions are thread-safe.
 */
#ifndef BASE_PROFILER_H_
#define BASE_PROFILER_H_

#include <time.h> /* time_t */

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Options for ProfilerStartWithOptions(); clear the whole structure
 * (memset) before setting fields.
 *
 * filter_in_thread(filter_in_thread_arg) is what gperftools calls in its
 * signal handler to decide whether a sample is kept.  cpuprof's sampling
 * has no such hook: the profile is started, of every thread, and one
 * warning line says that the filter was not applied. */
struct ProfilerOptions {
	int (*filter_in_thread)(void *arg);
	void *filter_in_thread_arg;
};

/* Starts profiling into fname, discarding what the file held.  Returns
 * nonzero on success, 0 if a profile is already running or the file cannot
 * be opened for writing (errno says why) or no sampling engine works. */
PERFTOOLS_DLL_DECL int ProfilerStart(const char *fname);

/* ProfilerStart() with options (NULL: the defaults).  The sampling rate is
 * CPUPROFILE_FREQUENCY's (default 100 per second of CPU time). */
PERFTOOLS_DLL_DECL int ProfilerStartWithOptions(const char *fname, const struct ProfilerOptions *options);

/* Stops profiling and writes the file.  Does nothing if no profile runs. */
PERFTOOLS_DLL_DECL void ProfilerStop(void);

/* Writes what has been collected so far to the file (a complete profile
 * in the binary format; nothing for a pprof file, written only at stop).
 * Does nothing if no profile runs, or if another thread is starting,
 * stopping or flushing at the same moment.  May be called from a signal
 * handler. */
PERFTOOLS_DLL_DECL void ProfilerFlush(void);

/* No-ops, as in gperftools. */
PERFTOOLS_DLL_DECL void ProfilerEnable(void);
PERFTOOLS_DLL_DECL void ProfilerDisable(void);

/* Nonzero while a profile runs (every thread is then sampled). */
PERFTOOLS_DLL_DECL int ProfilingIsEnabledForAllThreads(void);

/* Harmless: threads made with pthread_create() and threads that exist
 * when profiling starts are sampled anyway; a thread made by other means
 * (raw clone()) registers itself with this. */
PERFTOOLS_DLL_DECL void ProfilerRegisterThread(void);

struct ProfilerState {
	int enabled;             /* a profile is running */
	time_t start_time;       /* when it started (0 if none) */
	char profile_name[1024]; /* its file ("" if none) */
	int samples_gathered;    /* its samples so far, in sampling periods */
};

/* The current profile's state into *state.  May be called from a signal
 * handler. */
PERFTOOLS_DLL_DECL void ProfilerGetCurrentState(struct ProfilerState *state);

/* The calling thread's stack: up to max_depth return addresses into
 * result, the caller of this function first, after skipping skip_count
 * more frames.  With uc (the third argument of an SA_SIGINFO handler), the
 * stack the signal interrupted instead, its interrupted PC first
 * (skip_count is then not applied).  Returns the number stored. */
PERFTOOLS_DLL_DECL int ProfilerGetStackTrace(void **result, int max_depth, int skip_count, const void *uc);

#ifdef __cplusplus
}
#endif

#endif /* BASE_PROFILER_H_ */
