/*
 * gp_session.h -- the profile being taken (profiler.c), as the rest of
 * cpuprof's gperftools drop-in sees it.  The drop-in is layered, each file
 * calling only those below it: environ.c (the environment, the warnings),
 * profiler.c (the profile, gperftools' API), toggle.c (the
 * CPUPROFILESIGNAL switch), autostart.c (what starts before main() and
 * stops at exit).  Every name here is hidden (the whole directory is
 * built with -fvisibility=hidden) and starts with gpt_, so none can meet a
 * program's.
 */
#ifndef GPT_SESSION_H
#define GPT_SESSION_H

#include <limits.h>
#include <pthread.h>

/* How a profile was started: by the program (ProfilerStart), from
 * CPUPROFILE before main(), or by the CPUPROFILESIGNAL switch. */
enum gpt_origin { GPT_BY_PROGRAM, GPT_BY_ENV, GPT_BY_SWITCH };

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

/* Registers the fork handlers.  Called by autostart.c's constructor, which
 * the build runs after cpuprof's, so that in a forked child cpuprof's fork
 * handler has forgotten the parent's profile before the child's switch
 * thread can start one. */
void gpt_profiler_init(void);

/* Makes a thread running fn(arg) with every signal blocked, so that no
 * signal of the program's or of the profiler's ever runs a handler in it,
 * and not through cpuprof's pthread_create(), so that a timer engine does
 * not arm it.  Returns 0 or an errno. */
int gpt_spawn(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
