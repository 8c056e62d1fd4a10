/*
 * kernel_jit.c -- record's kernel collector (kernel.h): the names a JIT in
 * a process of the tree gives its code, as it gives them to perf: its perf
 * map (/tmp/perf-PID.map) and its jitdump (jit-PID.dump, which it marks by
 * mapping it: record sees the path in the mmap record).  A process is
 * known to have a JIT when it maps anonymous memory executable, or a
 * jitdump; then record opens its /tmp and its jitdump through its root
 * directory (/proc/PID/root), and reads its PID in its own namespace (the
 * last of NSpid), so that a process in a container, which writes
 * /tmp/perf-1.map in its own /tmp, is found there even after it has ended
 * and its namespaces with it.  The files are read when the
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
	int root = -1;
	/* Past so many processes' files held open, a JIT's are looked for in
	 * our own /tmp, and its jitdump not at all. */
	if (k->njitfds >= MAX_JIT_FDS)
		dump = NULL;
	else if (!p->jit || (dump && p->jit_dump < 0)) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/root", (int)p->pid);
		root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	/* The jitdump, open now: the program may unlink it, and its mount
	 * namespace goes with its last process. */
	if (dump && p->jit_dump < 0)
		p->jit_dump = kc_open_in_root(root, dump, O_RDONLY | O_NOCTTY);
	if (!p->jit) {
		/* Its /tmp, where its perf map will be: a descriptor keeps a
		 * private /tmp (a container's) readable after it ends. */
		p->jit = 1;
		p->jit_read = 0;
		p->jit_tmp = k->njitfds < MAX_JIT_FDS ? kc_open_in_root(root, "/tmp", O_PATH | O_DIRECTORY) : -1;
		p->jit_nspid = root >= 0 ? ns_pid(p->pid) : p->pid;
		p->jit_not_before = root >= 0 ? cp_jit_not_before(p->pid) : 0;
	}
	if (root >= 0)
		close(root);
	if (!p->jit_read && !p->jit_owner_known)
		p->jit_owner_known = cp_jit_owner(p->pid, &p->jit_owner) == 0;
	k->njitfds = k->njitfds - (p->jit_fds) + (p->jit_tmp >= 0) + (p->jit_dump >= 0);
	p->jit_fds = (p->jit_tmp >= 0) + (p->jit_dump >= 0);
}

/* Lets p's JIT's files go. */
static void let_go(struct cp_kcollector *k, struct kproc *p)
{
	if (p->jit_tmp >= 0)
		close(p->jit_tmp);
	if (p->jit_dump >= 0)
		close(p->jit_dump);
	p->jit_tmp = p->jit_dump = -1;
	k->njitfds -= p->jit_fds;
	p->jit_fds = 0;
}

/* Notes that p's JIT file `name` could not be read, and why (the reason
 * as the reader gave it, of `path`). */
static void unread(struct cp_kcollector *k, struct kproc *p, const char *name, const char *path, const char *why)
{
	size_t n = strlen(path);
	if (!strncmp(why, path, n) && why[n] == ':')
		why += n + 1 + (why[n + 1] == ' ');
	if (k->njit_unread < sizeof k->jit_unread / sizeof k->jit_unread[0])
		snprintf(k->jit_unread[k->njit_unread], sizeof k->jit_unread[0], "%s of process %d: %s", name,
			 (int)p->pid, why);
	k->njit_unread++;
}

void kc_jit_read(struct cp_kcollector *k, struct kproc *p)
{
	if (!p->jit || p->jit_read || !p->img)
		return;
	p->jit_read = 1;
	struct cp_jit *j = calloc(1, sizeof *j);
	if (!j)
		return;
	/* A map older than the process is of another that had its PID; one
	 * owned by another user is not to be trusted. */
	j->not_before_ns = p->jit_not_before;
	j->owner_known = p->jit_owner_known;
	j->owner = p->jit_owner;
	char path[64], name[4096], why[256];
	snprintf(path, sizeof path, "%sperf-%d.map", p->jit_tmp >= 0 ? "" : "/tmp/", (int)p->jit_nspid);
	long rc = cp_jit_read_map(j, p->jit_tmp >= 0 ? p->jit_tmp : AT_FDCWD, path, why, sizeof why);
	if (rc < 0 && rc != -ENOENT) {
		/* None is the ordinary case: code that is no JIT's. */
		snprintf(name, sizeof name, "/tmp/perf-%d.map", (int)p->jit_nspid);
		unread(k, p, name, path, why);
	}
	if (p->jit_dump >= 0) {
		/* Opened again, to read from its start whatever was read before. */
		snprintf(path, sizeof path, "/proc/self/fd/%d", p->jit_dump);
		if (cp_jit_read_dump(j, AT_FDCWD, path, why, sizeof why) < 0) {
			ssize_t n = readlink(path, name, sizeof name - 1);
			name[n > 0 ? n : 0] = '\0';
			unread(k, p, n > 0 ? name : "its jitdump", path, why);
		}
	}
	let_go(k, p);
	if ((!j->map_entries && !j->dump_entries) || cp_jit_finish(j) < 0) {
		cp_jit_free(j);
		return;
	}
	cp_jit_free(p->img->jit);
	p->img->jit = j;
}

void kc_jit_end(struct cp_kcollector *k, struct kproc *p)
{
	let_go(k, p);
	p->jit = 0;
}
