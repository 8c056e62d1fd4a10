/*
 * outfile.h -- writing a file that appears whole or not at all.  A path
 * that names a regular file, or nothing yet, is written as a new
 * temporary file beside it (PATH.tmp.PID.N), which takes the old file's
 * permissions and is renamed over it once complete: a reader never sees
 * half a file, and a failed write leaves the old one.  A path that names
 * anything else (/dev/null, a FIFO, a terminal) is written into, since
 * renaming over it would replace it (as root, /dev/null with a regular
 * file).  What the profile writer, `report -o`, `diff -o` and `symbolize
 * -o` write through.  Not for signal context.
 */
#ifndef CPUPROF_OUTFILE_H
#define CPUPROF_OUTFILE_H

#include <stddef.h>

struct cp_outfile {
	int fd;           /* to write to; the caller may close it (a FILE or
			     gzFile made from it) and set it to -1 */
	const char *path; /* the caller's, which must outlive the file */
	char *tmp;        /* the temporary file, NULL when written into */
};

/* Opens o for path: 0, or a negative errno with "open PATH: reason" or
 * "create PATH.tmp.*: reason" in err[errlen]. */
int cp_outfile_open(struct cp_outfile *o, const char *path, char *err, size_t errlen);

/* The name being written (the temporary file's, else path). */
const char *cp_outfile_name(const struct cp_outfile *o);

/* Finishes a file written whole: closes o->fd if it is open and renames
 * the temporary file over path.  0, or a negative errno with the reason
 * in err[errlen] (the temporary file removed). */
int cp_outfile_commit(struct cp_outfile *o, char *err, size_t errlen);

/* Gives up: closes o->fd if it is open and removes the temporary file,
 * leaving path as it was. */
void cp_outfile_abandon(struct cp_outfile *o);

#endif
