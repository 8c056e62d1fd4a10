/*
 * error.c -- the calling thread's last error reason (error.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

/* Long enough for every engine's reason after "no sampling engine works
 * here: " (choose.c joins them into 512 bytes). */
static __thread char last[640];
/* A reason was set since the current public call began. */
static __thread int set_in_call;

int cp_why(char *why, size_t len, const char *fmt, ...)
{
	if (why && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

void cp_error_begin(void)
{
	set_in_call = 0;
}

void cp_error_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last, sizeof last, fmt, ap);
	va_end(ap);
	set_in_call = 1;
}

int cp_error_end(int rc, const char *generic)
{
	if (rc < 0 && !set_in_call)
		cp_error_set("%s", generic);
	set_in_call = 0;
	return rc;
}

const char *cp_error_last(void)
{
	return last;
}
