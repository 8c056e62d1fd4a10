/*
 * unit_unpack.c -- the decompressors of debug information (unpack.c) and
 * MiniDebugInfo (minidebug.c) on this very program and on bad input:
 * a copy of it whose DWARF objcopy compressed with zstd inflates to the
 * same sections, byte for byte; bit flips and truncations of the
 * compressed .debug_info never crash and either fail with a reason or
 * give a section of the size its header says; libzstd missing gives a
 * reason; an xz stream inflates whole, and a truncated, corrupt or too
 * large one fails with a reason; and a stripped copy with MiniDebugInfo
 * gets its static functions' names, where a corrupt .gnu_debugdata leaves
 * .dynsym's names and no error.  Needs objcopy (with zstd), strip and xz;
 * skips a part whose tool is missing.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "symbolize/symbols.h"
#include "symbolize/unpack.h"

static char tmpdir[64], exe[3000];

__attribute__((noinline)) static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc((size_t)n + 1);
	CHECK(p && fread(p, 1, (size_t)n, f) == (size_t)n, "read %s", path);
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void spill(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "write %s", path);
}

static ElfW(Shdr) *section(unsigned char *p, const char *name)
{
	ElfW(Ehdr) *eh = (ElfW(Ehdr) *)p;
	ElfW(Shdr) *sh = (ElfW(Shdr) *)(p + eh->e_shoff);
	const char *names = (const char *)p + sh[eh->e_shstrndx].sh_offset;
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, name))
			return &sh[i];
	return NULL;
}

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[8000];
	snprintf(cmd, sizeof cmd, fmt, a, b);
	return system(cmd);
}

/* The zstd copy's image has this program's sections, inflated. */
static int test_zstd(void)
{
	char z[200];
	snprintf(z, sizeof z, "%s/z", tmpdir);
	if (run("objcopy --compress-debug-sections=zstd '%s' '%s' 2>/dev/null", exe, z) != 0) {
		printf("zstd: skipped: objcopy cannot compress with zstd\n");
		return 0;
	}
	size_t olen, zlen;
	unsigned char *orig = slurp(exe, &olen), *zimg = slurp(z, &zlen);
	ElfW(Shdr) *zs = section(zimg, ".debug_info");
	CHECK(zs && (zs->sh_flags & SHF_COMPRESSED), "objcopy left .debug_info uncompressed");
	void *img;
	size_t size;
	char why[256] = "";
	/* libzstd missing: first, in a child (once loaded, it stays). */
	pid_t pid = fork();
	if (pid == 0) {
		cp_unpack_zstd_soname = "libzstd-not-here.so.1";
		int f2 = open(z, O_RDONLY);
		char w[256] = "";
		int r = cp_unpack_zstd_elf(f2, &img, &size, w, sizeof w);
		_exit(r == -ENOENT && strstr(w, "libzstd-not-here.so.1") ? 0 : 1);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "libzstd missing: no -ENOENT with the library named");
	printf("zstd: libzstd missing says so\n");
	int fd = open(z, O_RDONLY);
	int rc = cp_unpack_zstd_elf(fd, &img, &size, why, sizeof why);
	CHECK(rc == 1, "cp_unpack_zstd_elf: %d %s", rc, why);
	const char *names[] = { ".debug_info", ".debug_line", ".debug_abbrev", ".debug_str" };
	for (size_t i = 0; i < 4; i++) {
		ElfW(Shdr) *a = section(orig, names[i]), *b = section(img, names[i]);
		CHECK(a && b && !(b->sh_flags & SHF_COMPRESSED) && a->sh_size == b->sh_size &&
			      !memcmp(orig + a->sh_offset, (unsigned char *)img + b->sh_offset, a->sh_size),
		      "%s is not inflated to the original", names[i]);
	}
	free(img);
	close(fd);
	/* The uncompressed original: nothing to do. */
	fd = open(exe, O_RDONLY);
	CHECK(cp_unpack_zstd_elf(fd, &img, &size, why, sizeof why) == 0 && !img, "the original needs no inflating");
	close(fd);

	/* Bit flips and truncations of the compressed .debug_info. */
	unsigned seed = 12345;
	int failed = 0, kept = 0;
	uint64_t off = zs->sh_offset + sizeof(ElfW(Chdr)), len = zs->sh_size - sizeof(ElfW(Chdr));
	ElfW(Chdr) ch;
	memcpy(&ch, zimg + zs->sh_offset, sizeof ch);
	for (int round = 0; round < 200; round++) {
		unsigned char *m = malloc(zlen);
		memcpy(m, zimg, zlen);
		ElfW(Shdr) *ms = section(m, ".debug_info");
		if (round % 4 == 3) {
			/* Truncated: the section says it is shorter. */
			ms->sh_size = sizeof(ElfW(Chdr)) + rand_r(&seed) % len;
		} else {
			for (int k = 0; k < 1 + round % 8; k++)
				m[off + rand_r(&seed) % len] ^= (unsigned char)(1u << (rand_r(&seed) % 8));
		}
		char bad[220];
		snprintf(bad, sizeof bad, "%s/bad", tmpdir);
		spill(bad, m, zlen);
		fd = open(bad, O_RDONLY);
		why[0] = '\0';
		rc = cp_unpack_zstd_elf(fd, &img, &size, why, sizeof why);
		close(fd);
		if (rc < 0) {
			CHECK(why[0] && !img, "a failure without a reason");
			failed++;
		} else {
			CHECK(rc == 1 && img, "rc %d", rc);
			ElfW(Shdr) *b = section(img, ".debug_info");
			CHECK(b && b->sh_size == ch.ch_size, "inflated to another size than its header's");
			kept++;
			free(img);
		}
		free(m);
	}
	CHECK(failed > 0, "no corruption was caught");
	printf("zstd: sections inflate to the original's; 200 corruptions: %d refused with a reason, %d inflated "
	       "to the size the header says (zstd frames without a checksum), none crashed\n", failed, kept);

	free(orig);
	free(zimg);
	return 1;
}

static int test_xz(void)
{
	char raw[200], xz[220];
	snprintf(raw, sizeof raw, "%s/raw", tmpdir);
	snprintf(xz, sizeof xz, "%s/raw.xz", tmpdir);
	/* Larger than the first buffer tried (4 MiB): the output must grow. */
	size_t elen;
	unsigned char *e = slurp(exe, &elen);
	size_t olen = elen * (((size_t)5 << 20) / elen + 1);
	unsigned char *orig = malloc(olen);
	CHECK(orig, "malloc");
	for (size_t at = 0; at < olen; at += elen)
		memcpy(orig + at, e, elen);
	free(e);
	spill(raw, orig, olen);
	if (run("xz -f '%s' 2>/dev/null%s", raw, "") != 0) {
		printf("xz: skipped: xz is not installed\n");
		free(orig);
		return 0;
	}
	size_t xlen, n;
	unsigned char *x = slurp(xz, &xlen);
	CHECK(xlen < ((size_t)1 << 20), "the xz stream is not small (%zu): no growth tested", xlen);
	void *out;
	char why[256] = "";
	/* Small first buffers: the output grows to fit. */
	CHECK(cp_unpack_xz(x, xlen, CP_UNPACK_MAX, &out, &n, why, sizeof why) == 0, "%s", why);
	CHECK(n == olen && !memcmp(out, orig, n), "xz does not inflate to the original");
	free(out);
	CHECK(cp_unpack_xz(x, xlen, olen / 2, &out, &n, why, sizeof why) < 0 && strstr(why, "more than"),
	      "an output over the bound: %s", why);
	CHECK(cp_unpack_xz(x, xlen / 2, CP_UNPACK_MAX, &out, &n, why, sizeof why) < 0 && why[0] && !out,
	      "a truncated stream: %s", why);
	x[xlen / 3] ^= 0x55;
	CHECK(cp_unpack_xz(x, xlen, CP_UNPACK_MAX, &out, &n, why, sizeof why) < 0 && why[0] && !out,
	      "a corrupt stream: %s", why);
	CHECK(cp_unpack_xz(orig, 64, CP_UNPACK_MAX, &out, &n, why, sizeof why) < 0 && strstr(why, "not an xz"),
	      "not xz: %s", why);
	printf("xz: inflates whole; too large, truncated, corrupt and not xz refused with a reason\n");
	free(orig);
	free(x);
	return 1;
}

/* The table of path has a symbol named name. */
__attribute__((noinline)) static int has_name(const char *path, const char *name, size_t *n)
{
	struct cp_symtab t;
	char bid[2 * SYMBOLS_BUILD_ID_MAX + 1];
	CHECK(cp_symbols_read_file(path, &t, bid) == 0, "read %s", path);
	int found = 0;
	for (size_t i = 0; i < t.n; i++)
		found |= !strcmp(t.syms[i].name, name);
	*n = t.n;
	cp_symbols_symtab_free(&t);
	return found;
}

static int test_minidebug(void)
{
	char s[200], mini[220], cmd[8000];
	snprintf(s, sizeof s, "%s/stripped", tmpdir);
	snprintf(mini, sizeof mini, "%s/mini", tmpdir);
	/* Every function symbol kept (find-debuginfo keeps those .dynsym
	 * lacks: the same for the names looked for here). */
	snprintf(cmd, sizeof cmd,
		 "cd %s && objcopy --only-keep-debug '%s' full && "
		 "nm full --format=sysv --defined-only | awk -F '|' '$4 ~ \"FUNC\" { print $1 }' | sed 's/ *$//' >keep && "
		 "objcopy -S --remove-section .comment --keep-symbols=keep full mini && xz -f mini && "
		 "strip --strip-all -o stripped '%s' && cp stripped stripped_bad && "
		 "objcopy --add-section .gnu_debugdata=mini.xz stripped && "
		 "head -c 100 mini.xz >bad.xz && objcopy --add-section .gnu_debugdata=bad.xz stripped_bad",
		 tmpdir, exe, exe);
	if (system(cmd) != 0) {
		printf("minidebug: skipped: objcopy, nm, strip or xz missing\n");
		return 0;
	}
	size_t n_full, n_mini, n_bad;
	CHECK(has_name(exe, "slurp", &n_full), "the original has no slurp");
	CHECK(has_name(s, "slurp", &n_mini), "MiniDebugInfo did not name the static slurp");
	CHECK(n_mini * 10 >= n_full * 9, "MiniDebugInfo: %zu symbols of %zu", n_mini, n_full);
	snprintf(s, sizeof s, "%s/stripped_bad", tmpdir);
	CHECK(!has_name(s, "slurp", &n_bad), "a truncated .gnu_debugdata named a static function");
	CHECK(n_bad > 0 && n_bad < n_mini, "a truncated .gnu_debugdata lost .dynsym's names too: %zu", n_bad);
	printf("minidebug: %zu of the %zu function symbols named from .gnu_debugdata; a truncated one keeps "
	       ".dynsym's %zu\n", n_mini, n_full, n_bad);
	return 1;
}

static void cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0) {
		/* nothing more to do */
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0, "readlink");
	exe[n] = '\0';
	snprintf(tmpdir, sizeof tmpdir, "%s/unit_unpack.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(tmpdir), "mkdtemp");
	atexit(cleanup);
	if (system("command -v objcopy >/dev/null 2>&1") != 0)
		SKIP("objcopy is not installed (binutils)");
	int ran = test_zstd() + test_xz() + test_minidebug();
	if (!ran)
		SKIP("no part could run here");
	return 0;
}
