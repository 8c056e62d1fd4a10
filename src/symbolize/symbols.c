/*
 * symbols.c -- in-process symbolization (symbols.h).  dl_iterate_phdr gives
 * the loaded objects, their executable PT_LOAD segments and, from the
 * PT_NOTE segments in memory, their GNU build IDs; the function symbols are
 * then read (after the loader's lock is released) from each file with
 * pread, or from memory for the vDSO, checking every offset and size
 * against the file size so a truncated or hostile ELF yields no symbols
 * rather than a crash.  Never used in signal context.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "base/elf.h"
#include "base/loader.h"
#include "base/testhooks.h"
#include "debuglink.h"
#include "lines.h"
#include "minidebug.h"
#include "debuginfod.h"
#include "symbols.h"
#include "symtab_cache.h"

#define ST_TYPE(info) ((info) & 0xf)
#define ST_BIND(info) ((info) >> 4)

/* Like cp_elf_read into a new malloc'd buffer stored in *out. */
static int src_load(const struct cp_elf *src, uint64_t off, uint64_t len,
		    void **out)
{
	*out = NULL;
	if (off > src->size || len > src->size - off)
		return -ENOEXEC;
	if (len >= SIZE_MAX)
		return -ENOMEM;
	void *p = malloc(len ? (size_t)len : 1);
	if (!p)
		return -ENOMEM;
	int rc = cp_elf_read(src, off, p, len);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* The build ID from the PT_NOTE segments of an image, into out ("" if
 * none or unreadable). */
static void elf_build_id(const struct cp_elf *src, const ElfW(Ehdr) *eh,
			 char *out)
{
	out[0] = '\0';
	if (eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum == 0)
		return;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		ElfW(Phdr) ph;
		void *notes;
		if (cp_elf_read(src, eh->e_phoff + (uint64_t)i * sizeof ph, &ph,
			     sizeof ph) != 0)
			return;
		if (ph.p_type != PT_NOTE || ph.p_filesz > (1u << 16))
			continue;
		if (src_load(src, ph.p_offset, ph.p_filesz, &notes) != 0)
			continue;
		int found = cp_elf_notes_build_id(notes, ph.p_filesz,
					   ph.p_align == 8 ? 8 : 4, out);
		free(notes);
		if (found)
			return;
	}
}

/* A symbol while the table is built: name is an offset in the string
 * table; rank orders aliases at one address (higher is better); limit is
 * the end of its section. */
struct sym_tmp {
	uintptr_t start, size, limit;
	size_t name;
	unsigned rank;
};

static int sym_tmp_cmp(const void *a, const void *b)
{
	const struct sym_tmp *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* If sym is a named function symbol lying inside an executable section,
 * returns the length of its name (which is NUL-terminated inside str),
 * else 0. */
static size_t sym_eligible(const ElfW(Sym) *sym, const ElfW(Shdr) *sh,
			   size_t shnum, const char *str, size_t strsize)
{
	unsigned type = ST_TYPE(sym->st_info);
	if (!(type == STT_FUNC || type == STT_GNU_IFUNC ||
	      (type == STT_NOTYPE && sym->st_size > 0)))
		return 0;
	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= shnum)
		return 0;
	const ElfW(Shdr) *sec = &sh[sym->st_shndx];
	if (!(sec->sh_flags & SHF_EXECINSTR) ||
	    sym->st_value - sec->sh_addr >= sec->sh_size)
		return 0;
	if (sym->st_name == 0 || sym->st_name >= strsize)
		return 0;
	const char *end = memchr(str + sym->st_name, '\0',
				 strsize - sym->st_name);
	return end ? (size_t)(end - (str + sym->st_name)) : 0;
}

/* Builds out from the nsym raw symbols sy whose names are in str. */
static int symtab_build(struct cp_symtab *out, const ElfW(Sym) *sy,
			size_t nsym, const ElfW(Shdr) *sh, size_t shnum,
			const char *str, size_t strsize)
{
	size_t count = 0;
	for (size_t i = 1; i < nsym; i++)
		if (sym_eligible(&sy[i], sh, shnum, str, strsize))
			count++;
	if (count == 0)
		return 0;
	struct sym_tmp *tmp = malloc(count * sizeof *tmp);
	if (!tmp)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 1; i < nsym; i++) {
		if (!sym_eligible(&sy[i], sh, shnum, str, strsize))
			continue;
		unsigned bind = ST_BIND(sy[i].st_info);
		const ElfW(Shdr) *sec = &sh[sy[i].st_shndx];
		tmp[k].start = sy[i].st_value;
		tmp[k].size = sy[i].st_size;
		tmp[k].limit = sec->sh_addr + sec->sh_size;
		if (tmp[k].limit < tmp[k].start) /* wrapped: a corrupt table */
			tmp[k].limit = UINTPTR_MAX;
		tmp[k].name = sy[i].st_name;
		tmp[k].rank = (sy[i].st_size > 0) << 3 |
			      (bind == STB_GLOBAL ? 2 : bind == STB_WEAK) << 1 |
			      (str[sy[i].st_name] != '_');
		k++;
	}
	qsort(tmp, count, sizeof *tmp, sym_tmp_cmp);

	/* Keep the best-ranked symbol of each address. */
	size_t n = 0, bytes = 0;
	for (size_t i = 0; i < count; i++) {
		if (n > 0 && tmp[n - 1].start == tmp[i].start)
			continue;
		tmp[n++] = tmp[i];
		bytes += strlen(str + tmp[i].name) + 1;
	}
	out->syms = malloc(n * sizeof *out->syms);
	out->names = malloc(bytes);
	if (!out->syms || !out->names) {
		free(tmp);
		cp_symbols_symtab_free(out);
		return -ENOMEM;
	}
	char *p = out->names;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(str + tmp[i].name) + 1;
		memcpy(p, str + tmp[i].name, len);
		/* A symbol without a size (an assembler label) extends to the
		 * next symbol or the end of its section, whichever is first. */
		uintptr_t size = tmp[i].size;
		if (size == 0) {
			uintptr_t end = tmp[i].limit;
			if (i + 1 < n && tmp[i + 1].start < end)
				end = tmp[i + 1].start;
			size = end - tmp[i].start;
		}
		out->syms[i].start = tmp[i].start;
		out->syms[i].size = size;
		out->syms[i].name = p;
		p += len;
	}
	out->n = n;
	free(tmp);
	return 0;
}

/* Reads the symbols (and build ID) of the image src; see
 * cp_symbols_read_file. */
static int elf_read(const struct cp_elf *src, struct cp_symtab *out,
		    char *build_id)
{
	ElfW(Ehdr) eh;
	ElfW(Shdr) *sh = NULL;
	ElfW(Sym) *sy = NULL;
	char *str = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (build_id)
		build_id[0] = '\0';
	if ((rc = cp_elf_read(src, 0, &eh, sizeof eh)) != 0)
		return rc;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELF_CLASS_NATIVE ||
	    eh.e_ident[EI_DATA] != ELF_DATA_NATIVE)
		return -ENOEXEC;
	if (build_id)
		elf_build_id(src, &eh, build_id);
	if (eh.e_shnum == 0)
		return 0; /* no section headers: no symbols */
	if (eh.e_shentsize != sizeof *sh)
		return -ENOEXEC;
	size_t shnum = eh.e_shnum;
	if ((rc = src_load(src, eh.e_shoff, shnum * sizeof *sh,
			   (void **)&sh)) != 0)
		return rc;

	/* .symtab if present, else .dynsym. */
	const ElfW(Shdr) *ss = NULL;
	for (size_t i = 0; i < shnum && !ss; i++)
		if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_size > 0)
			ss = &sh[i];
	for (size_t i = 0; i < shnum && !ss; i++)
		if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_size > 0)
			ss = &sh[i];
	if (!ss)
		goto done; /* stripped of both: no symbols */
	if (ss->sh_entsize != sizeof *sy || ss->sh_link >= shnum ||
	    sh[ss->sh_link].sh_type != SHT_STRTAB) {
		rc = -ENOEXEC;
		goto done;
	}
	const ElfW(Shdr) *st = &sh[ss->sh_link];
	size_t nsym = ss->sh_size / sizeof *sy;
	if ((rc = src_load(src, ss->sh_offset, nsym * sizeof *sy,
			   (void **)&sy)) != 0 ||
	    (rc = src_load(src, st->sh_offset, st->sh_size,
			   (void **)&str)) != 0)
		goto done;
	rc = symtab_build(out, sy, nsym, sh, shnum, str, st->sh_size);
done:
	/* Stripped of .symtab: the function names its MiniDebugInfo keeps,
	 * if it has one (minidebug.h); without them, .dynsym's alone. */
	if (rc == 0 && (!ss || ss->sh_type != SHT_SYMTAB))
		cp_minidebug_add(src, &eh, sh, out);
	free(sh);
	free(sy);
	free(str);
	return rc;
}

int cp_symbols_read_file(const char *path, struct cp_symtab *out,
		      char *build_id)
{
	struct stat st;
	memset(out, 0, sizeof *out);
	if (build_id)
		build_id[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = -ENOEXEC;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		struct cp_elf src = { .fd = fd, .size = (uint64_t)st.st_size };
		rc = elf_read(&src, out, build_id);
	}
	close(fd);
	return rc;
}

int cp_symbols_read_image(const void *image, size_t size, struct cp_symtab *out,
		       char *build_id)
{
	struct cp_elf src = { .fd = -1, .mem = image, .size = size };
	return elf_read(&src, out, build_id);
}

void cp_symbols_symtab_free(struct cp_symtab *t)
{
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof *t);
}

/* How many of the n elements at base (each `size` bytes, sorted by the
 * address at offset `off` in it) have theirs at or below addr. */
static size_t at_or_below(const void *base, size_t n, size_t size, size_t off, uintptr_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uintptr_t v;
		memcpy(&v, (const char *)base + mid * size + off, sizeof v);
		if (v <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct cp_sym *cp_symbols_symtab_lookup(const struct cp_symtab *t,
					   uintptr_t addr)
{
	size_t lo = at_or_below(t->syms, t->n, sizeof *t->syms, offsetof(struct cp_sym, start), addr);
	if (lo == 0)
		return NULL;
	/* The nearest symbol below addr, or (if addr is past its end) one a
	 * little further back that a nested symbol interrupts. */
	size_t i = lo - 1;
	for (size_t k = i + 1; k-- > 0 && i - k < 8;) {
		const struct cp_sym *sym = &t->syms[k];
		if (addr - sym->start < sym->size)
			return sym;
	}
	return NULL;
}

/* Snapshot under construction (dl_iterate_phdr callback state). */
struct load_ctx {
	struct cp_symbols *s;
	size_t capobjs, capsegs, capowner;
	size_t *segowner; /* object index of each segment */
	uintptr_t vdso_start, vdso_end;
	size_t exe, vdso; /* object indexes, SIZE_MAX if not seen */
	uintptr_t pagesize;
	int err;
};

/* The path of the running executable as a malloc'd string. */
static char *exe_path(void)
{
	for (size_t cap = 256; cap <= (1u << 16); cap *= 2) {
		char *buf = malloc(cap);
		if (!buf)
			return NULL;
		ssize_t n = readlink("/proc/self/exe", buf, cap);
		if (n < 0) {
			free(buf);
			break;
		}
		if ((size_t)n < cap) {
			buf[n] = '\0';
			return buf;
		}
		free(buf);
	}
	return strdup("/proc/self/exe");
}

/* Finds the vDSO.  */
static void find_vdso(struct load_ctx *c)
{
	uintptr_t lo, hi;
	if (cp_elf_vdso(&lo, &hi)) {
		c->vdso_start = lo;
		c->vdso_end = hi;
	}
}


/* dl_iterate_phdr callback: records one object and its executable
 * segments.  Reads nothing from disk (the loader's lock is held). */
static int load_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct load_ctx *c = arg;
	struct cp_symbols *s = c->s;
	size_t nx = 0;
	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD &&
		    (info->dlpi_phdr[i].p_flags & PF_X) &&
		    info->dlpi_phdr[i].p_memsz > 0)
			nx++;
	if (nx == 0)
		return 0;

	uintptr_t ph = (uintptr_t)info->dlpi_phdr;
	int vdso = c->vdso_end && ph >= c->vdso_start && ph < c->vdso_end;
	int exe = !vdso && (!info->dlpi_name || !info->dlpi_name[0]);
	char *path = vdso ? strdup("[vdso]") :
		     exe  ? exe_path() : strdup(info->dlpi_name);
	if (!path)
		goto nomem;
	if (cp_array_grow((void **)&s->objs, &c->capobjs, s->nobjs + 1,
		 sizeof *s->objs, 16) ||
	    cp_array_grow((void **)&s->segs, &c->capsegs, s->nsegs + nx,
		 sizeof *s->segs, 16) ||
	    cp_array_grow((void **)&c->segowner, &c->capowner, s->nsegs + nx,
		 sizeof *c->segowner, 16)) {
		free(path);
		goto nomem;
	}

	size_t idx = s->nobjs++;
	struct cp_object *o = &s->objs[idx];
	memset(o, 0, sizeof *o);
	o->path = path;
	o->bias = info->dlpi_addr;
	if (vdso && c->vdso == SIZE_MAX)
		c->vdso = idx;
	if (exe && c->exe == SIZE_MAX)
		c->exe = idx;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type == PT_NOTE && !o->build_id[0])
			cp_elf_notes_build_id((const uint8_t *)(info->dlpi_addr +
							 p->p_vaddr),
				       p->p_filesz, p->p_align == 8 ? 8 : 4,
				       o->build_id);
		if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) ||
		    p->p_memsz == 0)
			continue;
		struct cp_segment *g = &s->segs[s->nsegs];
		g->start = info->dlpi_addr + p->p_vaddr;
		g->limit = g->start + p->p_memsz;
		g->file_offset = p->p_offset; /* as loaded: see kernel_tables.c's image_object */
		g->obj = NULL;
		c->segowner[s->nsegs++] = idx;
	}
	return 0;
nomem:
	c->err = ENOMEM;
	return 1;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct cp_segment *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* cp_symbols_read_file through the symbol table cache (symtab_cache.h):
 * the table of the object whose build ID is want ("" if none), from the
 * file at path; kept when read from a file with that build ID. */
static int read_file_kept(const char *path, const char *want, struct cp_symtab *t, char *bid)
{
	if (want[0] && cp_symtab_cache_load(want, path, t) == 0) {
		snprintf(bid, 2 * SYMBOLS_BUILD_ID_MAX + 1, "%s", want);
		return 0;
	}
	int rc = cp_symbols_read_file(path, t, bid);
	if (rc == 0 && want[0] && !strcmp(bid, want))
		cp_symtab_cache_save(want, path, t);
	return rc;
}

/* Reads o's symbols from its separate debug file, found by build ID where
 * distributions install them (Debian's *-dbg and -dbgsym packages): it has
 * the full .symtab that the shipped object was stripped of.  0 if found
 * with a matching build ID and at least one symbol. */
static int read_debug_file(const struct cp_object *o, struct cp_symtab *t)
{
	char path[PATH_MAX];
	char bid[sizeof o->build_id];
	if (!cp_debug_build_id_path(cp_debug_root(), o->build_id, path, sizeof path))
		return -ENOENT;
	/* There, else one that cpuprof record fetched from a debuginfod
	 * server. */
	const char *fetched = cp_debuginfod_path(o->build_id);
	int rc = -ENOENT;
	for (int k = 0; k < 2 && rc != 0; k++) {
		if (k == 1 && !fetched)
			break;
		rc = read_file_kept(k ? fetched : path, o->build_id, t, bid);
		if (rc == 0 && (strcmp(bid, o->build_id) != 0 || t->n == 0)) {
			cp_symbols_symtab_free(t);
			rc = -ENOENT;
		}
	}
	return rc;
}

/* Reads o's symbols from the debug file its .gnu_debuglink names
 * (debuglink.h), which must have o's build ID: a stripped object's full
 * .symtab, as for one found by build ID.  0 if found with symbols. */
static int read_debuglink_file(const struct cp_object *o, struct cp_symtab *t)
{
	char path[PATH_MAX];
	char bid[sizeof o->build_id];
	const char *root = cp_debug_root();
	/* The link is read where the object is (a container's file through
	 * its root), its candidates beside that file. */
	const char *file = o->file ? o->file : o->path;
	char link[256];
	if (!o->build_id[0] || !cp_debuglink_name(file, link))
		return -ENOENT;
	for (int k = 0; cp_debuglink_path(file, link, root, k, path, sizeof path); k++) {
		if (!path[0] || !strcmp(path, file) || access(path, R_OK) != 0)
			continue;
		if (read_file_kept(path, o->build_id, t, bid) == 0 && !strcmp(bid, o->build_id) && t->n > 0)
			return 0;
		cp_symbols_symtab_free(t);
	}
	return -ENOENT;
}

/* Reads o's symbols into t: the vDSO's from its image in memory (none if
 * there is none), the others from their separate debug file or their own
 * (the running program's through /proc/self/exe).  A file whose build ID
 * is not the loaded one (replaced on disk since) gives none: better than
 * wrong names. */
static void read_symtab(const struct cp_object *o, struct cp_symtab *t)
{
	char bid[sizeof o->build_id];
	int rc;
	memset(t, 0, sizeof *t);
	if (!strcmp(o->path, "[vdso]")) {
		if (!o->image_lo)
			return;
		rc = cp_symbols_read_image((const void *)o->image_lo, o->image_hi - o->image_lo, t, bid);
	} else if (read_debug_file(o, t) == 0 || read_debuglink_file(o, t) == 0) {
		return;
	} else {
		rc = read_file_kept(o->self_exe ? "/proc/self/exe" : o->file ? o->file : o->path, o->build_id, t, bid);
	}
	if (rc == 0 && o->build_id[0] && bid[0] && strcmp(o->build_id, bid) != 0)
		cp_symbols_symtab_free(t);
}

/* The shared symbols of files (cp_symbols_share_files), by path and build
 * ID: never freed. */
static struct shared {
	struct shared *next;
	char *path;
	char build_id[2 * SYMBOLS_BUILD_ID_MAX + 1];
	struct cp_symtab tab;
} *shared;
static int sharing;

void cp_symbols_share_files(void)
{
	sharing = 1;
}

static struct cp_symtab empty_symtab;

const struct cp_symtab *cp_symbols_object_symtab(const struct cp_symbols *s, const struct cp_object *obj)
{
	(void)s;
	struct cp_object *o = (struct cp_object *)obj; /* read once, then kept */
	if (o->symtab_read)
		return o->symtab ? o->symtab : &empty_symtab;
	o->symtab_read = 1;
	int share = sharing && !o->self_exe && strcmp(o->path, "[vdso]") != 0;
	if (share)
		for (struct shared *e = shared; e; e = e->next)
			if (!strcmp(e->path, o->path) && !strcmp(e->build_id, o->build_id)) {
				o->symtab = &e->tab;
				o->symtab_shared = 1;
				return o->symtab;
			}
	struct shared *e = share ? calloc(1, sizeof *e) : NULL;
	struct cp_symtab *t = e ? &e->tab : calloc(1, sizeof *t);
	if (!t || (e && !(e->path = strdup(o->path)))) {
		free(e);
		return &empty_symtab;
	}
	read_symtab(o, t);
	if (e) {
		snprintf(e->build_id, sizeof e->build_id, "%s", o->build_id);
		e->next = shared;
		shared = e;
		o->symtab_shared = 1;
	}
	o->symtab = t;
	return t;
}

static struct cp_symbols *enumerate(void)
{
	struct cp_symbols *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	struct load_ctx c = { .s = s, .exe = SIZE_MAX, .vdso = SIZE_MAX };
	long pg = sysconf(_SC_PAGESIZE);
	c.pagesize = pg > 0 ? (uintptr_t)pg : 4096;
	find_vdso(&c);
	cp_loader_walk(load_one, &c);
	if (c.err) {
		free(c.segowner);
		cp_symbols_free(s);
		return NULL;
	}
	for (size_t i = 0; i < s->nsegs; i++)
		s->segs[i].obj = &s->objs[c.segowner[i]];
	qsort(s->segs, s->nsegs, sizeof *s->segs, seg_cmp);
	free(c.segowner);
	s->exe_index = c.exe;
	s->vdso_index = c.vdso;
	s->vdso_start = c.vdso_start;
	s->vdso_end = c.vdso_end;
	if (c.exe != SIZE_MAX)
		s->objs[c.exe].self_exe = 1;
	if (c.vdso != SIZE_MAX) {
		s->objs[c.vdso].image_lo = c.vdso_start;
		s->objs[c.vdso].image_hi = c.vdso_end;
	}
	return s;
}

struct cp_symbols *cp_symbols_load(void)
{
	return enumerate();
}

struct cp_symbols *cp_symbols_from_objects(const struct cp_object_desc *objs, size_t n, const char *exe)
{
	struct cp_symbols *s = calloc(1, sizeof *s);
	size_t nsegs = 0;
	for (size_t i = 0; i < n; i++)
		nsegs += objs[i].nsegs;
	if (!s || !(s->objs = calloc(n ? n : 1, sizeof *s->objs)) || !(s->segs = calloc(nsegs ? nsegs : 1, sizeof *s->segs))) {
		cp_symbols_free(s);
		return NULL;
	}
	s->exe_index = s->vdso_index = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		struct cp_object *o = &s->objs[s->nobjs];
		if (!(o->path = strdup(objs[i].path)) || (objs[i].file && !(o->file = strdup(objs[i].file)))) {
			cp_symbols_free(s);
			return NULL;
		}
		snprintf(o->build_id, sizeof o->build_id, "%s", objs[i].build_id);
		o->bias = objs[i].bias;
		if (objs[i].symtab) {
			o->symtab = (struct cp_symtab *)objs[i].symtab; /* never freed here: symtab_shared */
			o->symtab_read = o->symtab_shared = 1;
		}
		if (!strcmp(o->path, "[vdso]"))
			s->vdso_index = s->nobjs;
		else if (exe && !strcmp(o->path, exe) && s->exe_index == SIZE_MAX)
			s->exe_index = s->nobjs;
		s->nobjs++;
	}
	/* Segments point into s->objs, which no longer moves. */
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < objs[i].nsegs; k++)
			s->segs[s->nsegs++] = (struct cp_segment){ objs[i].segs[k].start, objs[i].segs[k].limit,
								   objs[i].segs[k].file_offset, &s->objs[i] };
	qsort(s->segs, s->nsegs, sizeof *s->segs, seg_cmp);
	/* The vDSO is not a file: ours is the same image if the kernel is
	 * (its build ID says so). */
	if (s->vdso_index != SIZE_MAX) {
		struct cp_symbols *own = enumerate();
		if (own && own->vdso_index != SIZE_MAX &&
		    !strcmp(own->objs[own->vdso_index].build_id, s->objs[s->vdso_index].build_id)) {
			s->objs[s->vdso_index].image_lo = own->vdso_start;
			s->objs[s->vdso_index].image_hi = own->vdso_end;
		}
		cp_symbols_free(own);
	}
	return s;
}

void cp_symbols_free(struct cp_symbols *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobjs; i++) {
		free(s->objs[i].path);
		free(s->objs[i].file);
		if (s->objs[i].symtab && !s->objs[i].symtab_shared) {
			cp_symbols_symtab_free(s->objs[i].symtab);
			free(s->objs[i].symtab);
		}
	}
	free(s->objs);
	free(s->segs);
	free(s);
}

const struct cp_segment *cp_symbols_segment_for(const struct cp_symbols *s,
					     uintptr_t pc)
{
	size_t lo = at_or_below(s->segs, s->nsegs, sizeof *s->segs, offsetof(struct cp_segment, start), pc);
	if (lo == 0 || pc >= s->segs[lo - 1].limit)
		return NULL;
	return &s->segs[lo - 1];
}

const char *cp_symbols_name_for(const struct cp_symbols *s, uintptr_t pc,
			     uintptr_t *sym_start)
{
	const struct cp_segment *g = cp_symbols_segment_for(s, pc);
	if (!g)
		return NULL;
	const struct cp_object *o = g->obj;
	const struct cp_sym *sym = cp_symbols_symtab_lookup(cp_symbols_object_symtab(s, o),
							 pc - o->bias);
	if (!sym)
		return NULL;
	if (sym_start)
		*sym_start = sym->start + o->bias;
	return sym->name;
}

int cp_symbols_code_outside_function(const struct cp_symbols *s, uintptr_t pc,
				  uintptr_t addr)
{
	uintptr_t fn, other;
	if (!cp_symbols_name_for(s, pc, &fn) || !cp_symbols_segment_for(s, addr))
		return 0;
	return !cp_symbols_name_for(s, addr, &other) || other != fn;
}
