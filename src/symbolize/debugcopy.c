/*
 * debugcopy.c -- inflated copies of debug files kept on disk
 * (debugcopy.h).  A copy is written sparse: the compressed bytes of the
 * sections it inflated are zeros in the image (unpack.h), left as holes,
 * so that libc's takes about the 10 MB its inflated sections do, and the
 * cap counts the blocks a copy takes, not its length.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/array.h"
#include "base/cachefile.h"
#include "base/elf.h"
#include "debugcopy.h"

#define KIND "inflated"
/* The default cap, MiB: libc's copy takes 10 MB, so that the copies of
 * the libraries a program's profiles meet, with their debug packages
 * installed (libc, libstdc++, ld.so, libm, a language runtime or two),
 * fit many times over, and a user finds no more than this under
 * ~/.cache/cpuprof/inflated/ however many builds they profile. */
#define DEFAULT_CAP_MIB 256
/* What a copy must leave free on its file system. */
#define KEEP_FREE_BYTES ((uint64_t)1 << 30)
#define KEEP_FREE_PCT 5
/* The reader's version: a change in what an image holds changes it. */
#define COPY_VERSION 1

struct trailer {
	char magic[8];
	uint64_t image_size;
	struct cp_cache_file_id src;
	uint32_t crc;    /* of the ELF header and the section header table */
	uint32_t version;
};
static const char MAGIC[8] = "CPINFLAT";

/* ---- The mappings handed out ------------------------------------------- */

enum { MAX_MAPS = 64 };
static struct {
	void *p;
	size_t n;
} maps[MAX_MAPS];
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

static int map_note(void *p, size_t n)
{
	int ok = 0;
	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < MAX_MAPS && !ok; i++)
		if (!maps[i].p) {
			maps[i].p = p;
			maps[i].n = n;
			ok = 1;
		}
	pthread_mutex_unlock(&maps_lock);
	return ok;
}

void cp_debugcopy_release(void *image)
{
	if (!image)
		return;
	size_t n = 0;
	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < MAX_MAPS && !n; i++)
		if (maps[i].p == image) {
			n = maps[i].n;
			maps[i].p = NULL;
		}
	pthread_mutex_unlock(&maps_lock);
	if (n)
		munmap(image, n);
	else
		free(image);
}

/* ---- Names and checks --------------------------------------------------- */

uint64_t cp_debugcopy_cap(void)
{
	const char *v = getenv("CPUPROF_INFLATED_CACHE");
	size_t digits = v ? strspn(v, "0123456789") : 0;
	if (!digits || digits > 9)
		return (uint64_t)DEFAULT_CAP_MIB << 20;
	uint64_t n = strtoull(v, NULL, 10);
	const char *unit = v + digits;
	if (!unit[0] || !strcmp(unit, "M") || !strcmp(unit, "m"))
		return n << 20;
	if (!strcmp(unit, "K") || !strcmp(unit, "k"))
		return n << 10;
	if (!strcmp(unit, "G") || !strcmp(unit, "g"))
		return n << 30;
	return (uint64_t)DEFAULT_CAP_MIB << 20;
}

/* The build ID of e (from its .note.gnu.build-id section, which debug
 * files keep) into out, "" if none. */
static void build_id(const struct cp_elf *e, char *out)
{
	struct cp_elf_sections s;
	out[0] = '\0';
	if (cp_elf_sections_read(e, &s) != 0)
		return;
	const ElfW(Shdr) *sh = cp_elf_section_find(&s, ".note.gnu.build-id");
	unsigned char *p = sh && sh->sh_type == SHT_NOTE ? cp_elf_section_bytes(e, sh, 4096) : NULL;
	if (p)
		cp_elf_notes_build_id(p, (size_t)sh->sh_size, sh->sh_addralign == 8 ? 8 : 4, out);
	free(p);
	cp_elf_sections_free(&s);
}

/* The copy's name for the file at fd into name[len] (its build ID and
 * size, else "f" and a hash of its identity), and its identity into *id.
 * 0, or -1. */
static int copy_name(int fd, const struct stat *st, char *name, size_t len, struct cp_cache_file_id *id)
{
	*id = (struct cp_cache_file_id){ st->st_dev, st->st_ino, (uint64_t)st->st_size,
					 (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec };
	struct cp_elf e = { .fd = fd, .size = (uint64_t)st->st_size };
	char bid[2 * CP_ELF_BUILD_ID_MAX + 1];
	build_id(&e, bid);
	/* With its size: an object with DWARF of its own and its debug file
	 * share a build ID. */
	if (bid[0])
		return snprintf(name, len, "%s-%llx", bid, (unsigned long long)st->st_size) < (int)len ? 0 : -1;
	uint32_t h = (uint32_t)crc32(0, (const Bytef *)id, sizeof *id);
	uint32_t g = (uint32_t)adler32(1, (const Bytef *)id, sizeof *id);
	return snprintf(name, len, "f%08x%08x", h, g) < (int)len ? 0 : -1;
}

/* The CRC-32 of the ELF header and section header table of image[size],
 * if they are whole and every section lies inside it uncompressed; else
 * -1. */
static int64_t image_crc(const unsigned char *image, size_t size)
{
	ElfW(Ehdr) eh;
	if (size < sizeof eh)
		return -1;
	memcpy(&eh, image, sizeof eh);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELF_CLASS_NATIVE ||
	    eh.e_ident[EI_DATA] != ELF_DATA_NATIVE || eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 ||
	    eh.e_shoff > size || (size - eh.e_shoff) / sizeof(ElfW(Shdr)) < eh.e_shnum)
		return -1;
	for (size_t i = 0; i < eh.e_shnum; i++) {
		ElfW(Shdr) sh;
		memcpy(&sh, image + eh.e_shoff + i * sizeof sh, sizeof sh);
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset))
			return -1;
		if (sh.sh_flags & SHF_COMPRESSED)
			return -1;
	}
	uLong crc = crc32(0, image, sizeof eh);
	crc = crc32(crc, image + eh.e_shoff, (uInt)(eh.e_shnum * sizeof(ElfW(Shdr))));
	return (int64_t)(crc & 0xffffffffu);
}

/* ---- Reading ------------------------------------------------------------ */

int cp_debugcopy_get(int fd, const struct stat *st, void **image, size_t *size)
{
	char dir[4096], name[160], path[4096 + 200];
	struct cp_cache_file_id id;
	*image = NULL;
	*size = 0;
	if (cp_debugcopy_cap() == 0 || cp_cache_dir(KIND, dir, sizeof dir, 0) != 0 ||
	    copy_name(fd, st, name, sizeof name, &id) != 0 ||
	    snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return 0;
	int cfd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0)
		return 0;
	struct stat cst;
	struct trailer t;
	void *m = MAP_FAILED;
	int ok = fstat(cfd, &cst) == 0 && S_ISREG(cst.st_mode) && cst.st_uid == geteuid() &&
		 (uint64_t)cst.st_size > sizeof t &&
		 pread(cfd, &t, sizeof t, cst.st_size - (off_t)sizeof t) == (ssize_t)sizeof t &&
		 !memcmp(t.magic, MAGIC, sizeof MAGIC) && t.version == COPY_VERSION &&
		 t.image_size == (uint64_t)cst.st_size - sizeof t && t.image_size <= SIZE_MAX;
	if (ok && memcmp(&t.src, &id, sizeof id) != 0) {
		/* Sound, but of another file of this name (the package
		 * installed again): replaced when this one is inflated. */
		close(cfd);
		return 0;
	}
	if (ok)
		m = mmap(NULL, (size_t)t.image_size, PROT_READ, MAP_PRIVATE, cfd, 0);
	close(cfd);
	if (ok && m == MAP_FAILED)
		return -1; /* no room to map it now (ENOMEM, a limit): not its fault */
	ok = ok && image_crc(m, (size_t)t.image_size) == (int64_t)t.crc;
	if (ok && strchr(name, '-')) { /* named by its build ID */
		struct cp_elf e = { .fd = -1, .mem = m, .size = t.image_size };
		char bid[2 * CP_ELF_BUILD_ID_MAX + 1];
		build_id(&e, bid);
		size_t n = strlen(bid);
		ok = n && !strncmp(bid, name, n) && name[n] == '-';
	}
	if (ok && !map_note(m, (size_t)t.image_size)) {
		munmap(m, (size_t)t.image_size);
		return -1; /* too many open at once: inflate this one in memory */
	}
	if (!ok) {
		struct stat now;
		if (m != MAP_FAILED)
			munmap(m, (size_t)t.image_size);
		/* Damaged, or of another file or reader; unless another
		 * process has renamed a new copy over it since the open. */
		if (stat(path, &now) == 0 && now.st_dev == cst.st_dev && now.st_ino == cst.st_ino)
			unlink(path);
		return 0;
	}
	/* Used now: the last out when the cap is met. */
	utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
	*image = m;
	*size = (size_t)t.image_size;
	return 1;
}

/* ---- Writing ------------------------------------------------------------ */

int cp_debugcopy_room(uint64_t size)
{
	char dir[4096];
	struct statvfs vfs;
	uint64_t cap = cp_debugcopy_cap();
	if (cap == 0 || size + sizeof(struct trailer) > cap || cp_cache_dir(KIND, dir, sizeof dir, 1) != 0 ||
	    access(dir, W_OK) != 0 || statvfs(dir, &vfs) != 0)
		return 0;
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize, total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	uint64_t keep = total / 100 * KEEP_FREE_PCT;
	if (keep < KEEP_FREE_BYTES)
		keep = KEEP_FREE_BYTES;
	return avail >= size && avail - size >= keep;
}

/* Writes p[n] at fd's offset off, leaving whole blocks of zeros as
 * holes.  0, or -1. */
static int write_sparse(int fd, const unsigned char *p, size_t n)
{
	enum { BLOCK = 4096 };
	static const unsigned char zeros[BLOCK];
	for (size_t off = 0; off < n;) {
		size_t k = n - off < BLOCK ? n - off : BLOCK;
		if (k == BLOCK && !memcmp(p + off, zeros, BLOCK)) {
			off += k;
			continue;
		}
		ssize_t w = pwrite(fd, p + off, k, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

void cp_debugcopy_put(int fd, const struct stat *st, const void *image, size_t size)
{
	char dir[4096], name[160], path[4096 + 200], tmp[4096 + 260];
	struct trailer t = { .image_size = size, .version = COPY_VERSION };
	memcpy(t.magic, MAGIC, sizeof MAGIC);
	int64_t crc = image_crc(image, size);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (crc < 0 || !cp_debugcopy_room(size) || cp_cache_dir(KIND, dir, sizeof dir, 1) != 0 ||
	    copy_name(fd, st, name, sizeof name, &t.src) != 0 ||
	    snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/.%s.%d.%lx", dir, name, (int)getpid(), (unsigned long)now.tv_nsec) >=
		    (int)sizeof tmp)
		return;
	t.crc = (uint32_t)crc;
	int tfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (tfd < 0)
		return;
	/* The copy's blocks on disk before it is named: a crash leaves a
	 * temporary file, never a named copy of zeros. */
	int bad = write_sparse(tfd, image, size) != 0 ||
		  pwrite(tfd, &t, sizeof t, (off_t)size) != (ssize_t)sizeof t || fdatasync(tfd) != 0;
	if (close(tfd) != 0 || bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return;
	}
	cp_debugcopy_trim(dir, cp_debugcopy_cap(), name);
}

/* ---- The cap ------------------------------------------------------------ */

struct entry {
	char name[160];
	struct timespec used;
	uint64_t bytes;
};

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

void cp_debugcopy_trim(const char *dir, uint64_t cap, const char *keep)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct entry *list = NULL;
	size_t n = 0, capn = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	for (struct dirent *de; (de = readdir(d));) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || strlen(de->d_name) >= sizeof list->name ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (de->d_name[0] == '.') {
			/* A writer's, or one a killed writer left. */
			if (st.st_mtime < now - 3600)
				unlinkat(dfd, de->d_name, 0);
			continue;
		}
		uint64_t bytes = (uint64_t)st.st_blocks * 512;
		total += bytes;
		if (keep && !strcmp(de->d_name, keep))
			continue;
		if (cp_array_grow((void **)&list, &capn, n + 1, sizeof *list, 64))
			break;
		snprintf(list[n].name, sizeof list[n].name, "%s", de->d_name);
		list[n].used = st.st_mtim;
		list[n].bytes = bytes;
		n++;
	}
	if (n)
		qsort(list, n, sizeof *list, by_use);
	for (size_t i = 0; i < n && total > cap; i++)
		if (unlinkat(dfd, list[i].name, 0) == 0 || errno == ENOENT)
			total -= list[i].bytes < total ? list[i].bytes : total;
	free(list);
	closedir(d);
}
