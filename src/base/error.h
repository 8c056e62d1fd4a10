/*
 * error.h -- the calling thread's last error reason, behind
 * cpuprof_last_error().  The house rule (docs/architecture.md): a function
 * that fails returns a negative errno and, where it knows why, says so in
 * the `why` buffer its caller gives it; the public API, which has no such
 * buffer to give back, leaves the reason here instead.  Thread-local; not
 * signal context (never called from a handler).
 */
#ifndef CPUPROF_ERROR_H
#define CPUPROF_ERROR_H

#include <stddef.h>

/* Writes the reason (printf format) into why[len], the caller's buffer
 * (nothing if why is NULL or len 0), and returns -1: the house rule's
 * one helper, `return cp_why(why, len, "...", ...);`. */
int cp_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Begins a public call: the reason it sets, if it fails, is its own. */
void cp_error_begin(void);
/* Sets the calling thread's reason (printf format). */
void cp_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Ends a public call that returns rc: a failure (rc < 0) that set no
 * reason of its own since cp_error_begin() gets `generic` (the code's
 * text).  Returns rc. */
int cp_error_end(int rc, const char *generic);
/* The reason of the calling thread's last failed call; "" if none. */
const char *cp_error_last(void);

#endif
