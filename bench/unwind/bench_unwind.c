/*
 * bench_unwind.c -- measures the unwinder (not a test): the time the
 * handler spends per sample on a 48-deep stack in each mode (the stack
 * walk alone, and the whole handler called as the itimer engine's signal
 * would call it), the memory of each loaded object's table against its
 * .eh_frame, the time to parse and encode libc's .eh_frame, and how the
 * table's block size trades memory for lookup time.  Links the static
 * library to reach its internals.  Prints markdown table rows; run.sh
 * assembles them.
 *
 * Usage: bench_unwind handler|memory|build|blocks
 */
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch.h"
#include "cpuprof.h"
#include "unwind/ehframe.h"
#include "sig/sigstate.h"
#include "unwind/tables.h"
#include "unwind/encode.h"

#define NOINLINE __attribute__((noinline, noipa))

/* CPU time of the calling thread: time stolen by other processes on a
 * shared machine is not counted. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- handler time on a 48-deep stack ---- */

static volatile uint64_t sink;
static const char *mode_name;
static int measure_handler_calls; /* 0: walk only, 1: whole handler */
static int no_cache;              /* measure with the rule cache off */

/* Times the walk (or the handler) from the context of its caller. */
NOINLINE static void measure(void)
{
	ucontext_t uc;
	getcontext(&uc);
	pthread_attr_t a;
	void *addr;
	size_t size;
	pthread_getattr_np(pthread_self(), &a);
	pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	uintptr_t lo = cp_uc_sp(&uc), hi = (uintptr_t)addr + size;
	int mode = !strcmp(mode_name, "fp") ? CP_UNWIND_FP : !strcmp(mode_name, "dwarf") ? CP_UNWIND_DWARF : CP_UNWIND_AUTO;
	uintptr_t pcs[128];
	int trunc, known;
	uint32_t fp_flags;
	unsigned n = 0;
	enum { REPS = 7, ITERS = 20480, BATCH = 1024 };
	double per[REPS];
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_code = SI_KERNEL;
	uint64_t lost0 = atomic_load(&cp_sig.lost);
	struct cp_ucache *cache = cp_sig.ucache;
	if (no_cache)
		cp_sig.ucache = NULL;

	struct cp_regs regs;
	CP_UC_REGS(&uc, &regs);
	struct cp_stackmem m = { .lo = lo, .hi = hi };
	/* The tables this stack needs are built when a walk first asks: ask,
	 * build, then time. */
	struct cp_unwinder u = { .set = atomic_load(&cp_sig.unwind), .cache = cp_sig.ucache, .want = cp_sig.unwind_want };
	if (mode != CP_UNWIND_FP) {
		cp_unwind_dwarf(&u, &regs, &m, mode == CP_UNWIND_AUTO, pcs, 128, &trunc, &known);
		cp_unwind_build_wanted();
		u.set = atomic_load(&cp_sig.unwind);
	}
	n = mode == CP_UNWIND_FP ? cp_unwind_fp(&regs, &m, pcs, 128, &fp_flags)
				 : cp_unwind_dwarf(&u, &regs, &m, mode == CP_UNWIND_AUTO, pcs, 128, &trunc, &known);
	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = now_ns(), spent = 0;
		for (int i = 0; i < ITERS; i++) {
			if (measure_handler_calls) {
				/* Half a ring wakes the drain thread: wait for it
				 * to empty the ring, outside the timed part. */
				if (i % BATCH == 0) {
					spent += now_ns() - t0;
					while (cp_ring_used(cp_sig.ring) > 0)
						nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
					t0 = now_ns();
				}
				cp_sig_handler(SIGPROF, &si, &uc);
			} else if (mode == CP_UNWIND_FP) {
				cp_unwind_fp(&regs, &m, pcs, 128, &fp_flags);
			} else {
				cp_unwind_dwarf(&u, &regs, &m, mode == CP_UNWIND_AUTO, pcs, 128, &trunc, &known);
			}
		}
		spent += now_ns() - t0;
		per[r] = (double)spent / ITERS;
	}
	cp_sig.ucache = cache;
	qsort(per, REPS, sizeof per[0], cmp_double);
	uint64_t lost = atomic_load(&cp_sig.lost) - lost0;
	printf("| %s | %s%s | %u | %.0f | %.0f | %.1f |%s\n", mode_name,
	       measure_handler_calls ? "whole handler (itimer engine, ring push)" : "stack walk only",
	       no_cache ? ", rule cache off" : "", n, per[0], per[REPS / 2], per[REPS / 2] / n,
	       lost ? " (some samples lost: ring full)" : "");
	sink = n;
}

/* 48 frames above measure(): f48 -> f47 -> ... -> f1 -> measure. */
#define F(i, next)                                                                                                     \
	NOINLINE static void f##i(int x)                                                                                \
	{                                                                                                              \
		next(x + 1);                                                                                           \
		sink += (uint64_t)x;                                                                                   \
	}
NOINLINE static void f0(int x)
{
	(void)x;
	measure();
	sink++;
}
F(1, f0) F(2, f1) F(3, f2) F(4, f3) F(5, f4) F(6, f5) F(7, f6) F(8, f7) F(9, f8) F(10, f9) F(11, f10) F(12, f11)
F(13, f12) F(14, f13) F(15, f14) F(16, f15) F(17, f16) F(18, f17) F(19, f18) F(20, f19) F(21, f20) F(22, f21)
F(23, f22) F(24, f23) F(25, f24) F(26, f25) F(27, f26) F(28, f27) F(29, f28) F(30, f29) F(31, f30) F(32, f31)
F(33, f32) F(34, f33) F(35, f34) F(36, f35) F(37, f36) F(38, f37) F(39, f38) F(40, f39) F(41, f40) F(42, f41)
F(43, f42) F(44, f43) F(45, f44) F(46, f45) F(47, f46)

static void bench_handler(void)
{
	static const char *const modes[] = { "fp", "auto", "dwarf" };
	for (int whole = 0; whole < 2; whole++)
		for (size_t m = 0; m < 3; m++) {
			struct cpuprof_options o = { .hz = 1, .engine = "itimer", .unwind = modes[m] };
			if (cpuprof_start("/dev/null", &o) < 0) {
				fprintf(stderr, "bench_unwind: cannot start the profiler\n");
				exit(1);
			}
			mode_name = modes[m];
			measure_handler_calls = whole;
			no_cache = 0;
			f47(0);
			if (m > 0) {
				no_cache = 1;
				f47(0);
			}
			cpuprof_stop();
		}
}

/* ---- table memory per object ---- */

static void print_object(const struct unwind_object *o, void *arg)
{
	(void)arg;
	const char *base = strrchr(o->name, '/');
	base = base ? base + 1 : o->name;
	if (!o->has_table) {
		printf("| %s | - | - | - | - | - | (%s) |\n", base, o->why);
		return;
	}
	printf("| %s | %zu | %zu | %zu | %zu | %.3f | %.2f ms |\n", base, o->fdes, o->rows, o->eh_frame_bytes,
	       o->table_bytes, (double)o->table_bytes / (double)o->eh_frame_bytes, o->build_ns / 1e6);
}

static void bench_memory(void)
{
	struct cpuprof_options o = { .hz = 1, .engine = "itimer" };
	if (cpuprof_start("/dev/null", &o) < 0)
		exit(1);
	/* Every object's table, not only those a walk asked for. */
	cp_unwind_want_mark(cp_sig.unwind_want, CP_UNWIND_WANT_ANY);
	cp_unwind_build_wanted();
	cp_unwind_each_object(print_object, NULL);
	cpuprof_stop();
}

/* ---- building libc's table ---- */

struct section {
	uint8_t *data;
	size_t size;
	uint64_t addr, count;
	struct ehf_range text[8];
	size_t ntext;
};

/* Reads the .eh_frame of an ELF file with its header's FDE count. */
static int read_eh_frame(const char *path, struct section *s)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	uint8_t *f = malloc((size_t)st.st_size);
	if (!f || read(fd, f, (size_t)st.st_size) != st.st_size)
		return -1;
	close(fd);
	const Elf64_Ehdr *eh = (const void *)f;
	const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
	const char *names = (const char *)f + sh[eh->e_shstrndx].sh_offset;
	const Elf64_Phdr *ph = (const void *)(f + eh->e_phoff);
	memset(s, 0, sizeof *s);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && s->ntext < 8) {
			s->text[s->ntext].lo = ph[i].p_vaddr;
			s->text[s->ntext++].hi = ph[i].p_vaddr + ph[i].p_memsz;
		}
	for (int i = 0; i < eh->e_shnum; i++) {
		const char *n = names + sh[i].sh_name;
		if (!strcmp(n, ".eh_frame")) {
			s->data = f + sh[i].sh_offset;
			s->size = sh[i].sh_size;
			s->addr = sh[i].sh_addr;
		} else if (!strcmp(n, ".eh_frame_hdr")) {
			uint64_t p;
			size_t c;
			char err[128];
			if (cp_ehframe_hdr_parse(f + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr, &p, &c, err, sizeof err) == 0)
				s->count = c;
		}
	}
	return s->data ? 0 : -1;
}

static const char *libc_path = "/lib/x86_64-linux-gnu/libc.so.6";

static void bench_build(void)
{
	struct section s;
	if (read_eh_frame(libc_path, &s) < 0) {
		printf("| (cannot read %s) | | | |\n", libc_path);
		return;
	}
	enum { REPS = 21 };
	double parse[REPS], build[REPS];
	size_t bytes = 0, rows = 0, fdes = 0;
	for (int r = 0; r < REPS; r++) {
		struct ehf_result res;
		char err[256];
		uint64_t t0 = now_ns();
		if (cp_ehframe_parse(s.data, s.size, s.addr, s.count, s.text, s.ntext, &res, err, sizeof err) < 0) {
			printf("| rejected: %s | | | |\n", err);
			return;
		}
		uint64_t t1 = now_ns();
		struct cp_utab *t = cp_unwind_build(&res, &bytes, err, sizeof err);
		uint64_t t2 = now_ns();
		parse[r] = (double)(t1 - t0) / 1e6;
		build[r] = (double)(t2 - t1) / 1e6;
		rows = res.nrows;
		fdes = res.nfdes;
		free(t);
		cp_ehframe_free(&res);
	}
	qsort(parse, REPS, sizeof parse[0], cmp_double);
	qsort(build, REPS, sizeof build[0], cmp_double);
	printf("| %s | %zu | %zu | %zu | %.2f / %.2f | %.2f / %.2f |\n", libc_path, s.size, fdes, rows, parse[0],
	       parse[REPS / 2], build[0], build[REPS / 2]);
}

/* ---- block size: memory against lookup time ---- */

static void bench_blocks(void)
{
	struct section s;
	struct ehf_result res;
	char err[256];
	if (read_eh_frame(libc_path, &s) < 0 ||
	    cp_ehframe_parse(s.data, s.size, s.addr, s.count, s.text, s.ntext, &res, err, sizeof err) < 0)
		return;
	/* Look up pcs spread over all FDEs, in a scrambled order. */
	enum { NPC = 4096, REPS = 7, ROUNDS = 50 };
	static uintptr_t pcs[NPC];
	unsigned seed = 1;
	for (int i = 0; i < NPC; i++) {
		seed = seed * 1103515245u + 12345u;
		const struct ehf_fde *f = &res.fdes[(seed >> 4) % res.nfdes];
		seed = seed * 1103515245u + 12345u;
		pcs[i] = (uintptr_t)(f->start + (seed >> 4) % (f->end - f->start));
	}
	static const unsigned sizes[] = { 1, 4, 8, 12, 16, 32 };
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t bytes;
		struct cp_utab *t = cp_unwind_build_blocks(&res, sizes[k], &bytes, err, sizeof err);
		double per[REPS];
		for (int r = 0; r < REPS; r++) {
			struct cp_urule x;
			uint64_t t0 = now_ns();
			for (int round = 0; round < ROUNDS; round++)
				for (int i = 0; i < NPC; i++)
					sink += (uint64_t)cp_utab_lookup(t, pcs[i], &x) + (uint64_t)x.cfa_off;
			per[r] = (double)(now_ns() - t0) / (ROUNDS * NPC);
		}
		qsort(per, REPS, sizeof per[0], cmp_double);
		printf("| %u%s | %zu | %.3f | %.1f | %.1f |\n", sizes[k], sizes[k] == UNWIND_BLOCK_FDES ? " (default)" : "",
		       bytes, (double)bytes / (double)res.used, per[0], per[REPS / 2]);
		free(t);
	}
	cp_ehframe_free(&res);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (!strcmp(what, "handler"))
		bench_handler();
	else if (!strcmp(what, "memory"))
		bench_memory();
	else if (!strcmp(what, "build"))
		bench_build();
	else if (!strcmp(what, "blocks"))
		bench_blocks();
	else {
		fprintf(stderr, "usage: bench_unwind handler|memory|build|blocks\n");
		return 2;
	}
	return 0;
}
