/*
 * demangle.h -- the readable form of a mangled symbol or linkage name, as
 * binutils' `addr2line -C` prints it: C++ (the Itanium ABI's _Z names),
 * Rust's legacy (_ZN...17h<hash>E, the hash dropped) and v0 (_R...)
 * manglings.  The demangler is libiberty's cplus_demangle, the one binutils
 * uses, built into the library and the CLI: names never depend on what the
 * profiled program links.  Outside signal context (it allocates).
 */
#ifndef CPUPROF_DEMANGLE_H
#define CPUPROF_DEMANGLE_H

/* The demangled form of `name` as a malloc'd string the caller frees, or
 * NULL if it is not a name the demangler knows (a C name, a symbol
 * version's "@GLIBC_2.2.5" still on it) or memory ran out.  As in
 * addr2line, a C++ name longer than 1024 characters stays mangled:
 * libiberty refuses it, which bounds what it puts on the calling thread's
 * stack (about 100 bytes a character) -- a profile may be written from
 * any thread. */
char *cp_demangle(const char *name);

/* The readable form of symbol (or linkage name) s, as the profile's
 * writer names a function: without its symbol version
 * ("memcpy@GLIBC_2.2.5"), demangled if it is a C++ or Rust name.  A
 * malloc'd string the caller frees, or NULL if memory ran out. */
char *cp_symbol_readable(const char *s);

/* The length of symbol s without its version: what comes before its '@'
 * ("memcpy@GLIBC_2.2.5", "__libc_start_main@@GLIBC_2.34"), else all of
 * it (a name that begins with '@' too). */
size_t cp_symbol_unversioned_len(const char *s);

#endif
