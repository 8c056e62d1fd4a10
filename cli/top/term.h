/*
 * term.h -- the terminal `cpuprof top` reads its keys from and draws on.
 * Keys come from stdin where it is a terminal and top is in its
 * foreground: unbuffered and unechoed (no canonical mode, no echo; the
 * terminal's signals, Ctrl-C and Ctrl-Z, stay), and put back as they were
 * on every way out: a return, exit(), a fatal signal, Ctrl-Z (and raw
 * again at fg).  The size is stdout's, when it is a terminal.
 */
#ifndef CPUPROF_CLI_TOP_TERM_H
#define CPUPROF_CLI_TOP_TERM_H

/* Makes keys readable where stdin is a terminal in the foreground, and
 * installs the handlers that put it back.  Whether keys can be read. */
int term_setup(void);

/* A key pressed since the last call, or -1. */
int term_key(void);

/* stdout's columns and rows: 0, or -1 where it is not a terminal. */
int term_size(int *cols, int *rows);

/* Whether the view must be drawn again now: the terminal changed size,
 * or top came back from a stop (Ctrl-Z, fg).  Asking clears it. */
int term_redraw_due(void);

/* Whether a write to stdout found no reader (SIGPIPE came): clears it. */
int term_broken_pipe(void);

/* Puts the terminal back as it was (again: nothing). */
void term_restore(void);

#endif
