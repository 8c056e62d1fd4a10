/*
 * libc.c -- the C library's own functions behind cpuprof's interposers
 * (libc.h), found once with dlsym(RTLD_NEXT) and cached; in a static
 * program, where dlsym finds nothing, the system call itself or the C
 * library's internal name.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libc.h"

/* glibc's own: the real sigaction, in the shared and the static libc. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* glibc's pthread_create under its internal name: in libc.a, not exported
 * by libc.so, so weak (NULL when linked dynamically, where dlsym works). */
extern int __pthread_create_2_1(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
	__attribute__((weak));

void *cp_libc_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

int cp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return __sigaction(sig, act, old);
}

typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);
static _Atomic(void *) real_pthread_sigmask;

int cp_real_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	CP_LIBC_NEXT(real_pthread_sigmask, "pthread_sigmask");
	void *f = atomic_load(&real_pthread_sigmask);
	if (f)
		return ((sigmask_fn)f)(how, set, old);
	/* A static program: the system call, keeping the C library's own
	 * two signals (32, 33) out of it as it does. */
	sigset_t s;
	if (set) {
		s = *set;
		if (how != SIG_UNBLOCK) {
			sigdelset(&s, 32);
			sigdelset(&s, 33);
		}
	}
	return syscall(SYS_rt_sigprocmask, how, set ? &s : NULL, old, 8) < 0 ? errno : 0;
}

typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);
static _Atomic(void *) real_setitimer;

int cp_real_setitimer(int which, const struct itimerval *v, struct itimerval *old)
{
	CP_LIBC_NEXT(real_setitimer, "setitimer");
	void *f = atomic_load(&real_setitimer);
	if (f)
		return ((setitimer_fn)f)((__itimer_which_t)which, v, old);
	return (int)syscall(SYS_setitimer, which, v, old);
}

typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
static _Atomic(void *) real_wait4;

pid_t cp_real_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	CP_LIBC_NEXT(real_wait4, "wait4");
	void *f = atomic_load(&real_wait4);
	if (f)
		return ((wait4_fn)f)(pid, status, options, ru);
	return (pid_t)syscall(SYS_wait4, pid, status, options, ru);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(void *) real_create;

int cp_real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	CP_LIBC_NEXT(real_create, "pthread_create");
	create_fn f = (create_fn)atomic_load(&real_create);
	if (!f)
		f = __pthread_create_2_1; /* a static program */
	return f ? f(th, attr, fn, arg) : EAGAIN;
}

_Noreturn void cp_real_exit(int status)
{
	for (;;)
		syscall(SYS_exit_group, status);
}
