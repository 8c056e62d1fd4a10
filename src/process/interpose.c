/*
 * interpose.c -- the program's calls that cpuprof must see first, defined
 * under their libc names so that LD_PRELOAD (or linking libcpuprof before
 * libc) puts them in front of libc's.  Each does exactly what libc's does
 * unless cpuprof has a stake in it:
 *
 *  - sigaction, signal, bsd_signal, sysv_signal, sigignore, siginterrupt
 *    on a signal whose disposition cpuprof keeps (src/sig/sigprog.h):
 *    the program's wish is recorded and reported back, the kernel keeps
 *    cpuprof's handler, which passes on every delivery that is not ours;
 *  - pthread_sigmask, sigprocmask and the BSD and System V forms
 *    (sigsetmask, sigblock, siggetmask, sighold, sigrelse, sigset): the
 *    signal a timer engine samples with
 *    is never blocked in fact (a thread that blocks it would never be
 *    sampled) but the program sees the mask it set, and a delivery that
 *    is not ours stays pending while the program believes it blocked;
 *  - signalfd, sigwait, sigwaitinfo, sigtimedwait: never take the
 *    sampling signal away from the handler;
 *  - setitimer(ITIMER_PROF) while the itimer engine samples: the program
 *    gets its timer and the profile stops sampling, saying why;
 *  - the exec family and _exit: the profile is stopped and its samples
 *    kept first (cpuprof.c), and no signal of ours is pending across the
 *    exec; a failed exec resumes sampling;
 *  - the wait family, under `cpuprof record`: how each reaped child ended
 *    and the CPU the kernel charged to it are told to record.
 *
 *  - pthread_create: a thread a signal engine must sample arms itself
 *    before it runs the program's function (src/engines/threads.c).
 *
 * The real functions are found with dlsym(RTLD_NEXT) (src/base/libc.c); in
 * a static program (no dynamic symbol table to search) the system calls
 * are made directly.
 * Programs that make these system calls themselves (syscall(2), a static
 * runtime of their own) bypass all of this: the perf engines need none
 * of it, which is one reason they come first.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/array.h"
#include "base/libc.h"
#include "engines/threads.h"

#include "session.h"
#include "shm/writer.h"
#include "engines/sampling_signal.h"
#include "sig/sigprog.h"
#include "sig/sigstate.h"

#define API __attribute__((visibility("default")))

static uint64_t bit(int sig)
{
	return 1ull << (sig - 1);
}

/* ---- dispositions ---- */

API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!cp_prog_manages(sig))
		return cp_real_sigaction(sig, act, old);
	struct sigaction cur = *cp_prog_current(sig);
	if (act) {
		cp_prog_set(sig, act);
		cp_signal_apply(sig);
	}
	if (old)
		*old = cur;
	return 0;
}

/* signal() and its variants, for every signal, as glibc defines them. */
static sighandler_t set_handler(int sig, sighandler_t h, int flags, int mask_self)
{
	struct sigaction sa, old;
	if (h == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (mask_self)
		sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

API sighandler_t signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART, 1);
}

API sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART, 1);
}

API sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

API int sigignore(int sig)
{
	return set_handler(sig, SIG_IGN, 0, 0) == SIG_ERR ? -1 : 0;
}

API int siginterrupt(int sig, int flag)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) < 0)
		return -1;
	if (flag)
		sa.sa_flags &= ~SA_RESTART;
	else
		sa.sa_flags |= SA_RESTART;
	return sigaction(sig, &sa, NULL);
}

/* ---- masks ---- */

static void cp_program_mask(sigset_t *out)
{
	cp_real_sigmask(SIG_BLOCK, NULL, out);
	uint64_t managed = atomic_load(&cp_prog.managed);
	for (int s = 1; s < CP_PROG_NSIG; s++) {
		if (!(managed & bit(s)))
			continue;
		if (cp_prog_blocked & bit(s))
			sigaddset(out, s);
		else if (s == cp_signal_sampling())
			sigdelset(out, s);
	}
}

/* A mask call of the program's: its belief recorded, the sampling signal
 * never blocked in fact.  Returns 0 or an errno value. */
static int program_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t managed = atomic_load(&cp_prog.managed);
	if (!managed)
		return cp_real_sigmask(how, set, old);
	if (how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK && set)
		return EINVAL;
	sigset_t before, s;
	if (old)
		cp_program_mask(&before);
	int samp = cp_signal_sampling();
	const sigset_t *use = set;
	if (set && samp && how != SIG_UNBLOCK && sigismember(set, samp)) {
		s = *set;
		sigdelset(&s, samp);
		use = &s;
	}
	int rc = cp_real_sigmask(how, use, NULL);
	if (rc)
		return rc;
	if (set) {
		for (int sig = 1; sig < CP_PROG_NSIG; sig++) {
			if (!(managed & bit(sig)))
				continue;
			int in = sigismember(set, sig) == 1;
			if ((how == SIG_BLOCK && in) || (how == SIG_SETMASK && in))
				cp_prog_blocked |= bit(sig);
			else if ((how == SIG_UNBLOCK && in) || (how == SIG_SETMASK && !in))
				cp_prog_blocked &= ~bit(sig);
		}
	}
	if (old)
		*old = before;
	return 0;
}

API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return program_sigmask(how, set, old);
}

API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int rc = program_sigmask(how, set, old);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* The BSD forms: masks of the first 32 signals as ints. */
static int bsd_mask(int how, int mask)
{
	sigset_t set, old;
	sigemptyset(&set);
	for (int s = 1; s < 32; s++)
		if (mask & (1 << (s - 1)))
			sigaddset(&set, s);
	if (program_sigmask(how, &set, &old) != 0)
		return -1;
	int r = 0;
	for (int s = 1; s < 32; s++)
		if (sigismember(&old, s) == 1)
			r |= 1 << (s - 1);
	return r;
}

API int sigsetmask(int mask)
{
	return bsd_mask(SIG_SETMASK, mask);
}

API int sigblock(int mask)
{
	return bsd_mask(SIG_BLOCK, mask);
}

API int siggetmask(void)
{
	return bsd_mask(SIG_BLOCK, 0);
}

/* The System V forms. */
static int one_signal(int how, int sig)
{
	sigset_t set;
	sigemptyset(&set);
	if (sigaddset(&set, sig) < 0)
		return -1;
	return sigprocmask(how, &set, NULL);
}

API int sighold(int sig)
{
	return one_signal(SIG_BLOCK, sig);
}

API int sigrelse(int sig)
{
	return one_signal(SIG_UNBLOCK, sig);
}

API sighandler_t sigset(int sig, sighandler_t h)
{
	sigset_t old;
	struct sigaction sa;
	if (sig < 1 || sig >= NSIG || h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (program_sigmask(SIG_BLOCK, NULL, &old) != 0 || sigaction(sig, NULL, &sa) < 0)
		return SIG_ERR;
	sighandler_t prev = sigismember(&old, sig) == 1 ? SIG_HOLD : sa.sa_handler;
	if (h == SIG_HOLD)
		return one_signal(SIG_BLOCK, sig) < 0 ? SIG_ERR : prev;
	if (set_handler(sig, h, 0, 0) == SIG_ERR || one_signal(SIG_UNBLOCK, sig) < 0)
		return SIG_ERR;
	return prev;
}

/* set without the sampling signal, into *copy; set itself if it does not
 * hold it.  A signalfd cannot be told which instances are the engine's:
 * the program's own deliveries of the signal reach it by its handler or
 * a sigwait, not by a signalfd, while a timer engine samples with it. */
static const sigset_t *without_sampling(const sigset_t *set, sigset_t *copy)
{
	int samp = cp_signal_sampling();
	if (!set || !samp || sigismember(set, samp) != 1)
		return set;
	*copy = *set;
	sigdelset(copy, samp);
	return copy;
}

typedef int (*signalfd_fn)(int, const sigset_t *, int);
static _Atomic(void *) real_signalfd;

API int signalfd(int fd, const sigset_t *mask, int flags)
{
	sigset_t copy;
	mask = without_sampling(mask, &copy);
	CP_LIBC_NEXT(real_signalfd, "signalfd");
	void *f = atomic_load(&real_signalfd);
	if (f)
		return ((signalfd_fn)f)(fd, mask, flags);
	long r = syscall(SYS_signalfd4, fd, mask, 8, flags);
	return (int)r;
}

typedef int (*sigtimedwait_fn)(const sigset_t *, siginfo_t *, const struct timespec *);
static _Atomic(void *) real_sigtimedwait;

static int real_wait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	CP_LIBC_NEXT(real_sigtimedwait, "sigtimedwait");
	void *f = atomic_load(&real_sigtimedwait);
	if (f)
		return ((sigtimedwait_fn)f)(set, info, timeout);
	return (int)syscall(SYS_rt_sigtimedwait, set, info, timeout, 8);
}

/* A wait that takes the sampling signal takes the program's instances of
 * it (a kill, its own timer's) and drops the engine's, waiting on for the
 * time that is left. */
API int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	int samp = cp_signal_sampling();
	if (!samp || sigismember(set, samp) != 1)
		return real_wait(set, info, timeout);
	struct timespec now, end = { 0, 0 }, left;
	if (timeout) {
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += timeout->tv_sec;
		if ((end.tv_nsec += timeout->tv_nsec) >= 1000000000) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000;
		}
	}
	for (const struct timespec *t = timeout;;) {
		siginfo_t si;
		int r = real_wait(set, &si, t);
		if (r != samp || !cp_sig_from_engine(r, &si)) {
			if (r > 0 && info)
				*info = si;
			return r;
		}
		if (timeout) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = end.tv_sec - now.tv_sec;
			left.tv_nsec = end.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000;
			}
			if (left.tv_sec < 0)
				left.tv_sec = left.tv_nsec = 0;
			t = &left;
		}
	}
}

API int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return sigtimedwait(set, info, NULL);
}

API int sigwait(const sigset_t *set, int *sig)
{
	siginfo_t si;
	int r;
	do
		r = sigtimedwait(set, &si, NULL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno;
	*sig = r;
	return 0;
}

/* ---- setitimer ---- */

API int setitimer(__itimer_which_t which, const struct itimerval *v, struct itimerval *old)
{
	if (which == ITIMER_PROF && v)
		cp_session_program_took_itimer();
	return cp_real_setitimer(which, v, old);
}

/* ---- exec and _exit ---- */

/* Around every exec: the profile is stopped and its samples kept, no
 * signal of ours is pending, and the mask is the program's; if the exec
 * fails, everything is as it was. */
struct exec_guard {
	int stopped;
	sigset_t mask;
};

static void exec_begin(struct exec_guard *g)
{
	g->stopped = cp_session_exec_begin();
	sigset_t want;
	cp_program_mask(&want);
	cp_real_sigmask(SIG_SETMASK, &want, &g->mask);
}

static void exec_failed(struct exec_guard *g)
{
	int e = errno;
	cp_real_sigmask(SIG_SETMASK, &g->mask, NULL);
	if (g->stopped)
		cp_session_exec_failed();
	errno = e;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
static _Atomic(void *) real_execve, real_execv, real_execvp, real_execvpe, real_fexecve, real_execveat;

API int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_guard g;
	CP_LIBC_NEXT(real_execve, "execve");
	void *f = atomic_load(&real_execve);
	exec_begin(&g);
	if (f)
		((execve_fn)f)(path, argv, envp);
	else
		syscall(SYS_execve, path, argv, envp);
	exec_failed(&g);
	return -1;
}

API int execv(const char *path, char *const argv[])
{
	struct exec_guard g;
	CP_LIBC_NEXT(real_execv, "execv");
	void *f = atomic_load(&real_execv);
	if (!f)
		return execve(path, argv, environ);
	exec_begin(&g);
	((execv_fn)f)(path, argv);
	exec_failed(&g);
	return -1;
}

API int execvp(const char *file, char *const argv[])
{
	struct exec_guard g;
	CP_LIBC_NEXT(real_execvp, "execvp");
	void *f = atomic_load(&real_execvp);
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	exec_begin(&g);
	((execv_fn)f)(file, argv);
	exec_failed(&g);
	return -1;
}

API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_guard g;
	CP_LIBC_NEXT(real_execvpe, "execvpe");
	void *f = atomic_load(&real_execvpe);
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	exec_begin(&g);
	((execve_fn)f)(file, argv, envp);
	exec_failed(&g);
	return -1;
}

API int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_guard g;
	CP_LIBC_NEXT(real_fexecve, "fexecve");
	void *f = atomic_load(&real_fexecve);
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	exec_begin(&g);
	((fexecve_fn)f)(fd, argv, envp);
	exec_failed(&g);
	return -1;
}

API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	struct exec_guard g;
	CP_LIBC_NEXT(real_execveat, "execveat");
	void *f = atomic_load(&real_execveat);
	exec_begin(&g);
	if (f)
		((execveat_fn)f)(dirfd, path, argv, envp, flags);
	else
		syscall(SYS_execveat, dirfd, path, argv, envp, flags);
	exec_failed(&g);
	return -1;
}

/* execl, execle, execlp: their arguments gathered into an argv. */
static char **gather(const char *arg0, va_list ap, char ***envp)
{
	size_t n = 1, cap = 16;
	char **argv = malloc(cap * sizeof *argv);
	if (!argv)
		return NULL;
	argv[0] = (char *)arg0;
	for (;;) {
		char *a = arg0 ? va_arg(ap, char *) : NULL;
		if (cp_array_grow((void **)&argv, &cap, n + 2, sizeof *argv, 16)) {
			free(argv);
			return NULL;
		}
		argv[n++] = a;
		if (!a)
			break;
	}
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

/* The end of execl, execle and execlp: the gathered argv (NULL: no
 * memory) to the vector form, and freed if that returns. */
enum list_exec { LIST_EXECV, LIST_EXECVE, LIST_EXECVP };

static int exec_gathered(enum list_exec how, const char *path, char **argv, char **envp)
{
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	if (how == LIST_EXECVE)
		execve(path, argv, envp);
	else if (how == LIST_EXECVP)
		execvp(path, argv);
	else
		execv(path, argv);
	int e = errno;
	free(argv);
	errno = e;
	return -1;
}

API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	char **argv = gather(arg, ap, NULL);
	va_end(ap);
	return exec_gathered(LIST_EXECV, path, argv, NULL);
}

API int execle(const char *path, const char *arg, ...)
{
	char **envp = NULL;
	va_list ap;
	va_start(ap, arg);
	char **argv = gather(arg, ap, &envp);
	va_end(ap);
	return exec_gathered(LIST_EXECVE, path, argv, envp);
}

API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	char **argv = gather(arg, ap, NULL);
	va_end(ap);
	return exec_gathered(LIST_EXECVP, file, argv, NULL);
}

/* ---- wait ---- */

/* wait4, and what it reaped told to `cpuprof record`. */
static pid_t reap(pid_t pid, int *status, int options, struct rusage *ru)
{
	int st = 0;
	struct rusage mine;
	struct rusage *use = ru ? ru : &mine;
	pid_t r = cp_real_wait4(pid, &st, options, use);
	if (r > 0) {
		if (cp_shm_attached() && (WIFEXITED(st) || WIFSIGNALED(st)))
			cp_shm_reaped(r, st, use);
		if (status)
			*status = st;
	}
	return r;
}

API pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	return reap(pid, status, options, ru);
}

API pid_t wait3(int *status, int options, struct rusage *ru)
{
	return reap(-1, status, options, ru);
}

API pid_t waitpid(pid_t pid, int *status, int options)
{
	return reap(pid, status, options, NULL);
}

API pid_t wait(int *status)
{
	return reap(-1, status, 0, NULL);
}

API int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	struct rusage ru;
	int r = (int)syscall(SYS_waitid, idtype, id, info, options, &ru);
	if (r == 0 && info && info->si_pid > 0 && !(options & WNOWAIT) && cp_shm_attached() &&
	    (info->si_code == CLD_EXITED || info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)) {
		int st = info->si_code == CLD_EXITED ? (info->si_status & 0xff) << 8
						      : (info->si_status & 0x7f) | (info->si_code == CLD_DUMPED ? 0x80 : 0);
		cp_shm_reaped(info->si_pid, st, &ru);
	}
	return r;
}

API _Noreturn void _exit(int status)
{
	cp_session_exit_now(status);
	cp_real_exit(status);
}

API _Noreturn void _Exit(int status)
{
	_exit(status);
}

/* ---- threads ---- */

API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	void *(*start)(void *) = fn;
	void *start_arg = arg;
	int wrapped = cp_threads_wrap(&start, &start_arg);
	int rc = cp_real_pthread_create(th, attr, start, start_arg);
	if (rc != 0 && wrapped)
		cp_threads_unwrap(start_arg);
	return rc;
}
