/*
 * interpose.h -- the program's calls that cpuprof sees first (interpose.c
 * defines them under their libc names: sigaction, pthread_sigmask,
 * signalfd, sigwait, the exec family, _exit, setitimer, ...), and the
 * real libc functions behind them for cpuprof's own use.  Not signal
 * context.
 */
#ifndef CPUPROF_INTERPOSE_H
#define CPUPROF_INTERPOSE_H

#include <signal.h>
#include <sys/time.h>

/* The real pthread_sigmask and sigaction: cpuprof's own mask and
 * disposition changes, which the program's view must not see. */
int cp_real_sigmask(int how, const sigset_t *set, sigset_t *old);
int cp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* The real setitimer: the itimer engine's own timer is not the program's. */
int cp_real_setitimer(int which, const struct itimerval *v, struct itimerval *old);

/* The calling thread's mask as the program believes it to be: the real
 * one, with each signal whose disposition cpuprof keeps (sigprog.h)
 * blocked or not as the program last asked. */
void cp_program_mask(sigset_t *out);

#endif
