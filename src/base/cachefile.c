/*
 * cachefile.c -- files of cpuprof's on-disk caches (cachefile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "cachefile.h"

int cp_cache_dir(const char *kind, char *dir, size_t len, int make)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(dir, len, "%s/cpuprof/%s", xdg, kind);
	else if (home && home[0] == '/')
		n = snprintf(dir, len, "%s/.cache/cpuprof/%s", home, kind);
	else
		return -1;
	if (n < 0 || (size_t)n >= len)
		return -1;
	struct stat st;
	if (make) {
		for (char *s = strchr(dir + 1, '/');; s = strchr(s + 1, '/')) {
			if (s)
				*s = '\0';
			if (mkdir(dir, 0700) != 0 && errno != EEXIST)
				return -1;
			if (!s)
				break;
			*s = '/';
		}
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -1;
	return 0;
}

int cp_cache_key_valid(const char *b)
{
	size_t n = strlen(b);
	if (n < 2 || n > 128)
		return 0;
	return strspn(b, "0123456789abcdef") == n;
}

char *cp_cache_read(const char *dir, const char *name, size_t max, size_t *len)
{
	char file[4096 + 160];
	if (snprintf(file, sizeof file, "%s/%s", dir, name) >= (int)sizeof file)
		return NULL;
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size <= 4 ||
	    (uint64_t)st.st_size > max || !(buf = malloc((size_t)st.st_size)))
		goto fail;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			goto fail;
		got += (size_t)k;
	}
	close(fd);
	uint32_t crc;
	memcpy(&crc, buf + got - 4, 4);
	if (crc != (uint32_t)crc32(0, (const Bytef *)buf, (uInt)(got - 4))) {
		free(buf);
		return NULL;
	}
	*len = got - 4;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

static int write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

void cp_cache_write(const char *dir, const char *name, const void *buf, size_t len)
{
	char file[4096 + 160], tmp[4096 + 200];
	if (snprintf(file, sizeof file, "%s/%s", dir, name) >= (int)sizeof file ||
	    snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int)getpid()) >= (int)sizeof tmp || len > UINT32_MAX)
		return;
	uint32_t crc = (uint32_t)crc32(0, (const Bytef *)buf, (uInt)len);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	int bad = write_all(fd, buf, len) != 0 || write_all(fd, &crc, 4) != 0;
	if (close(fd) != 0 || bad || rename(tmp, file) != 0)
		unlink(tmp);
}

int cp_cache_file_id(const char *path, struct cp_cache_file_id *id)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	*id = (struct cp_cache_file_id){ st.st_dev, st.st_ino, (uint64_t)st.st_size,
					 (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec };
	return 0;
}
