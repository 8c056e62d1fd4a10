/*
 * kernel_jit.c -- record's kernel collector (kernel.h): the names a JIT in
 * a process of the tree gives its code, as it gives them to perf: its perf
 * map (/tmp/perf-PID.map) and its jitdump (jit-PID.dump, which it marks by
 * mapping it: record sees the path in the mmap record).  A process is
 * known to have a JIT when it maps anonymous memory executable, or a
 * jitdump; then record opens its root directory (/proc/PID/root) and
 * reads its PID in its own namespace (the last of NSpid), so that a
 * process in a container, which writes /tmp/perf-1.map in its own /tmp,
 * is found there even after it has ended.  The files are read when the
 * process ends (its exit record) or when its image ends by an exec, else
 * at the finish: a map the program removes as it exits is often still
 * there then, and no later than that is the file sure to be whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_int.h"
#include "symbolize/jit.h"

/* The PID of process pid in its own namespace (/proc/PID/status' last
 * NSpid field), or pid if that cannot be read. */
static pid_t ns_pid(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pid;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return pid;
	buf[n] = '\0';
	const char *at = strstr(buf, "\nNSpid:");
	if (!at)
		return pid;
	at += strlen("\nNSpid:");
	long last = pid;
	for (char *end;; at = end) {
		long v = strtol(at, &end, 10);
		if (end == at)
			break;
		last = v;
	}
	return last > 0 ? (pid_t)last : pid;
}

void kc_jit_note(struct cp_kcollector *k, struct kproc *p, const char *dump)
{
	(void)k;
	if (dump) {
		free(p->jit_dump);
		p->jit_dump = strdup(dump);
	}
	if (p->jit)
		return;
	p->jit = 1;
	p->jit_read = 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/root", (int)p->pid);
	p->jit_root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	p->jit_nspid = p->jit_root >= 0 ? ns_pid(p->pid) : p->pid;
}

/* The path of `path` (absolute, in p's mount namespace) for openat() from
 * *dirfd. */
static const char *in_root(const struct kproc *p, const char *path, int *dirfd)
{
	*dirfd = p->jit_root >= 0 ? p->jit_root : AT_FDCWD;
	if (p->jit_root >= 0)
		while (*path == '/')
			path++;
	return path;
}

void kc_jit_read(struct cp_kcollector *k, struct kproc *p)
{
	(void)k;
	if (!p->jit || p->jit_read || !p->img)
		return;
	p->jit_read = 1;
	struct cp_jit *j = calloc(1, sizeof *j);
	if (!j)
		return;
	char map[64], why[256];
	int dirfd;
	snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)p->jit_nspid);
	const char *path = in_root(p, map, &dirfd);
	cp_jit_read_map(j, dirfd, path);
	if (p->jit_dump) {
		path = in_root(p, p->jit_dump, &dirfd);
		cp_jit_read_dump(j, dirfd, path, why, sizeof why);
	}
	if ((!j->map_entries && !j->dump_entries) || cp_jit_finish(j) < 0) {
		cp_jit_free(j);
		return;
	}
	cp_jit_free(p->img->jit);
	p->img->jit = j;
}

void kc_jit_end(struct kproc *p)
{
	if (p->jit_root >= 0)
		close(p->jit_root);
	p->jit_root = -1;
	free(p->jit_dump);
	p->jit_dump = NULL;
	p->jit = 0;
}
