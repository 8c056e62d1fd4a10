/*
 * environ.h -- gperftools' environment (environ.c): the settings a
 * profile starts with, the per-process file name, and the one-line
 * warnings every file of the drop-in says things with.  The bottom of the
 * drop-in: it calls nothing else of it.  Hidden names, gpt_ (gp_session.h).
 */
#ifndef GPT_ENVIRON_H
#define GPT_ENVIRON_H

/* The settings a profile starts with, read from the environment once per
 * start by gpt_env_settings(). */
struct gpt_settings {
	int hz;        /* CPUPROFILE_FREQUENCY, checked; 100 by default */
	int signo;     /* CPUPROFILE_TIMER_SIGNAL if the library samples with it, else 0: cpuprof's choice */
	int pprof;     /* 1: pprof, -1: the binary format, 0: by the file's name */
	const char *engine; /* CPUPROF_ENGINE if the library has it, else NULL: "auto" */
};

/* The settings for a profile about to start, warning once per process
 * about each bad or unsupported variable.  The engine and the signal are
 * checked by the library's own rules (cpuprof_check_setting()). */
void gpt_env_settings(struct gpt_settings *s);

/* gperftools' per-process file name: the value of environment variable
 * `env` into out[PATH_MAX], with "_<pid>" appended in a process whose
 * parent already claimed the plain name (it sets the high bit of the
 * value's first byte, in place, for its children to see).  Returns 0 if
 * the variable is unset or empty. */
int gpt_unique_path(const char *env, char *out);

/* Prints "cpuprof: " and the message as one line on stderr. */
void gpt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
