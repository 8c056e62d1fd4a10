/*
 * session.h -- what the files of cpuprof's gperftools drop-in share: the
 * profile being taken (profiler.c), the environment it is configured by
 * (environ.c), the CPUPROFILESIGNAL switch (toggle.c) and the warnings.
 * Every name here is hidden (the whole directory is built with
 * -fvisibility=hidden) and starts with gpt_, so none can meet a program's.
 */
#ifndef GPT_SESSION_H
#define GPT_SESSION_H

#include <limits.h>
#include <pthread.h>

/* How a profile was started: by the program (ProfilerStart), from
 * CPUPROFILE before main(), or by the CPUPROFILESIGNAL switch. */
enum gpt_origin { GPT_BY_PROGRAM, GPT_BY_ENV, GPT_BY_SWITCH };

/* The settings a profile starts with, read from the environment once per
 * start by gpt_env_settings(). */
struct gpt_settings {
	int hz;        /* CPUPROFILE_FREQUENCY, checked; 100 by default */
	int signo;     /* CPUPROFILE_TIMER_SIGNAL if the library samples with it, else 0: cpuprof's choice */
	int pprof;     /* 1: pprof, -1: the binary format, 0: by the file's name */
	const char *engine; /* CPUPROF_ENGINE if the library has it, else NULL: "auto" */
};

/* Starts a profile into `name` (as the program gave it).  Returns 1, or 0
 * with errno set (EBUSY if a profile is running, the open(2) error if the
 * file cannot be written, ENODEV if no engine works).  `origin` says
 * who asks; only GPT_BY_PROGRAM fails silently, as gperftools does. */
int gpt_start(const char *name, enum gpt_origin origin);

/* Stops the running profile, whoever started it, and writes it.  At exit
 * (`final`), no profile can start afterwards. */
void gpt_stop(int final);

/* One delivery of the CPUPROFILESIGNAL signal, acted on in the switch
 * thread: stops the profile the switch started, or starts the next
 * numbered one (base.0, base.1, ...). */
void gpt_switch(void);

/* Sets the switch's base file name. */
void gpt_switch_base(const char *base);

/* In a forked child: the switch's own thread (toggle.c). */
void gpt_toggle_after_fork(void);

/* Installs the CPUPROFILESIGNAL handler for the signal named by `value`
 * and starts the switch thread.  Returns 0, or -1 after one warning. */
int gpt_toggle_init(const char *value);

/* gperftools' per-process file name: the value of environment variable
 * `env` into out[PATH_MAX], with "_<pid>" appended in a process whose
 * parent already claimed the plain name (it sets the high bit of the
 * value's first byte, in place, for its children to see).  Returns 0 if
 * the variable is unset or empty. */
int gpt_unique_path(const char *env, char *out);

/* The settings for a profile about to start, warning once per process
 * about each bad or unsupported variable.  The engine and the signal are
 * checked by the library's own rules (cpuprof_check_setting()). */
void gpt_env_settings(struct gpt_settings *s);

/* Registers the fork handlers.  Called by environ.c's constructor, which
 * the build runs after cpuprof's, so that in a forked child cpuprof's fork
 * handler has forgotten the parent's profile before the child's switch
 * thread can start one. */
void gpt_profiler_init(void);

/* Makes a thread running fn(arg) with every signal blocked, so that no
 * signal of the program's or of the profiler's ever runs a handler in it,
 * and not through cpuprof's pthread_create(), so that a timer engine does
 * not arm it.  Returns 0 or an errno. */
int gpt_spawn(pthread_t *th, void *(*fn)(void *), void *arg);

/* Prints "cpuprof: " and the message as one line on stderr. */
void gpt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
