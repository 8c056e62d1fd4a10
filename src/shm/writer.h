/*
 * writer.h -- a profiled process's side of `cpuprof record`'s shared
 * memory (shm.h): it maps the memory record made, takes a slot for each
 * process image, and keeps there what record needs to write the profile
 * however the process ends: its samples (the slot's ring is the
 * session's sample ring), its facts, the objects it loaded, its threads'
 * names, and how the children it reaped ended.  Not signal context.
 */
#ifndef CPUPROF_SHM_WRITER_H
#define CPUPROF_SHM_WRITER_H

#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "profile/facts.h"
#include "sig/ring.h"

/* Maps the shared memory at path (CPUPROF_SHM).  Returns 0, or -1 with
 * the reason in why[len]. */
int cp_shm_attach(const char *path, char *why, size_t len);
/* Is this process writing into record's shared memory? */
int cp_shm_attached(void);
/* Takes a slot for this process image and lays out its ring for samples
 * of `depth` pcs at most.  Returns 0, or -1 if every slot is taken (record
 * then counts the process as not profiled). */
int cp_shm_claim(void);
/* The slot's ring, its reader's futex, and the most pcs a sample may
 * have. */
struct cp_ring *cp_shm_ring(void);
_Atomic uint32_t *cp_shm_wake(void);
unsigned cp_shm_depth(void);
/* Publishes the profile's facts. */
void cp_shm_facts(const struct cp_facts *f);
/* Publishes the objects loaded now that were not published yet, under a
 * new object generation (cp_sig.objgen).  Unless `always`, only if the
 * loader's counts of loads and unloads moved since the last time. */
void cp_shm_objects(int always);
/* Publishes that thread tid is named `name`. */
void cp_shm_name(pid_t tid, const char *name);
/* Publishes that this process reaped child pid, with its wait status and
 * resource usage. */
void cp_shm_reaped(pid_t pid, int status, const struct rusage *ru);
/* The slot is done: no sample of this image follows. */
void cp_shm_end(void);
/* In a child after fork(): the parent's slot is not ours. */
void cp_shm_after_fork(void);

#endif
