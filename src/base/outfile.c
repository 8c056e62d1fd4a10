/*
 * outfile.c -- a file written whole or not at all (outfile.h).
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

int cp_outfile_open(struct cp_outfile *o, const char *path, char *err, size_t errlen)
{
	static unsigned seq;
	struct stat st;
	int exists = stat(path, &st) == 0;
	o->path = path;
	o->tmp = NULL;
	if (exists && !S_ISREG(st.st_mode)) {
		if ((o->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
			int e = errno;
			cp_why(err, errlen, "open %s: %s", path, strerror(e));
			return -e;
		}
		return 0;
	}
	size_t n = strlen(path) + 48;
	if (!(o->tmp = malloc(n))) {
		cp_why(err, errlen, "create %s.tmp.*: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	int e = 0;
	o->fd = -1;
	for (int tries = 0; tries < 100 && o->fd < 0; tries++) {
		snprintf(o->tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		if ((o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0 && (e = errno) != EEXIST)
			break;
	}
	if (o->fd < 0) {
		cp_why(err, errlen, "create %s.tmp.*: %s", path, strerror(e));
		free(o->tmp);
		o->tmp = NULL;
		return -e;
	}
	/* A file replaced keeps its permissions (the temporary file has
	 * the umask's). */
	if (exists && fchmod(o->fd, st.st_mode & 0777) != 0) {
		e = errno;
		cp_why(err, errlen, "chmod %s: %s", o->tmp, strerror(e));
		cp_outfile_abandon(o);
		return -e;
	}
	return 0;
}

const char *cp_outfile_name(const struct cp_outfile *o)
{
	return o->tmp ? o->tmp : o->path;
}

int cp_outfile_commit(struct cp_outfile *o, char *err, size_t errlen)
{
	int fd = o->fd, e = 0;
	o->fd = -1;
	if (fd >= 0 && close(fd) != 0 && errno != EINTR) {
		e = errno;
		cp_why(err, errlen, "close %s: %s", cp_outfile_name(o), strerror(e));
	} else if (o->tmp && rename(o->tmp, o->path) != 0) {
		e = errno;
		cp_why(err, errlen, "rename %s to %s: %s", o->tmp, o->path, strerror(e));
	} else {
		free(o->tmp);
		o->tmp = NULL;
		return 0;
	}
	cp_outfile_abandon(o);
	return -e;
}

void cp_outfile_abandon(struct cp_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp) {
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
}
