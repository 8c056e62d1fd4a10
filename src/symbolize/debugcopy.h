/*
 * debugcopy.h -- inflated copies of debug files, kept on disk.  A
 * distribution's debug file has its DWARF compressed (zlib; libc6-dbg's
 * is 4 MB, 10 MB inflated), and libdw inflates the sections it reads
 * into memory at every open: about 60 ms of CPU and 17 MiB for libc, paid
 * by every profile that meets an address the lines cache does not hold.
 * The first reader inflates the file whole (unpack.h) and keeps the
 * image in $XDG_CACHE_HOME/cpuprof/inflated/KEY (cachefile.h's
 * directory; KEY the file's build ID, else a hash of its device, inode,
 * size and modification time); the next maps it, and libdw reads it as
 * an uncompressed file.
 *
 * A copy ends with a trailer: the image's size, the file it was made
 * from (device, inode, size, modification time: another file, or this
 * one changed, is another copy) and the CRC-32 of the image's ELF header
 * and section header table.  It is used only if all of these hold, its
 * sections lie inside it and none is compressed, and its build ID is the
 * file's; else it is deleted and made again.  The sections' contents are
 * not checked (a CRC of 10 MB would cost about 10 ms a use): a copy
 * damaged inside its DWARF is libdw's to refuse, as a damaged debug
 * file would be.  Written aside and renamed,
 * so that processes reading and writing at once each see a whole copy
 * or none.
 *
 * The directory is held to a cap, CPUPROF_INFLATED_CACHE MiB (or 512K,
 * 2G; default 256; 0: no copies made nor read), the least recently used first out
 * (a copy's modification time is set at every use).  No copy is made
 * larger than the cap, nor where it would leave the file system with
 * less than 1 GiB or 5% free, nor where the directory cannot be made or
 * written: the reader then inflates in memory as before.  Not for
 * signal context.
 */
#ifndef CPUPROF_DEBUGCOPY_H
#define CPUPROF_DEBUGCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* The cap in bytes: CPUPROF_INFLATED_CACHE, MiB or a number with K, M or
 * G (read at each call; anything else: the default); 0 when off. */
uint64_t cp_debugcopy_cap(void);

/* If a sound copy of the file at path (open at fd, whose fstat is st) is
 * kept: 1 with *image, a read-only mapping of it of *size bytes
 * (to release with cp_debugcopy_release).  -1 if it may be sound but
 * cannot be mapped now (no address space, too many mapped at once): the
 * caller inflates in memory and keeps the copy as it is.  Else 0 (a
 * damaged copy is deleted). */
int cp_debugcopy_get(int fd, const struct stat *st, void **image, size_t *size);

/* Would a copy of about `size` bytes be kept now (cap, free space, a
 * writable directory)?  Asked before inflating what libdw would inflate
 * itself. */
int cp_debugcopy_room(uint64_t size);

/* Keeps image[size], the file open at fd (fstat st) inflated, as its
 * copy, then holds the directory to the cap.  Silent: a cache. */
void cp_debugcopy_put(int fd, const struct stat *st, const void *image, size_t size);

/* Frees an image: unmaps one of cp_debugcopy_get, else free(). */
void cp_debugcopy_release(void *image);

/* Deletes the least recently used copies in dir, other than the one
 * named keep (or NULL), until they take at most cap bytes of disk, and
 * temporary files left an hour ago.  Internal; for tests. */
void cp_debugcopy_trim(const char *dir, uint64_t cap, const char *keep);

#endif
