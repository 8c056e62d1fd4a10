/*
 * session.h -- the one profile a process runs at a time: its settings,
 * its stack table and its clocks, shared by cpuprof.c (start, drain, stop,
 * the pprof file) and stream.c (the record stream for language runtimes).
 * Not signal context.
 */
#ifndef CPUPROF_SESSION_H
#define CPUPROF_SESSION_H

#include <pthread.h>
#include <stdint.h>

#include "engine.h"
#include "stacktab.h"

struct cp_session {
	int running;          /* sampling: between start and stop */
	int stream;           /* record-stream mode (stream.c) */
	int stream_open;      /* stream mode: not yet read to its end */
	char *path;           /* pprof file to write; NULL in stream mode without one */
	const struct cp_engine *engine;
	char engine_reason[512];
	int hz;
	long timer_res_ns;    /* clock_getres(CLOCK_MONOTONIC): the tick if tick-bound */
	struct cp_stacktab tab;
	uint64_t dropped, dropped_ns; /* drained but not stored: no memory */
	pthread_t drain;
	int has_drain;
	uint64_t drain_cpu_ns;      /* the drain thread's CPU, once it has ended */
	_Atomic int drain_quit;
	int64_t wall0, mono0, cpu0; /* clocks when sampling started */
	int64_t mono1, cpu1;        /* ... and when it stopped; 0 while running */
	long waits0, waits1;        /* the process's voluntary context switches, the same */
	int64_t user0, user1;       /* the process's user-mode CPU, the same */
	_Atomic long drain_waits;   /* the drain thread's voluntary context switches */
	/* stream.c's state */
	int hdr_sent;
	uint64_t lost_sent;
	uint64_t carry_ns;
	int64_t last_sweep;
};

extern struct cp_session cp_session;
/* Serialises the ring's consumer side, the stack table and the stream. */
extern pthread_mutex_t cp_tab_lock;

int64_t cp_clock_ns(clockid_t c);
/* Moves every committed sample from the ring into the table.  Under
 * cp_tab_lock. */
void session_drain_locked(void);
/* Writes cp_session.path from the table.  Under cp_tab_lock. */
int session_write_locked(void);
/* Frees what start allocated.  No handler may be able to see it. */
void session_release(void);

#endif
