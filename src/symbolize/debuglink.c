/*
 * debuglink.c -- where an object's separate debug file may be, by build
 * ID or by its .gnu_debuglink (debuglink.h).  The section is read with bounded reads (base/elf.h).
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elf.h"
#include "base/testhooks.h"
#include "debuglink.h"

/* The file name in path's .gnu_debuglink into name[256]: 1 if it has one
 * (a plain name, no directory). */
static int link_name(const char *path, char name[256])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	struct stat st;
	if (fd < 0)
		return 0;
	struct cp_elf f = { .fd = fd };
	struct cp_elf_sections s = { 0 };
	const ElfW(Shdr) *sh;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		f.size = (uint64_t)st.st_size;
		if (cp_elf_sections_read(&f, &s) == 0 && (sh = cp_elf_section_find(&s, ".gnu_debuglink")) &&
		    sh->sh_size >= 2) {
			size_t n = sh->sh_size < 256 ? (size_t)sh->sh_size : 255;
			if (cp_elf_read(&f, sh->sh_offset, name, n) == 0) {
				name[n] = '\0';
				found = name[0] && strlen(name) < n && !strchr(name, '/');
			}
		}
	}
	cp_elf_sections_free(&s);
	close(fd);
	return found;
}

const char *cp_debug_root_dir = "/usr/lib/debug";

const char *cp_debug_root(void)
{
	return cp_test_debug_root() ? cp_test_debug_root() : cp_debug_root_dir;
}

int cp_debug_build_id_path(const char *root, const char *bid, char *out, size_t len)
{
	if (strlen(bid) < 3)
		return 0;
	int n = snprintf(out, len, "%s/.build-id/%.2s/%s.debug", root, bid, bid + 2);
	return n > 0 && (size_t)n < len;
}

int cp_debuglink_name(const char *path, char name[256])
{
	return link_name(path, name);
}

int cp_debuglink_path(const char *path, const char *link, const char *root, int k, char *out, size_t len)
{
	if (k < 0 || k > 5 || !link[0] || strlen(link) > 255 || strchr(link, '/'))
		return 0;
	char *real = NULL;
	const char *base = path;
	if (k >= 3) {
		if (!(real = realpath(path, NULL)) || !strcmp(real, path)) {
			free(real);
			return 0; /* no other directory */
		}
		base = real;
	}
	const char *slash = strrchr(base, '/');
	int dl = slash ? (int)(slash - base) : 1;
	const char *dir = slash ? base : ".";
	int n = k % 3 == 0 ? snprintf(out, len, "%.*s/%s", dl, dir, link) :
		k % 3 == 1 ? snprintf(out, len, "%.*s/.debug/%s", dl, dir, link) :
			     snprintf(out, len, "%s%.*s/%s", root, dl, dir, link);
	free(real);
	if (n < 0 || (size_t)n >= len)
		out[0] = '\0'; /* too long: no file there */
	return 1;
}
