/*
 * work_jit.c -- a JIT in miniature, for t_jit.sh: it writes a small hot
 * loop's machine code into anonymous memory (mapped writable, then made
 * executable), tells perf its name as JITs do, and runs it for a while.
 *
 *   work_jit map|dump|both|none|noname|baddump MS
 *
 * map: /tmp/perf-PID.map names the code twice, "jit_stale" first and
 * "jit_hot_loop" on a later line for the same range (the later wins), and
 * names a range no code is in.  dump: ./jit-PID.dump (perf's jitdump)
 * has a load of the code named "jit_hot_dump", after a debug info record
 * whose lines are jit_fixture.js:10 at its first byte and :11 from the
 * loop on; the file is mapped executable, as perf asks of a JIT.  both:
 * both files (the dump is read after the map: "jit_hot_dump" wins).
 * none: neither.  noname: the map names the code's range with no name.
 * baddump: the dump, its magic of the other byte order
 * (a reader must say it could not read it).  The loop keeps a frame pointer, so that stacks through
 * it reach main.  Prints "pid PID" when the code is in place, and
 * "jit_cpu_ns N" (its CPU in the loop, by the thread's clock) at the end.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
/* push rbp; mov rbp, rsp; mov rax, rdi; 1: dec rax; jnz 1b; pop rbp; ret */
static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48, 0xff,
				0xc8, 0x75, 0xfb, 0x5d, 0xc3 };
#define CODE_SIZE sizeof code
enum { LOOP_AT = 7, ELF_MACH = 62 };
#elif defined(__aarch64__)
/* stp x29, x30, [sp, -16]!; mov x29, sp; 1: subs x0, x0, 1; b.ne 1b;
 * ldp x29, x30, [sp], 16; ret */
static const uint32_t code_words[] = { 0xa9bf7bfd, 0x910003fd, 0xf1000400, 0x54ffffe1, 0xa8c17bfd, 0xd65f03c0 };
#define code ((const uint8_t *)code_words)
#define CODE_SIZE sizeof code_words
enum { LOOP_AT = 8, ELF_MACH = 183 };
#else
#error "work_jit: no code for this CPU"
#endif

static uint64_t ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void put(FILE *f, const void *p, size_t n)
{
	if (fwrite(p, 1, n, f) != n) {
		perror("work_jit: write");
		exit(1);
	}
}

/* A jitdump record's header: id, total size, timestamp. */
static void record(FILE *f, uint32_t id, uint32_t size)
{
	uint32_t h[2] = { id, size };
	uint64_t t = ns(CLOCK_MONOTONIC);
	put(f, h, sizeof h);
	put(f, &t, 8);
}

/* The jitdump of the code at `at`, mapped executable as perf asks. */
static void write_dump(const uint8_t *at, int bad)
{
	char path[64];
	snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
	FILE *f = fopen(path, "w+");
	if (!f) {
		perror(path);
		exit(1);
	}
	uint32_t hdr[6] = { bad ? 0x4454694A : 0x4A695444, 1, 40, ELF_MACH, 0, (uint32_t)getpid() };
	uint64_t t = ns(CLOCK_MONOTONIC), flags = 0;
	put(f, hdr, sizeof hdr);
	put(f, &t, 8);
	put(f, &flags, 8);
	/* JIT_CODE_DEBUG_INFO: code_addr, nr_entry, then entries of address,
	 * line, discriminator and file name. */
	static const char file[] = "jit_fixture.js";
	uint64_t addr = (uint64_t)(uintptr_t)at, nr = 2;
	record(f, 2, (uint32_t)(16 + 16 + 2 * (16 + sizeof file)));
	put(f, &addr, 8);
	put(f, &nr, 8);
	for (int i = 0; i < 2; i++) {
		uint64_t a = addr + (i ? LOOP_AT : 0);
		int32_t line[2] = { 10 + i, 0 };
		put(f, &a, 8);
		put(f, line, 8);
		put(f, file, sizeof file);
	}
	/* JIT_CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index,
	 * name, code. */
	static const char name[] = "jit_hot_dump";
	uint32_t ids[2] = { (uint32_t)getpid(), (uint32_t)getpid() };
	uint64_t size = CODE_SIZE, index = 1;
	record(f, 0, (uint32_t)(16 + 40 + sizeof name + CODE_SIZE));
	put(f, ids, sizeof ids);
	put(f, &addr, 8);
	put(f, &addr, 8);
	put(f, &size, 8);
	put(f, &index, 8);
	put(f, name, sizeof name);
	put(f, at, CODE_SIZE);
	fflush(f);
	/* The mark perf looks for: the dump mapped executable. */
	if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) == MAP_FAILED) {
		perror("work_jit: mmap the dump");
		exit(1);
	}
}

static void write_map(const uint8_t *at, int named)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	uintptr_t a = (uintptr_t)at;
	if (!named) {
		fprintf(f, "%lx %zx \n", (unsigned long)a, (size_t)CODE_SIZE);
		fclose(f);
		return;
	}
	fprintf(f, "%lx %zx jit_stale\n", (unsigned long)a, (size_t)CODE_SIZE);
	fprintf(f, "%lx 40 jit_elsewhere\n", (unsigned long)(a + 0x1000));
	fprintf(f, "%lx %zx jit_hot_loop\n", (unsigned long)a, (size_t)CODE_SIZE);
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: work_jit map|dump|both|none|noname|baddump MS\n");
		return 2;
	}
	const char *mode = argv[1];
	uint64_t ms = strtoull(argv[2], NULL, 10);
	uint8_t *at = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (at == MAP_FAILED) {
		perror("work_jit: mmap");
		return 1;
	}
	memcpy(at, code, CODE_SIZE);
	__builtin___clear_cache((char *)at, (char *)at + CODE_SIZE);
	if (mprotect(at, 8192, PROT_READ | PROT_EXEC) != 0) {
		perror("work_jit: mprotect");
		return 1;
	}
	if (!strcmp(mode, "map") || !strcmp(mode, "both") || !strcmp(mode, "noname"))
		write_map(at, strcmp(mode, "noname") != 0);
	if (!strcmp(mode, "dump") || !strcmp(mode, "both") || !strcmp(mode, "baddump"))
		write_dump(at, !strcmp(mode, "baddump"));
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	void (*spin)(uint64_t) = (void (*)(uint64_t))(uintptr_t)at;
	uint64_t end = ns(CLOCK_MONOTONIC) + ms * 1000000u, cpu = 0;
	while (ns(CLOCK_MONOTONIC) < end) {
		uint64_t t0 = ns(CLOCK_THREAD_CPUTIME_ID);
		spin(2000000);
		cpu += ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	}
	printf("jit_cpu_ns %llu\n", (unsigned long long)cpu);
	return 0;
}
