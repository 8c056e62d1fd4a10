/*
 * lines.c -- inline chains and source lines of one object from its DWARF
 * (lines.h), with elfutils' libdw.  libdw is the DWARF reader that perf,
 * systemtap and eu-addr2line use, kept up with every DWARF version, GCC's
 * and Clang's extensions, compressed sections, split units and dwz's
 * alternate files: writing our own would mean writing all of that again.
 * It is loaded with dlopen("libdw.so.1") at the first lookup, through
 * the prototypes of its headers, so that libcpuprof.so, preloaded into
 * any program, depends on nothing more at load time and a host without
 * libdw still profiles (without lines, and says so).  Only plain libdw
 * is used, not libdwfl, whose debuginfod client would download debug
 * files over the network.
 *
 * Per object, opening builds a table of its units' address ranges; a
 * unit is read only when an address falls in it: its function DIEs, once,
 * into a sorted table of their ranges, and its line table.  A lookup
 * finds the function containing the address, walks down its inlined
 * subroutines to the innermost one containing it, and reads the line of
 * the address from the line table and the line of each call from the
 * inlined subroutine's DW_AT_call_file/DW_AT_call_line, as addr2line -i
 * does.  What libdw hands back is checked before it is believed: DIE
 * walks must move forward through the section and stay shallow, a line
 * row must lie inside the function, and the function must start where the
 * ELF symbol does, so that a corrupt or foreign debug file gives no lines
 * rather than wrong ones.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "base/array.h"
#include "base/error.h"
#include "base/testhooks.h"
#include "debuginfod.h"
#include "debugcopy.h"
#include "debuglink.h"
#include "lines.h"
#include "dwp.h"
#include "unpack.h"

const char *cp_lines_libdw_soname = "libdw.so.1";

/* ---- libdw, loaded at run time ---------------------------------------- */

#define LIBDW_FUNCS(X)                                                       \
	X(elf_version) X(elf_begin) X(elf_end) X(elf_kind) X(elf_nextscn)    \
	X(elf_getshdrstrndx) X(elf_strptr) X(gelf_getshdr) X(gelf_getehdr)   \
	X(gelf_update_shdr)                                                  \
	X(dwelf_elf_gnu_build_id) X(dwelf_elf_gnu_debuglink)                 \
	X(dwarf_begin_elf) X(dwarf_end) X(dwarf_errmsg) X(dwarf_get_units)   \
	X(dwarf_cu_info) X(dwarf_ranges) X(dwarf_child)                      \
	X(dwarf_siblingof) X(dwarf_tag) X(dwarf_dieoffset) X(dwarf_offdie)   \
	X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_formudata)             \
	X(dwarf_formstring) X(dwarf_hasattr) X(dwarf_decl_line)              \
	X(dwarf_decl_file) X(dwarf_getsrclines) X(dwarf_onesrcline)          \
	X(dwarf_lineaddr) X(dwarf_lineno) X(dwarf_linesrc)                   \
	X(dwarf_lineendsequence) X(dwarf_getsrcfiles) X(dwarf_filesrc)     \
	X(dwarf_cu_getdwarf) X(dwarf_cuoffset) X(dwarf_next_unit) X(dwarf_getelf)  \
	X(elf_memory) X(elf_rawfile)

static struct {
#define FIELD(f) __typeof__(f) *f;
	LIBDW_FUNCS(FIELD)
#undef FIELD
} dw;

static int dw_state; /* 0 not tried, 1 loaded, -1 absent */
static char dw_why[160];

int cp_lines_libdw(char *why, size_t len)
{
	if (dw_state == 0) {
		void *h = dlopen(cp_lines_libdw_soname, RTLD_NOW | RTLD_LOCAL);
		const char *missing = NULL;
		if (h) {
#define LOAD(f)                                                   \
	if (!missing && !(*(void **)&dw.f = dlsym(h, #f)))        \
		missing = #f;
			LIBDW_FUNCS(LOAD)
#undef LOAD
		}
		if (!h) {
			const char *e = dlerror();
			snprintf(dw_why, sizeof dw_why,
				 "%s not loaded (%s): install elfutils' libdw1",
				 cp_lines_libdw_soname, e ? e : "not found");
		} else if (missing) {
			snprintf(dw_why, sizeof dw_why,
				 "libdw.so.1 has no %s", missing);
		} else if (dw.elf_version(EV_CURRENT) == EV_NONE) {
			snprintf(dw_why, sizeof dw_why,
				 "libelf does not support this ELF version");
		}
		/* Never unloaded: a later write uses it again. */
		dw_state = dw_why[0] ? -1 : 1;
	}
	if (dw_state < 0 && why && len)
		snprintf(why, len, "%s", dw_why);
	return dw_state > 0 ? 0 : -ENOENT;
}

/* ---- Object ------------------------------------------------------------ */

/* Address range of a unit or a function: [lo, hi) -> index. */
struct range {
	uint64_t lo, hi;
	size_t idx;
};

struct unit {
	Dwarf_CU *cu;
	Dwarf_Die top;       /* the unit's DIE (a skeleton's, for split) */
	Dwarf_Die die;       /* the DIE whose children are the functions */
	int state;           /* 0 unread, 1 read, < 0 an enum cp_lines_status */
	struct range *fns;   /* function ranges, sorted by lo; idx: DIE offset */
	size_t nfns;
	Dwarf_Lines *lines;
	size_t nlines;
	Dwarf_Files *files;  /* of `die`'s unit, for DW_AT_call_file */
	Dwarf *dbg;          /* the file `die` is in (a .dwo, for split) */
	const char *comp_dir; /* DW_AT_comp_dir, or NULL */
};

/* Relative file names made absolute with their unit's DW_AT_comp_dir:
 * (name, comp_dir) pointers -> malloc'd path. */
struct path {
	const char *name, *dir;
	char *full;
};

struct cp_lines_dwarf {
	int fd, dfd;         /* the object's file, its debug file (or -1) */
	Elf *elf, *delf;
	void *image, *dimage; /* their inflated copies (unpack.h), or NULL */
	size_t image_size, dimage_size;
	int ro, dro;         /* libdw reads each from a read-only mapping */
	void *back;          /* that mapping of the file libdw reads, or NULL */
	size_t back_size;
	int sfd;             /* the skeleton unpacked with a .dwp (dwp.h), or -1 */
	char dwp_why[160];   /* why a .dwp beside it was not used, or "" */
	Elf *selfe;
	void *simage;
	char *source;        /* the path of the file its DWARF is read from */
	int split;           /* some units are in .dwo files */
	Dwarf *dbg;
	struct unit *units;
	size_t nunits;
	struct range *ranges; /* unit ranges, sorted by lo; idx: unit */
	size_t nranges;
	struct path *paths;   /* open addressing */
	size_t npaths, cappaths;
	char trouble[256];
};

/* Bounds on what a walk of a DIE tree may take: deeper trees and larger
 * function tables are malformed (GCC nests a few dozen levels). */
enum { MAX_TREE_DEPTH = 256, MAX_INLINE_VISITS = 1 << 20 };
/* Units indexed between two give_back()s: libc's 2063 in 32 steps. */
enum { GIVE_BACK_UNITS = 64 };

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* The build ID of e as hex into out[129] ("" if none or too long). */
static void elf_build_id(Elf *e, char *out)
{
	const void *p;
	ssize_t n = dw.dwelf_elf_gnu_build_id(e, &p);
	out[0] = '\0';
	if (n > 0 && n <= 64)
		hex(p, (size_t)n, out);
}

/* 1 if e has a .debug_info (or GNU-compressed .zdebug_info) section with
 * contents. */
static int has_debug_info(Elf *e)
{
	size_t shstrndx;
	if (dw.elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *s = NULL; (s = dw.elf_nextscn(e, s));) {
		GElf_Shdr sh;
		if (!dw.gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS ||
		    sh.sh_size == 0)
			continue;
		const char *name = dw.elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") ||
			     !strcmp(name, ".zdebug_info")))
			return 1;
	}
	return 0;
}

/* 1 if e has compressed DWARF sections: with `gnu`, GNU's (.zdebug_*),
 * else ELF's (SHF_COMPRESSED .debug_*; zlib: the zstd ones are inflated
 * before, by elf_open). */
static int compressed_debug(Elf *e, int gnu)
{
	size_t shstrndx;
	if (dw.elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *s = NULL; (s = dw.elf_nextscn(e, s));) {
		GElf_Shdr sh;
		const char *name;
		if (dw.gelf_getshdr(s, &sh) && sh.sh_type != SHT_NOBITS && (gnu || (sh.sh_flags & SHF_COMPRESSED)) &&
		    (name = dw.elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strncmp(name, gnu ? ".zdebug_" : ".debug_", gnu ? 8 : 7))
			return 1;
	}
	return 0;
}

/* The DWARF sections libdw inflates at dwarf_begin_elf that no lookup
 * here reads: location lists (a tenth of libc's DWARF, inflated), macros,
 * the name indexes. */
static const char *const unread_sections[] = {
	".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo", ".debug_pubnames",
	".debug_pubtypes", ".debug_gnu_pubnames", ".debug_gnu_pubtypes", ".debug_names",
};

/* Hides the unread sections of e, an ELF opened with ELF_C_READ (its
 * section headers are its own copy), from libdw: it skips SHT_NOBITS. */
static void hide_unread(Elf *e)
{
	size_t shstrndx;
	if (dw.elf_getshdrstrndx(e, &shstrndx) != 0)
		return;
	for (Elf_Scn *s = NULL; (s = dw.elf_nextscn(e, s));) {
		GElf_Shdr sh;
		const char *name;
		if (!dw.gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS || !(name = dw.elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		for (size_t i = 0; i < sizeof unread_sections / sizeof *unread_sections; i++)
			if (!strcmp(name, unread_sections[i])) {
				sh.sh_type = SHT_NOBITS;
				dw.gelf_update_shdr(s, &sh);
				break;
			}
	}
}

/* Opens path as a native ELF file: 0 with *fd and *e, or a negative errno
 * with the reason in why.  A file with zstd-compressed sections, which
 * libdw 0.188 cannot inflate, is read from an inflated copy in memory,
 * *image (to release with cp_debugcopy_release after *e is ended), else
 * *image is NULL.  With `keep`, a file with compressed sections is read
 * from its inflated copy on disk (debugcopy.h), made now if there is none
 * and there is room for it.  Else a file with zlib-compressed DWARF is
 * read rather than mapped, and its unread sections hidden: libdw inflates
 * every DWARF section it knows when it opens a file, and the compressed
 * pages of a mapped file stay resident beside what they inflated to
 * (libc's debug file: 4 MiB of them beside 10 MiB; read, each is freed
 * once inflated), so that the lines child's peak is about two thirds of
 * what it was.  *ro (if not NULL) says whether *e reads a read-only
 * mapping of the file or its copy (give_back). */
static int elf_open(const char *path, int keep, int *fd, Elf **e, void **image, size_t *isize_out, int *ro,
		    char *why, size_t len)
{
	struct stat st;
	size_t isize = 0;
	int rc = -ENOEXEC, mapped = 0;
	*e = NULL;
	*image = NULL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		rc = -errno;
		cp_why(why, len, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		cp_why(why, len, "%s: not a regular file", path);
		goto bad;
	}
	char zwhy[200];
	int z = keep && cp_unpack_compressed(*fd) ? cp_debugcopy_get(*fd, &st, image, &isize) : 0;
	if (z < 0) /* a copy that cannot be mapped now: inflate in memory, rewrite nothing */
		keep = 0, z = 0;
	mapped = z == 1;
	if (z == 0) {
		z = cp_unpack_elf(*fd, keep ? cp_debugcopy_room : NULL, image, &isize, zwhy, sizeof zwhy);
		if (z < 0 && keep) /* a zlib section that does not inflate is libdw's to judge, as without copies */
			z = cp_unpack_elf(*fd, NULL, image, &isize, zwhy, sizeof zwhy);
		else if (z > 0 && keep) {
			cp_debugcopy_put(*fd, &st, *image, isize);
			/* Read from the copy just kept, not from the heap: of a
			 * mapped copy only what libdw touches is resident. */
			void *m;
			size_t msize;
			if (cp_debugcopy_get(*fd, &st, &m, &msize) == 1) {
				cp_debugcopy_release(*image);
				*image = m;
				isize = msize;
				mapped = 1;
			}
		}
	}
	if (z < 0) {
		rc = z == -ENOMEM ? z : -ENOEXEC;
		cp_why(why, len, "%s: its DWARF is zstd-compressed, which libdw 0.188 cannot inflate, "
			    "and cpuprof could not: %s", path, zwhy);
		goto bad;
	}
	*e = z ? dw.elf_memory(*image, isize) : dw.elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	mapped = z ? mapped : 1; /* ELF_C_READ_MMAP maps it read-only */
	if (z && mapped && *e && compressed_debug(*e, 1)) {
		/* libelf rewrites the headers of the sections libdw inflates
		 * in an image (elf_memory): the copy's own, if it has GNU's
		 * .zdebug ones, which are not inflated into it. */
		if (mprotect(*image, isize, PROT_READ | PROT_WRITE) != 0) {
			dw.elf_end(*e);
			*e = NULL;
		}
		mapped = 0;
	}
	if (!z && *e && dw.elf_kind(*e) == ELF_K_ELF && compressed_debug(*e, 0)) {
		dw.elf_end(*e);
		if ((*e = dw.elf_begin(*fd, ELF_C_READ, NULL)))
			hide_unread(*e);
		mapped = 0;
	}
	if (isize_out)
		*isize_out = isize;
	if (ro)
		*ro = mapped;
	GElf_Ehdr eh;
	if (!*e || dw.elf_kind(*e) != ELF_K_ELF || !dw.gelf_getehdr(*e, &eh) ||
	    eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)) {
		cp_why(why, len, "%s: not an ELF file of this machine", path);
		goto bad;
	}
	return 0;
bad:
	if (*e)
		dw.elf_end(*e);
	*e = NULL;
	cp_debugcopy_release(*image);
	*image = NULL;
	close(*fd);
	*fd = -1;
	return rc;
}

/* The CRC-32 of a whole file (the one .gnu_debuglink records), or -1. */
static int64_t file_crc(int fd)
{
	enum { CHUNK = 1 << 16 };
	unsigned char *buf = malloc(CHUNK);
	if (!buf)
		return -1;
	uLong crc = crc32(0, NULL, 0);
	off_t off = 0;
	for (;;) {
		ssize_t r = pread(fd, buf, CHUNK, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return -1;
		}
		if (r == 0)
			break;
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	free(buf);
	return (int64_t)(crc & 0xffffffffu);
}

/* Tries path as the debug file of an object whose build ID is want ("" if
 * unknown): it must have DWARF and the same build ID, or (when either has
 * none) the CRC `crc` if crc >= 0.  1 with d->dfd and d->delf if it is,
 * else 0, with a reason in why if the file exists but does not fit. */
static int try_debug_file(struct cp_lines_dwarf *d, const char *path,
			  const char *want, int64_t crc, char *why, size_t len)
{
	int fd;
	Elf *e;
	void *image;
	char bid[129];
	if (access(path, F_OK) != 0)
		return 0;
	char ewhy[400] = "";
	size_t isize;
	int ro;
	if (elf_open(path, 1, &fd, &e, &image, &isize, &ro, ewhy, sizeof ewhy) != 0) {
		/* Not an ELF file is no debug file; one that cannot be
		 * inflated is, and says so. */
		if (strstr(ewhy, "zstd"))
			cp_why(why, len, "debug file %s", ewhy);
		return 0;
	}
	elf_build_id(e, bid);
	const char *bad = NULL;
	if (!has_debug_info(e))
		bad = "has no .debug_info";
	else if (want[0] && bid[0] && strcmp(want, bid) != 0)
		bad = "has another build ID";
	else if ((!want[0] || !bid[0]) && (crc < 0 || file_crc(fd) != crc))
		bad = "does not match (its CRC differs)";
	if (bad) {
		cp_why(why, len, "debug file %s %s", path, bad);
		dw.elf_end(e);
		cp_debugcopy_release(image);
		close(fd);
		return 0;
	}
	if (!(d->source = strdup(path))) {
		dw.elf_end(e);
		cp_debugcopy_release(image);
		close(fd);
		return 0;
	}
	d->dfd = fd;
	d->delf = e;
	d->dimage = image;
	d->dimage_size = isize;
	d->dro = ro;
	return 1;
}

/* Finds the separate debug file of the object d->elf at path: by build ID,
 * then by .gnu_debuglink beside the object, in its .debug/ and under the
 * debug root.  1 if found. */
static int find_debug_file(struct cp_lines_dwarf *d, const char *path,
			   const char *want, char *why, size_t len)
{
	const char *root = cp_debug_root();
	char p[PATH_MAX];
	int found = 0;
	if (cp_debug_build_id_path(root, want, p, sizeof p))
		found = try_debug_file(d, p, want, -1, why, len);
	/* One that cpuprof record fetched from a debuginfod server. */
	const char *fetched = found || !want[0] ? NULL : cp_debuginfod_path(want);
	if (fetched)
		found = try_debug_file(d, fetched, want, -1, why, len);
	GElf_Word crc;
	const char *link = found ? NULL : dw.dwelf_elf_gnu_debuglink(d->elf, &crc);
	for (int k = 0; link && !found && cp_debuglink_path(path, link, root, k, p, sizeof p); k++)
		if (p[0] && strcmp(p, path) != 0)
			found = try_debug_file(d, p, want, crc, why, len);
	return found;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Appends die's address ranges to *r (with index idx).  Returns 0, or -1
 * on a malformed range list or no memory. */
static int add_ranges(Dwarf_Die *die, size_t idx, struct range **r, size_t *n,
		      size_t *cap)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int k = 0;
	while ((off = dw.dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (++k > 1 << 16)
			return -1;
		if (hi <= lo)
			continue;
		if (cp_array_grow((void **)r, cap, *n + 1, sizeof **r, 64))
			return -1;
		(*r)[(*n)++] = (struct range){ lo, hi, idx };
	}
	return off < 0 ? -1 : 0;
}

/* The size of e's section `name` (after libdw decompressed it), or 0. */
static uint64_t section_size(Elf *e, const char *name)
{
	size_t shstrndx;
	if (!e || dw.elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *s = NULL; (s = dw.elf_nextscn(e, s));) {
		GElf_Shdr sh;
		const char *n;
		if (dw.gelf_getshdr(s, &sh) && (n = dw.elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strcmp(n, name))
			return sh.sh_type == SHT_NOBITS ? 0 : sh.sh_size;
	}
	return 0;
}

/* Whether [p, p + n) is in one mapping of a file that this process
 * cannot write (/proc/self/maps): the only memory give_back() may drop.
 * elf_open says which files it had mapped read-only (elf_rawfile() of
 * the others would read them whole into the heap); this checks it, as
 * libelf reads a file it fails to map (a tight ulimit -v) into the heap
 * instead. */
static int file_mapped_ro(const void *p, size_t n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4352], perms[8];
	unsigned long lo, hi, ino;
	uintptr_t a = (uintptr_t)p;
	int ok = 0, whole = 1;
	while (f && fgets(line, sizeof line, f)) {
		/* A line's first part only (a long path is split). */
		int first = whole;
		whole = strchr(line, '\n') != NULL;
		if (first && sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms, &ino) == 4 && a >= lo &&
		    a < hi) {
			ok = perms[1] == '-' && ino != 0 && n <= hi - a;
			break;
		}
	}
	if (f)
		fclose(f);
	return ok;
}

/* Gives back the pages of the mapped file libdw reads that it has read so
 * far (the mapping is read-only: they hold nothing of this process's own,
 * stay in the page cache and come back at the next touch).  Indexing the
 * units touches every page of .debug_info and most of .debug_abbrev (of
 * libc's debug file, 9 MiB), which would otherwise count in the lines
 * child's resident set to its end, though each lookup after reads a few
 * of them. */
static void give_back(struct cp_lines_dwarf *d)
{
	if (d->back)
		madvise(d->back, d->back_size, MADV_DONTNEED);
}

/* Indexes the units of d->dbg by address.  A unit that runs past the end
 * of .debug_info (a truncated section: libdw would read what follows it)
 * is left out. */
static int index_units(struct cp_lines_dwarf *d, char *why, size_t len)
{
	size_t capu = 0, capr = 0, seen = 0;
	uint64_t info = section_size(dw.dwarf_getelf(d->dbg), ".debug_info");
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die top;
	int rc;
	while ((rc = dw.dwarf_get_units(d->dbg, cu, &next, &version, &type, &top,
					NULL)) == 0) {
		cu = next;
		if (++seen % GIVE_BACK_UNITS == 0)
			give_back(d);
		if (type != DW_UT_compile && type != DW_UT_skeleton &&
		    type != DW_UT_partial)
			continue;
		d->split |= type == DW_UT_skeleton;
		if (top.addr == NULL)
			continue;
		Dwarf_Off start = dw.dwarf_dieoffset(&top) - dw.dwarf_cuoffset(&top), end;
		if (dw.dwarf_next_unit(d->dbg, start, &end, NULL, NULL, NULL, NULL, NULL, NULL,
				       NULL) != 0 || end > info)
			continue;
		if (cp_array_grow((void **)&d->units, &capu, d->nunits + 1,
				  sizeof *d->units, 64)) {
			cp_why(why, len, "out of memory");
			return -ENOMEM;
		}
		struct unit *u = &d->units[d->nunits];
		memset(u, 0, sizeof *u);
		u->cu = cu;
		u->top = top;
		if (add_ranges(&top, d->nunits, &d->ranges, &d->nranges, &capr) != 0) {
			/* A unit whose ranges cannot be read is left out. */
			continue;
		}
		d->nunits++;
	}
	if (rc < 0 && d->nunits == 0) {
		cp_why(why, len, "libdw: %s", dw.dwarf_errmsg(-1));
		return -ENOEXEC;
	}
	qsort(d->ranges, d->nranges, sizeof *d->ranges, range_cmp);
	give_back(d);
	return 0;
}

/* The .dwo name of skeleton DIE top, or NULL. */
static const char *dwo_name(Dwarf_Die *top)
{
	Dwarf_Attribute a;
	return dw.dwarf_formstring(dw.dwarf_attr(top, DW_AT_dwo_name, &a) ? &a :
				   dw.dwarf_attr(top, DW_AT_GNU_dwo_name, &a));
}

/* Split units whose .dwo files libdw does not find, packed in a .dwp
 * beside the object (or its debug file), which this libdw may not read
 * (dwp.h): unpacked where it finds them, the units read again from there,
 * every split unit opened, and the unpacked files removed.  Nothing
 * changes if anything fails (the units then say their .dwo was not
 * found). */
static void use_dwp(struct cp_lines_dwarf *d, const char *path)
{
	struct unit *first = NULL;
	for (size_t i = 0; i < d->nunits && !first; i++) {
		uint8_t type = 0;
		Dwarf_Die sub;
		if (dw.dwarf_cu_info(d->units[i].cu, NULL, &type, NULL, &sub, NULL, NULL, NULL) == 0 &&
		    type == DW_UT_skeleton) {
			if (sub.addr != NULL)
				return; /* its .dwo is there: libdw reads them */
			first = &d->units[i];
		}
	}
	char *dwp = NULL;
	if (!first || asprintf(&dwp, "%s.dwp", path) < 0)
		return;
	if (access(dwp, R_OK) != 0 && d->source && strcmp(d->source, path) != 0) {
		free(dwp);
		if (asprintf(&dwp, "%s.dwp", d->source) < 0)
			return;
	}
	struct cp_dwp_unit *list = calloc(d->nunits, sizeof *list);
	size_t n = 0;
	for (size_t i = 0; list && i < d->nunits; i++) {
		uint8_t type = 0;
		uint64_t id = 0;
		const char *name;
		if (dw.dwarf_cu_info(d->units[i].cu, NULL, &type, NULL, NULL, &id, NULL, NULL) == 0 &&
		    type == DW_UT_skeleton && (name = dwo_name(&d->units[i].top)))
			list[n++] = (struct cp_dwp_unit){ id, name };
	}
	/* The file the skeletons are in, as read (inflated if it was). */
	int own = d->delf == NULL;
	struct cp_elf src = { .fd = own ? d->fd : d->dfd, .mem = own ? d->image : d->dimage,
			      .size = own ? d->image_size : d->dimage_size };
	struct stat st;
	if (src.mem)
		src.fd = -1;
	else if (fstat(src.fd, &st) == 0)
		src.size = (uint64_t)st.st_size;
	char dir[4096];
	if (!list || n == 0 || access(dwp, R_OK) != 0 ||
	    cp_dwp_unpack(&src, dwp, list, n, dir, sizeof dir, d->dwp_why, sizeof d->dwp_why) <= 0) {
		free(list);
		free(dwp);
		return;
	}
	free(list);
	free(dwp);
	char skel[4200];
	snprintf(skel, sizeof skel, "%s/skeleton", dir);
	Dwarf *dbg = NULL;
	if (elf_open(skel, 0, &d->sfd, &d->selfe, &d->simage, NULL, NULL, NULL, 0) == 0 &&
	    (dbg = dw.dwarf_begin_elf(d->selfe, DWARF_C_READ, NULL))) {
		Dwarf *old = d->dbg;
		struct unit *units = d->units;
		struct range *ranges = d->ranges;
		size_t nunits = d->nunits, nranges = d->nranges;
		d->dbg = dbg;
		d->units = NULL;
		d->ranges = NULL;
		d->nunits = d->nranges = 0;
		if (index_units(d, NULL, 0) == 0 && d->nranges > 0) {
			/* libdw opens each .dwo now, while they are there. */
			for (size_t i = 0; i < d->nunits; i++) {
				Dwarf_Die sub;
				dw.dwarf_cu_info(d->units[i].cu, NULL, NULL, NULL, &sub, NULL, NULL, NULL);
			}
			dw.dwarf_end(old);
			free(units);
			free(ranges);
			d->dwp_why[0] = '\0';
		} else {
			snprintf(d->dwp_why, sizeof d->dwp_why, "libdw could not read the units unpacked from it");
			free(d->units);
			free(d->ranges);
			dw.dwarf_end(dbg);
			d->dbg = old;
			d->units = units;
			d->ranges = ranges;
			d->nunits = nunits;
			d->nranges = nranges;
		}
	}
	cp_dwp_clean(dir);
}

int cp_lines_open(const char *path, const char *build_id,
		  struct cp_lines_dwarf **out, char *why, size_t len)
{
	*out = NULL;
	if (cp_lines_libdw(why, len) != 0)
		return -ENOENT;
	struct cp_lines_dwarf *d = calloc(1, sizeof *d);
	if (!d) {
		cp_why(why, len, "out of memory");
		return -ENOMEM;
	}
	d->fd = d->dfd = d->sfd = -1;
	if (!build_id)
		build_id = "";
	char own[129] = "", whyd[256] = "";
	Elf *use = NULL;
	int rc = elf_open(path, 1, &d->fd, &d->elf, &d->image, &d->image_size, &d->ro, why, len);
	if (rc == 0) {
		elf_build_id(d->elf, own);
		int same = !build_id[0] || !own[0] || !strcmp(own, build_id);
		if (same && has_debug_info(d->elf))
			use = d->elf;
		else if (find_debug_file(d, path, same ? build_id : "", whyd, sizeof whyd))
			use = d->delf;
		else if (!same)
			cp_why(why, len, "the file on disk has another build ID than the loaded "
				      "object and no debug file has its build ID");
		else
			cp_why(why, len, "no DWARF: built without -g or stripped, and no debug "
				      "file found by build ID or .gnu_debuglink%s%s",
			    whyd[0] ? "; " : "", whyd);
	} else if (build_id[0] && find_debug_file(d, path, build_id, whyd, sizeof whyd)) {
		/* The object's file is gone (or unreadable), its debug file is
		 * not. */
		d->elf = NULL;
		use = d->delf;
	}
	if (!use) {
		cp_lines_close(d);
		return rc == 0 ? -ENOENT : rc;
	}
	if (!d->source && !(d->source = strdup(path))) {
		cp_why(why, len, "out of memory");
		cp_lines_close(d);
		return -ENOMEM;
	}
	if ((use == d->elf ? d->ro : d->dro) && (d->back = dw.elf_rawfile(use, &d->back_size)) &&
	    !file_mapped_ro(d->back, d->back_size))
		d->back = NULL;
	d->dbg = dw.dwarf_begin_elf(use, DWARF_C_READ, NULL);
	if (!d->dbg) {
		cp_why(why, len, "libdw: %s", dw.dwarf_errmsg(-1));
		cp_lines_close(d);
		return -ENOEXEC;
	}
	if ((rc = index_units(d, why, len)) != 0) {
		cp_lines_close(d);
		return rc;
	}
	if (d->split)
		use_dwp(d, path);
	if (d->nranges == 0) {
		cp_why(why, len, "its DWARF describes no code");
		cp_lines_close(d);
		return -ENOENT;
	}
	*out = d;
	return 0;
}

void cp_lines_close(struct cp_lines_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nunits; i++)
		free(d->units[i].fns);
	free(d->units);
	for (size_t i = 0; i < d->cappaths; i++)
		free(d->paths[i].full);
	free(d->paths);
	free(d->ranges);
	free(d->source);
	if (d->dbg)
		dw.dwarf_end(d->dbg);
	if (d->delf)
		dw.elf_end(d->delf);
	if (d->elf)
		dw.elf_end(d->elf);
	cp_debugcopy_release(d->dimage);
	cp_debugcopy_release(d->image);
	if (d->selfe)
		dw.elf_end(d->selfe);
	cp_debugcopy_release(d->simage);
	if (d->sfd >= 0)
		close(d->sfd);
	if (d->dfd >= 0)
		close(d->dfd);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

const char *cp_lines_trouble(const struct cp_lines_dwarf *d)
{
	return d->trouble[0] ? d->trouble : NULL;
}

const char *cp_lines_source(const struct cp_lines_dwarf *d)
{
	return d->split ? NULL : d->source;
}

/* ---- Units -------------------------------------------------------------- */

/* Collects every function DIE of unit u that has code into u->fns: a
 * preorder walk of the whole unit, whose DIE offsets must grow (a tree
 * that points backwards is malformed, and could loop) and which must stay
 * within MAX_TREE_DEPTH.  Returns 0 or -1. */
static int unit_functions(struct unit *u)
{
	Dwarf_Die stack[MAX_TREE_DEPTH];
	size_t depth, cap = 0;
	Dwarf_Off last = dw.dwarf_dieoffset(&u->die);
	int r = dw.dwarf_child(&u->die, &stack[0]);
	if (r != 0)
		return r < 0 ? -1 : 0; /* no children: no functions */
	depth = 1;
	while (depth > 0) {
		Dwarf_Die *die = &stack[depth - 1];
		Dwarf_Off off = dw.dwarf_dieoffset(die);
		if (off <= last || off == (Dwarf_Off)-1)
			return -1;
		last = off;
		if (dw.dwarf_tag(die) == DW_TAG_subprogram &&
		    !dw.dwarf_hasattr(die, DW_AT_declaration) &&
		    (dw.dwarf_hasattr(die, DW_AT_low_pc) ||
		     dw.dwarf_hasattr(die, DW_AT_ranges)) &&
		    add_ranges(die, (size_t)off, &u->fns, &u->nfns, &cap) != 0)
			return -1;
		/* Into its children, else on to its sibling or an ancestor's. */
		Dwarf_Die child;
		r = dw.dwarf_child(die, &child);
		if (r < 0)
			return -1;
		if (r == 0) {
			if (depth == MAX_TREE_DEPTH)
				return -1;
			stack[depth++] = child;
			continue;
		}
		while (depth > 0) {
			r = dw.dwarf_siblingof(&stack[depth - 1], &stack[depth - 1]);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
			depth--;
		}
	}
	qsort(u->fns, u->nfns, sizeof *u->fns, range_cmp);
	return 0;
}

/* Reads unit u on first use.  Returns 1 if usable, else an enum
 * cp_lines_status. */
static int unit_load(struct cp_lines_dwarf *d, struct unit *u)
{
	if (u->state)
		return u->state;
	uint8_t type = 0;
	Dwarf_Die sub;
	u->state = CP_LINES_BAD;
	if (dw.dwarf_cu_info(u->cu, NULL, &type, NULL, &sub, NULL, NULL, NULL) != 0)
		return u->state;
	if (type == DW_UT_skeleton) {
		if (sub.addr == NULL) {
			Dwarf_Attribute a;
			const char *dwo = dw.dwarf_formstring(
				dw.dwarf_attr(&u->top, DW_AT_dwo_name, &a) ? &a :
				dw.dwarf_attr(&u->top, DW_AT_GNU_dwo_name, &a));
			/* Nor in the package (dwp) beside the file, if any. */
			if (d->dwp_why[0])
				snprintf(d->trouble, sizeof d->trouble, "split DWARF unit %.60s not found, nor in "
					 "its DWARF package: %.120s", dwo ? dwo : "(unnamed)", d->dwp_why);
			else
				snprintf(d->trouble, sizeof d->trouble,
					 "split DWARF unit %.120s not found", dwo ? dwo : "(unnamed)");
			return u->state = CP_LINES_NO_DWO;
		}
		u->die = sub;
	} else {
		u->die = u->top;
	}
	u->dbg = dw.dwarf_cu_getdwarf(u->die.cu);
	if (!u->dbg)
		return u->state;
	Dwarf_Attribute a;
	u->comp_dir = dw.dwarf_attr(&u->top, DW_AT_comp_dir, &a) ? dw.dwarf_formstring(&a) : NULL;
	if (u->comp_dir && !u->comp_dir[0])
		u->comp_dir = NULL;
	if (dw.dwarf_getsrclines(&u->top, &u->lines, &u->nlines) != 0 ||
	    dw.dwarf_getsrcfiles(&u->die, &u->files, NULL) != 0 ||
	    unit_functions(u) != 0) {
		free(u->fns);
		u->fns = NULL;
		u->nfns = 0;
		snprintf(d->trouble, sizeof d->trouble, "malformed DWARF unit at offset %#llx",
			 (unsigned long long)dw.dwarf_dieoffset(&u->top));
		return u->state;
	}
	give_back(d);
	return u->state = 1;
}

/* ---- Where an answer holds ---------------------------------------------- */

/* Narrows s, addresses around addr, so that no end of [a, b) lies inside
 * it: then every address of s is in [a, b) if addr is, and none is if
 * addr is not.  A lookup that narrows its span by every range whose
 * containing addr it tested gives the same answer everywhere in it. */
static void span_clip(struct cp_lines_span *s, uint64_t addr, uint64_t a, uint64_t b)
{
	if (a <= addr) {
		if (a > s->lo)
			s->lo = a;
	} else if (a < s->hi) {
		s->hi = a;
	}
	if (b <= addr) {
		if (b > s->lo)
			s->lo = b;
	} else if (b < s->hi) {
		s->hi = b;
	}
}

/* An answer that holds at addr alone. */
static void span_point(struct cp_lines_span *s, uint64_t addr)
{
	s->lo = addr;
	s->hi = addr + 1; /* 0 at the top of the space: empty, kept nowhere */
}

/* Index of the range in r[0..n) (sorted) that contains addr, the innermost
 * (shortest) one if several do, or -1.  Ranges nest or follow each other;
 * the search looks back over at most 64 ranges that start below addr.
 * s narrowed to where the same is found: below the next range's start,
 * and inside or outside each range looked at, as addr is. */
static ptrdiff_t range_find(const struct range *r, size_t n, uint64_t addr, struct cp_lines_span *s)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && r[lo].lo < s->hi)
		s->hi = r[lo].lo;
	ptrdiff_t best = -1;
	for (size_t k = lo, seen = 0; k-- > 0 && seen < 64; seen++) {
		span_clip(s, addr, r[k].lo, r[k].hi);
		if (addr < r[k].hi &&
		    (best < 0 || r[k].hi - r[k].lo < r[best].hi - r[best].lo))
			best = (ptrdiff_t)k;
	}
	return best;
}

/* The line row of unit u that covers addr: the last row at or below addr,
 * unless it ends a sequence.  NULL if none.  s narrowed to the row's
 * addresses, up to the next row's (libdw sorts the rows by address, so
 * the search finds the same row at each of them); to addr alone if a row
 * could not be read. */
static Dwarf_Line *row_for(const struct unit *u, uint64_t addr, Dwarf_Addr *at, struct cp_lines_span *s)
{
	size_t lo = 0, hi = u->nlines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Addr a;
		Dwarf_Line *l = dw.dwarf_onesrcline(u->lines, mid);
		if (!l || dw.dwarf_lineaddr(l, &a) != 0) {
			span_point(s, addr);
			return NULL;
		}
		if (a <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	Dwarf_Addr next;
	if (lo < u->nlines) {
		Dwarf_Line *l = dw.dwarf_onesrcline(u->lines, lo);
		if (!l || dw.dwarf_lineaddr(l, &next) != 0) {
			span_point(s, addr);
			return NULL;
		}
		span_clip(s, addr, next, next);
	}
	if (lo == 0)
		return NULL;
	Dwarf_Line *l = dw.dwarf_onesrcline(u->lines, lo - 1);
	bool end;
	if (!l || dw.dwarf_lineendsequence(l, &end) != 0 || dw.dwarf_lineaddr(l, at) != 0) {
		span_point(s, addr);
		return NULL;
	}
	span_clip(s, addr, *at, *at);
	return end ? NULL : l;
}

static size_t hash_ptrs(const void *a, const void *b)
{
	uint64_t k = (uint64_t)(uintptr_t)a * 0x9e3779b97f4a7c15ull ^ (uintptr_t)b;
	return (size_t)((k * 0xff51afd7ed558ccdull) >> 17);
}

/* name as addr2line prints it: a relative name joined to its unit's
 * compilation directory (itself relative where the build mapped it so:
 * Debian's libc says "./misc"), so that pprof -list finds the file.  The result
 * lives until cp_lines_close (name itself when it is absolute, or out of
 * memory). */
static const char *full_path(struct cp_lines_dwarf *d, const struct unit *u, const char *name)
{
	if (!name || !name[0] || name[0] == '/' || !u->comp_dir)
		return name;
	if ((d->npaths + 1) * 2 > d->cappaths) {
		size_t cap = d->cappaths ? d->cappaths * 2 : 256;
		struct path *p = calloc(cap, sizeof *p);
		if (!p)
			return name;
		for (size_t i = 0; i < d->cappaths; i++) {
			if (!d->paths[i].full)
				continue;
			size_t j = hash_ptrs(d->paths[i].name, d->paths[i].dir) & (cap - 1);
			while (p[j].full)
				j = (j + 1) & (cap - 1);
			p[j] = d->paths[i];
		}
		free(d->paths);
		d->paths = p;
		d->cappaths = cap;
	}
	size_t j = hash_ptrs(name, u->comp_dir) & (d->cappaths - 1);
	for (; d->paths[j].full; j = (j + 1) & (d->cappaths - 1))
		if (d->paths[j].name == name && d->paths[j].dir == u->comp_dir)
			return d->paths[j].full;
	char *full = NULL;
	if (asprintf(&full, "%s/%s", u->comp_dir, name) < 0)
		return name;
	d->paths[j] = (struct path){ name, u->comp_dir, full };
	d->npaths++;
	return full;
}

static const char *attr_string(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute a;
	return dw.dwarf_attr_integrate(die, name, &a) ? dw.dwarf_formstring(&a) : NULL;
}

/* Fills f's function fields from die (following its abstract origin and
 * specification); f->file must be set already, for start_line.  Returns
 * -1 if the function has no name that can be read (a name cut off: a
 * truncated or corrupt string section). */
static int frame_function(struct cp_lines_dwarf *d, const struct unit *u, Dwarf_Die *die,
			  struct cp_lines_frame *f)
{
	f->name = attr_string(die, DW_AT_name);
	f->linkage = attr_string(die, DW_AT_linkage_name);
	if (!f->linkage)
		f->linkage = attr_string(die, DW_AT_MIPS_linkage_name);
	int line = 0;
	const char *decl = full_path(d, u, dw.dwarf_decl_file(die));
	f->start_line = 0;
	if (decl && f->file && !strcmp(decl, f->file) &&
	    dw.dwarf_decl_line(die, &line) == 0 && line > 0)
		f->start_line = (uint32_t)line;
	if (!f->name && !f->linkage)
		return -1;
	if (!f->name)
		f->name = "";
	return 0;
}

/* The call site of inlined subroutine die: its file and line into f.
 * Returns -1 if either is missing or unreadable: the caller's line is
 * then unknown, and a chain with a hole in it is not given. */
static int call_site(struct cp_lines_dwarf *d, const struct unit *u, Dwarf_Die *die,
		     struct cp_lines_frame *f)
{
	Dwarf_Attribute a;
	Dwarf_Word file = 0, line = 0;
	const char *s;
	if (!dw.dwarf_attr(die, DW_AT_call_file, &a) || dw.dwarf_formudata(&a, &file) != 0 ||
	    !(s = dw.dwarf_filesrc(u->files, file, NULL, NULL)) ||
	    !dw.dwarf_attr(die, DW_AT_call_line, &a) || dw.dwarf_formudata(&a, &line) != 0 ||
	    line > UINT32_MAX)
		return -1;
	f->file = full_path(d, u, s);
	f->line = (uint32_t)line;
	return 0;
}

/* Whether scope DIE c covers addr, as dwarf_haspc says; s narrowed so
 * that the same holds at each of its addresses. */
static int scope_has(Dwarf_Die *c, uint64_t addr, struct cp_lines_span *s)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dw.dwarf_ranges(c, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		span_clip(s, addr, lo, hi);
		if (addr >= lo && addr < hi)
			return 1;
	}
	return 0;
}

/* Scope DIEs that inlined subroutines can be found under, inside a
 * function. */
static int is_scope(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_with_stmt || tag == DW_TAG_common_block;
}

/* cp_lines_lookup, its span narrowed in *sp as it goes. */
static enum cp_lines_status lookup(struct cp_lines_dwarf *d, uint64_t addr, uint64_t sym_start,
				   struct cp_lines_frame *frames, size_t *n, struct cp_lines_span *sp)
{
	ptrdiff_t ui = range_find(d->ranges, d->nranges, addr, sp);
	if (ui < 0)
		return CP_LINES_NONE;
	struct unit *u = &d->units[d->ranges[ui].idx];
	int st = unit_load(d, u);
	if (st != 1)
		return (enum cp_lines_status)st;
	Dwarf_Addr row_at;
	Dwarf_Line *row = row_for(u, addr, &row_at, sp);
	if (!row)
		return CP_LINES_NONE;
	int lineno = 0;
	const char *file = full_path(d, u, dw.dwarf_linesrc(row, NULL, NULL));
	if (!file || dw.dwarf_lineno(row, &lineno) != 0 || lineno < 0)
		return CP_LINES_BAD;

	ptrdiff_t fi = range_find(u->fns, u->nfns, addr, sp);
	if (fi < 0) {
		/* Line information but no function (assembly): one frame that
		 * the caller names from the symbol table. */
		frames[0] = (struct cp_lines_frame){ NULL, NULL, file, (uint32_t)lineno, 0 };
		*n = 1;
		return CP_LINES_OK;
	}
	const struct range *fr = &u->fns[fi];
	/* The function must start where the symbol does, and the row that
	 * covers addr must begin inside it. */
	if ((sym_start && fr->lo != sym_start) || row_at < fr->lo)
		return CP_LINES_MISMATCH;
	sp->fn = fr->lo; /* the answer of a symbol that starts there */

	/* Walk down from the function through the scopes containing addr,
	 * noting the inlined subroutines, outermost first. */
	Dwarf_Die chain[CP_LINES_MAX_DEPTH * 4];
	size_t nchain = 0, visits = 0;
	Dwarf_Die cur;
	if (!dw.dwarf_offdie(u->dbg, (Dwarf_Off)fr->idx, &cur))
		return CP_LINES_BAD;
	chain[nchain++] = cur;
	Dwarf_Off last = dw.dwarf_dieoffset(&cur);
	for (int descended = 1; descended;) {
		descended = 0;
		Dwarf_Die c;
		int r = dw.dwarf_child(&cur, &c);
		while (r == 0) {
			Dwarf_Off off = dw.dwarf_dieoffset(&c);
			if (off <= last || ++visits > MAX_INLINE_VISITS)
				return CP_LINES_BAD;
			last = off;
			if (is_scope(dw.dwarf_tag(&c)) && scope_has(&c, addr, sp)) {
				if (dw.dwarf_tag(&c) == DW_TAG_inlined_subroutine) {
					if (nchain == sizeof chain / sizeof *chain)
						return CP_LINES_BAD;
					chain[nchain++] = c;
				}
				cur = c;
				descended = 1;
				break;
			}
			r = dw.dwarf_siblingof(&c, &c);
		}
		if (r < 0)
			return CP_LINES_BAD;
	}

	/* Innermost first: the innermost function at the row's line, each
	 * caller at the call site of the level inside it.  A chain deeper
	 * than CP_LINES_MAX_DEPTH keeps its innermost levels and its
	 * outermost function (at the call it makes into the next level
	 * kept: the line is still in its own code). */
	size_t keep = nchain < CP_LINES_MAX_DEPTH ? nchain : CP_LINES_MAX_DEPTH;
	for (size_t k = 0; k < keep; k++) {
		size_t level = k + 1 == keep ? 0 : nchain - 1 - k;
		struct cp_lines_frame *f = &frames[k];
		if (level == nchain - 1) {
			f->file = file;
			f->line = (uint32_t)lineno;
		} else if (call_site(d, u, &chain[level + 1], f) != 0) {
			return CP_LINES_BAD;
		}
		if (frame_function(d, u, &chain[level], f) != 0)
			return CP_LINES_BAD;
	}
	*n = keep;
	return CP_LINES_OK;
}

enum cp_lines_status cp_lines_lookup(struct cp_lines_dwarf *d, uint64_t addr,
				     uint64_t sym_start,
				     struct cp_lines_frame *frames, size_t *n,
				     struct cp_lines_span *span)
{
	struct cp_lines_span sp = { 0, UINT64_MAX, CP_LINES_ANY_FN };
	*n = 0;
	enum cp_lines_status st = lookup(d, addr, sym_start, frames, n, &sp);
	/* Malformed DWARF is told at its address alone; a symbol that does
	 * not match says nothing of another's. */
	if (st == CP_LINES_MISMATCH)
		sp.lo = sp.hi = addr;
	else if (st != CP_LINES_OK && st != CP_LINES_NONE)
		span_point(&sp, addr);
	if (span)
		*span = sp;
	return st;
}
