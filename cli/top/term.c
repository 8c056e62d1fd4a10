/*
 * term.c -- the terminal of `cpuprof top` (term.h).
 *
 * Only what reading one key needs is changed (ICANON and ECHO off, reads
 * that do not wait), so that the terminal's own signals still reach top
 * and the program it runs alike.  The mode before is put back by
 * term_restore(), which exit() calls too, and by the handlers: the fatal
 * signals put it back and die of the signal as they would have; SIGTSTP
 * puts it back, stops, and sets the mode again when continued in the
 * foreground.  record blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT into its
 * signalfd while it runs (it ends the run, and top returns); their
 * handlers here serve before and after it.  Handlers are reset at the
 * exec of the program run, which sees its own dispositions.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "term.h"

static struct termios saved, keys;
static volatile sig_atomic_t raw_on, redraw_due, pipe_broken;
static int tty; /* stdin is a terminal, its mode in saved */

/* Whether this process is in the foreground of stdin's terminal: only
 * there may it set the terminal's mode or read it (else SIGTTOU,
 * SIGTTIN stop it). */
static int foreground(void)
{
	pid_t fg = tcgetpgrp(STDIN_FILENO);
	return fg != -1 && fg == getpgrp();
}

/* Signal context: tcsetattr is async-signal-safe. */
static void put_back(void)
{
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
		raw_on = 0;
	}
}

static void set_keys(void)
{
	if (tty && !raw_on && foreground() && tcsetattr(STDIN_FILENO, TCSANOW, &keys) == 0)
		raw_on = 1;
}

static void on_fatal(int sig)
{
	int e = errno;
	put_back();
	signal(sig, SIG_DFL);
	raise(sig); /* delivered as the handler returns */
	errno = e;
}

static void on_stop(int sig)
{
	int e = errno;
	put_back();
	signal(SIGTSTP, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(SIGTSTP);
	/* Continued. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTSTP, &sa, NULL);
	set_keys();
	redraw_due = 1;
	errno = e;
	(void)sig;
}

static void on_winch(int sig)
{
	redraw_due = 1;
	(void)sig;
}

static void on_pipe(int sig)
{
	pipe_broken = 1;
	(void)sig;
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

void term_restore(void)
{
	put_back();
}

int term_setup(void)
{
	static const int fatal[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	/* A SIGPIPE (stdout's reader gone) ends the view as q does, not
	 * top with the program left running. */
	handle(SIGPIPE, on_pipe);
	handle(SIGWINCH, on_winch);
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) < 0)
		return 0;
	tty = 1;
	keys = saved;
	keys.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	keys.c_cc[VMIN] = 0;
	keys.c_cc[VTIME] = 0;
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		handle(fatal[i], on_fatal);
	handle(SIGTSTP, on_stop);
	atexit(term_restore);
	set_keys();
	return raw_on;
}

int term_key(void)
{
	unsigned char c;
	/* Back in the foreground after a stop that did not see it (bg, then
	 * fg): the keys' mode again. */
	if (!raw_on)
		set_keys();
	if (!raw_on || !foreground())
		return -1;
	return read(STDIN_FILENO, &c, 1) == 1 ? c : -1;
}

int term_size(int *cols, int *rows)
{
	struct winsize w;
	if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) < 0 || w.ws_col == 0 || w.ws_row == 0)
		return -1;
	*cols = w.ws_col;
	*rows = w.ws_row;
	return 0;
}

int term_redraw_due(void)
{
	int d = redraw_due;
	redraw_due = 0;
	return d;
}

int term_broken_pipe(void)
{
	int b = pipe_broken;
	pipe_broken = 0;
	return b;
}
