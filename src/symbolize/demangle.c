/*
 * demangle.c -- mangled names made readable (demangle.h) by libiberty's
 * cplus_demangle with the options binutils' bfd_demangle gives it for
 * `addr2line -C`: parameters and qualifiers (DMGL_PARAMS | DMGL_ANSI), the
 * style left to the demangler (auto: Rust's manglings first, then C++'s).
 * libiberty is Debian's libiberty-dev, a static archive built
 * position-independent: it is linked into libcpuprof.so, libcpuprof.a,
 * the gperftools drop-in and the CLI, its names hidden (Makefile).
 */
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

char *cp_demangle(const char *name)
{
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}

size_t cp_symbol_unversioned_len(const char *s)
{
	const char *at = strchr(s, '@');
	return at && at != s ? (size_t)(at - s) : strlen(s);
}

char *cp_symbol_readable(const char *s)
{
	char *base = strndup(s, cp_symbol_unversioned_len(s));
	if (!base)
		return NULL;
	char *d = cp_demangle(base);
	if (!d)
		return base;
	free(base);
	return d;
}
