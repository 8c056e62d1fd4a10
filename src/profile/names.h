/*
 * names.h -- the names of the profiled process's threads, by thread id,
 * as the program set them (pthread_setname_np, prctl(PR_SET_NAME)): the
 * engines record them as they learn them, and the profile's `thread`
 * labels come from here.  Thread-safe; not signal context.
 */
#ifndef CPUPROF_NAMES_H
#define CPUPROF_NAMES_H

#include <stddef.h>
#include <sys/types.h>

#define CP_NAME_MAX 16 /* the kernel's TASK_COMM_LEN, with its NUL */

/* From now on fn(tid, name) is told of every name recorded or changed,
 * under the table's lock (`cpuprof record`'s shared memory keeps them). */
void cp_names_observe(void (*fn)(pid_t tid, const char *name));
/* Forgets every name (a new profile). */
void cp_names_reset(void);
/* The same in a child after fork(), where a thread that is not there may
 * have held the lock. */
void cp_names_after_fork(void);
/* Records the name of thread tid (cut to CP_NAME_MAX - 1 bytes). */
void cp_names_set(pid_t tid, const char *name);
/* Thread tid starts with the name of thread parent, if that is known. */
void cp_names_inherit(pid_t tid, pid_t parent);
/* The name of thread tid into out[CP_NAME_MAX]: the kernel's, while the
 * thread lives, else the last one recorded.  Returns 0 if none is known
 * (out is then ""). */
int cp_names_get(pid_t tid, char *out);

#endif
