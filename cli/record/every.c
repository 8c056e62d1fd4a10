/*
 * every.c -- `cpuprof record --every DURATION` (every.h): the tick that
 * ends each window, the windows' names and their writers.
 *
 * A window is written by a child: a copy of record made at the cut, with
 * the window's tables as they are, so that record itself goes straight
 * back to the rings.  Writing reads symbol tables and source lines, which
 * on a busy machine may take longer than the rings hold samples for
 * (RING_MS); the copy costs record nothing but the pages the next window
 * writes into (copy on write).  The child writes as record_write does
 * (beside FILE, renamed over it), so a reader never sees part of a file,
 * and exits; it gets no signal of record's (they stay blocked in it), so a
 * Ctrl-C never leaves a window half written.  Where no child can be made,
 * the window is written by record itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "every.h"
#include "sig/clock.h"

char *every_name(const char *path, unsigned n)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	size_t len = strlen(path), at = len;
	size_t blen = strlen(base);
	if (blen > strlen(".pb.gz") && strcmp(base + blen - strlen(".pb.gz"), ".pb.gz") == 0) {
		at = len - strlen(".pb.gz");
	} else {
		const char *dot = strrchr(base, '.');
		if (dot && dot > base)
			at = (size_t)(dot - path);
	}
	char *out = NULL;
	if (asprintf(&out, "%.*s.%04u%s", (int)at, path, n, path + at) < 0)
		return NULL;
	return out;
}

void every_begin(struct every *e, struct cp_kcollector *k)
{
	cp_kernel_window_start(k);
	e->due_ns = (int64_t)cp_mono_ns() + (int64_t)e->ms * 1000000;
}

int every_timeout(const struct every *e, int timeout)
{
	if (!e->ms)
		return timeout;
	int64_t left = (e->due_ns - (int64_t)cp_mono_ns() + 999999) / 1000000;
	return left < 0 ? 0 : left < timeout ? (int)left : timeout;
}

bool every_due(const struct every *e)
{
	return e->ms && (int64_t)cp_mono_ns() >= e->due_ns;
}

/* Notes how writer pid ended. */
static void writer_done(struct every *e, size_t i, int status)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		e->failed++;
	memmove(&e->writers[i], &e->writers[i + 1], (e->nwriters - i - 1) * sizeof e->writers[0]);
	e->nwriters--;
}

bool every_reaped(struct every *e, pid_t pid, int status)
{
	for (size_t i = 0; i < e->nwriters; i++)
		if (e->writers[i] == pid) {
			writer_done(e, i, status);
			return true;
		}
	return false;
}

void every_poll(struct every *e)
{
	for (size_t i = 0; i < e->nwriters;) {
		int st;
		pid_t p = waitpid(e->writers[i], &st, WNOHANG);
		if (p == e->writers[i])
			writer_done(e, i, st);
		else if (p < 0 && errno == ECHILD)
			writer_done(e, i, 0); /* reaped by another wait: its status is said there */
		else
			i++;
	}
}

/* Waits for the oldest writer. */
static void wait_oldest(struct every *e)
{
	int st;
	pid_t p;
	while ((p = waitpid(e->writers[0], &st, 0)) < 0 && errno == EINTR)
		;
	writer_done(e, 0, p == e->writers[0] ? st : 0);
}

/* What the profile of window e->n says of itself: its number, what ended
 * it, and the CPU the processes' clocks say the tree used in it. */
static void window_run(const struct every *e, const struct cp_kcollector *k, struct record_run *r, const char *why,
		       int last)
{
	r->window = e->n;
	r->window_ended = why;
	r->window_last = last;
	r->tree_cpu_ns = cp_kernel_window_cpu_ns(k, &r->window_by_events);
	r->tree_user_ns = 0;
	r->scheduler_ns = r->tree_cpu_ns;
}

void every_cut(struct every *e, struct cp_kcollector *k, const struct record_run *base, const char *why)
{
	/* The next window is due DURATION after this one ends, not after
	 * the work of writing it begins. */
	int64_t ended = (int64_t)cp_mono_ns();
	cp_kernel_window_end(k);
	e->n++;
	struct record_run r = *base;
	window_run(e, k, &r, why, 0);
	char *file = every_name(e->path, e->n), *name = every_name(e->shown, e->n);
	if (e->nwriters == EVERY_WRITERS)
		wait_oldest(e);
	fflush(NULL);
	pid_t pid = file && name ? fork() : -1;
	if (pid == 0) {
		cp_kernel_window_names(k);
		_exit(record_write(cp_kernel_tree(k), file, name, &r) < 0 ? 1 : 0);
	}
	if (pid > 0)
		e->writers[e->nwriters++] = pid;
	else if (!file || !name || record_write(cp_kernel_tree(k), file, name, &r) < 0)
		e->failed++;
	free(file);
	free(name);
	cp_kernel_window_start(k);
	e->due_ns = ended + (int64_t)e->ms * 1000000;
}

int every_last(struct every *e, struct cp_kcollector *k, const struct record_run *base, const char *why)
{
	while (e->nwriters)
		wait_oldest(e);
	e->n++;
	struct record_run r = *base;
	window_run(e, k, &r, why, 1);
	char *file = every_name(e->path, e->n), *name = every_name(e->shown, e->n);
	if (!file || !name || record_write(cp_kernel_tree(k), file, name, &r) < 0)
		e->failed++;
	free(file);
	char *first = every_name(e->shown, 1);
	fprintf(stderr, "cpuprof: %u window%s of %s: %s%s%s%s\n", e->n, e->n == 1 ? "" : "s", e->text,
		first ? first : "?", e->n > 1 ? " to " : "", e->n > 1 && name ? name : "",
		e->failed ? "; some could not be written (said above)" : "");
	free(first);
	free(name);
	return e->failed ? -1 : 0;
}
