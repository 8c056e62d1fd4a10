/*
 * libc.h -- the C library's own functions, for cpuprof's use, behind the
 * names src/process/interpose.c takes: when libcpuprof is preloaded, a
 * call of sigaction() or waitpid() from cpuprof's own code would reach
 * cpuprof's interposer, which is the program's view, not the kernel's.
 * Everything below the process layer calls these instead, and so does the
 * CLI (which links some of the same objects and interposes nothing): one
 * object means one thing in both binaries.  In a static program, which has
 * no dynamic symbol table to search, the system call is made directly (or
 * the C library's internal name is used).  Not signal context.
 */
#ifndef CPUPROF_LIBC_H
#define CPUPROF_LIBC_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>

/* The next definition of `name` after the calling object's (the C
 * library's, behind an interposer), or NULL in a static program. */
void *cp_libc_next(const char *name);

/* Resolves the next definition of `name` into the _Atomic(void *) `var`
 * once, for interposers that keep their own. */
#define CP_LIBC_NEXT(var, name)                                                         \
	do {                                                                            \
		if (!atomic_load_explicit(&var, memory_order_acquire))                  \
			atomic_store_explicit(&var, cp_libc_next(name), memory_order_release); \
	} while (0)

int cp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* pthread_sigmask: 0 or an errno value. */
int cp_real_sigmask(int how, const sigset_t *set, sigset_t *old);
int cp_real_setitimer(int which, const struct itimerval *v, struct itimerval *old);
pid_t cp_real_wait4(pid_t pid, int *status, int options, struct rusage *ru);
/* pthread_create: 0 or an errno value (EAGAIN if none can be found). */
int cp_real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/* Ends the process at once: no atexit handler, no profile written. */
_Noreturn void cp_real_exit(int status);

#endif
