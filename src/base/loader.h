/*
 * loader.h -- cpuprof's walks of the dynamic loader's list of objects
 * (dl_iterate_phdr), which never cross the program's fork().
 *
 * dl_iterate_phdr holds the loader's write lock (dl_load_write_lock)
 * while it walks, and the C library does not make that lock anew in a
 * forked child (glibc 2.36, measured: a child forked mid-walk waits on it
 * forever).  A fork while cpuprof's keeper thread walks would leave the
 * child a lock held by a thread it does not have: its first walk (the
 * program's own, or the profile it starts) would never return.  So a
 * fork waits for a walk of cpuprof's to end, and none begins until the
 * fork is done.
 */
#ifndef CPUPROF_LOADER_H
#define CPUPROF_LOADER_H

#include <link.h>

/* dl_iterate_phdr(cb, arg), never while the program forks.  Not signal
 * context. */
int cp_loader_walk(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/* The fork handlers (pthread_atfork): before, in the parent, in the
 * child. */
void cp_loader_before_fork(void);
void cp_loader_after_fork_parent(void);
void cp_loader_after_fork_child(void);

#endif
