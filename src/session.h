/*
 * session.h -- the one profile a process runs at a time: its settings,
 * its stack table, its clocks and cpuprof's own thread (the keeper), shared
 * by cpuprof.c (the profile's life), judge.c (what the profile says about
 * itself, and the pprof file) and stream.c (the record stream for
 * language runtimes).  Not signal context.
 */
#ifndef CPUPROF_SESSION_H
#define CPUPROF_SESSION_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "sig/clock.h"
#include "engines/engine.h"
#include "profile/facts.h"
#include "profile/stacktab.h"

struct cpuprof_options;

/* Everything one profile knows about itself.  Cleared whole when a
 * profile starts, then set: nothing carries over from the last one. */
struct cp_run {
	char *path;           /* pprof file to write; NULL in stream mode without one */
	int stream;           /* record-stream mode (stream.c) */
	int recorded;         /* samples go to `cpuprof record` (shm/writer.c) */
	int whole;            /* LD_PRELOAD: of the process's whole life, its CPU before the start included */
	const struct cp_engine *engine;
	char engine_reason[512];
	int hz, hz_asked;     /* the rate sampled at, and the one asked for */
	int signo;            /* signal engines */
	unsigned depth;
	int unwind;
	long timer_res_ns;    /* clock_getres(CLOCK_MONOTONIC): the tick if tick-bound */
	struct cp_stacktab tab;
	uint64_t dropped, dropped_ns; /* drained but not stored: no memory */
	int64_t wall0, mono0, cpu0;   /* clocks when sampling started */
	int64_t mono1, cpu1;          /* ... and when it stopped; 0 while running */
	long waits0, waits1;          /* the process's voluntary context switches, the same */
	int64_t user0, user1;         /* the process's user-mode CPU, the same */
	struct cp_engine_stats stats; /* the engine's, once it has stopped */
	/* Off-CPU time: asked for (and then CP_OFF_CPU_ON or _ABSENT), and
	 * why it is absent when cpuprof.c knows before the engine starts. */
	int off_cpu_asked;
	char off_cpu_why[384];
	char stopped_why[256];        /* why sampling stopped before the profile did */
	/* The keeper: cpuprof's own thread. */
	pthread_t keeper;
	int has_keeper;
	_Atomic pid_t keeper_tid;
	pid_t starter_tid;            /* the thread that started sampling */
	int starter_blocks;           /* ... and whether it blocked the signal then */
	_Atomic int keeper_state;     /* 0 starting, 1 running, or the start's negative errno */
	_Atomic int keeper_quit;
	int keeper_drains;            /* it moves samples into the table (file mode) */
	uint64_t keeper_cpu_ns;       /* its CPU, once it has ended */
	_Atomic long keeper_waits;    /* its voluntary context switches */
	/* stream.c's state */
	int hdr_sent;
	uint64_t lost_sent;
	uint64_t carry_ns;
};

struct cp_session {
	int running;          /* sampling: between start and stop */
	int stream_open;      /* stream mode: not yet read to its end */
	int suspended;        /* stopped for an exec that may fail */
	int stuck;            /* a handler did not finish when sampling stopped */
	pid_t pid;            /* the process that started it */
	_Atomic uint32_t wake; /* the futex the keeper or a stream reader sleeps on */
	struct cp_run run;
};

extern struct cp_session cp_session;
/* Serialises the ring's consumer side, the perf engines' rings, the stack
 * table and the stream. */
extern pthread_mutex_t cp_tab_lock;

/* The whole process's voluntary context switches so far (each a thread
 * going to sleep) and its user-mode CPU. */
void cp_process_usage(long *waits, int64_t *user_ns);
/* Puts one sample from the ring into the table, or counts it dropped if
 * the table has no memory for it: the step the file's drain and the
 * stream's reader share.  Under cp_tab_lock. */
struct cp_sample;
void cp_session_keep_locked(const struct cp_sample *s);
/* Moves every committed sample from the ring into the table.  Under
 * cp_tab_lock. */
void cp_session_drain_locked(void);
/* The engine's counts so far (or final, once it stopped).  Under
 * cp_tab_lock. */
void cp_session_stats_locked(struct cp_engine_stats *s);
/* The CPU cpuprof's own thread has used so far. */
uint64_t cp_session_keeper_cpu_ns(void);
/* The profile's facts so far (facts.h).  Under cp_tab_lock. */
void cp_session_facts_locked(struct cp_facts *f);
/* Writes cp_session.run.path from the table; `spend`: the table is
 * needed no more (the profile is released next), and is freed as soon
 * as its stacks are encoded (pprof_write.h).  Under cp_tab_lock. */
int cp_session_write_locked(int spend);
/* Writes tab and the facts f to the profile's path (session_write.c): 0,
 * or a negative errno with the calling thread's reason, said on stderr.
 * `spend` as above: tab may be emptied by the write, whatever it returns. */
int cp_session_write_profile(struct cp_stacktab *tab, const struct cp_facts *f, int spend);
/* Frees what start allocated, unless a handler was stuck in it when
 * sampling stopped: then what a handler may read stays mapped. */
void cp_session_release(void);
/* Sleeps until the futex word *w moves from `seen` or ms pass. */
void cp_session_wait(_Atomic uint32_t *w, uint32_t seen, int ms, int private_futex);

/* Hooks for interpose.c, called by the program's threads.  Before an
 * exec: stops sampling and keeps the samples (writes the file); returns 1
 * if it stopped anything, for cp_session_exec_failed() to resume. */
int cp_session_exec_begin(void);
void cp_session_exec_failed(void);
/* At exit (LD_PRELOAD's destructor): stops the profile, recorded or not. */
void cp_session_stop_at_exit(void);
/* Before _exit(status): as at exit(), the profile is written. */
void cp_session_exit_now(int status);
/* Starts LD_PRELOAD's profile into path: as cpuprof_start(), but with
 * `whole`, the profile accounts for the process's whole life (its CPU
 * before the start under [unsampled: before the profile started]).  0 or
 * a negative errno. */
int cp_session_start_preloaded(const char *path, int whole, const struct cpuprof_options *opts);
/* Starts a profile whose samples go to `cpuprof record`'s shared memory
 * (cp_shm_attach() done).  0 or a negative errno. */
int cp_session_start_recorded(const struct cpuprof_options *opts);
/* The program set ITIMER_PROF itself. */
void cp_session_program_took_itimer(void);

#endif
