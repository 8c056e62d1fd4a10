/*
 * loader.c -- cpuprof's walks of the loader's list, kept out of forks
 * (loader.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"

static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
/* The thread walking, so that a fork from inside a walk (a signal handler
 * of the program's that interrupted it) does not wait for itself. */
static _Atomic pid_t walker;
/* Whether the fork in progress holds walk_lock. */
static int fork_holds;

int cp_loader_walk(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	pthread_mutex_lock(&walk_lock);
	atomic_store(&walker, (pid_t)syscall(SYS_gettid));
	int r = dl_iterate_phdr(cb, arg);
	atomic_store(&walker, 0);
	pthread_mutex_unlock(&walk_lock);
	return r;
}

void cp_loader_before_fork(void)
{
	fork_holds = 0;
	if (atomic_load(&walker) == (pid_t)syscall(SYS_gettid))
		return;
	/* A walk lasts microseconds; the bound is for a program that forks
	 * from a callback of its own walk, where cpuprof's waits for the
	 * loader's lock: the fork goes on after a second, as it would
	 * without cpuprof. */
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += 1;
	fork_holds = pthread_mutex_clocklock(&walk_lock, CLOCK_MONOTONIC, &t) == 0;
}

void cp_loader_after_fork_parent(void)
{
	if (fork_holds)
		pthread_mutex_unlock(&walk_lock);
	fork_holds = 0;
}

void cp_loader_after_fork_child(void)
{
	pthread_mutex_init(&walk_lock, NULL);
	atomic_store(&walker, 0);
	fork_holds = 0;
}
