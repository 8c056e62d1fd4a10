/*
 * fuzz_ehframe.c -- a by-hand fuzzer of the .eh_frame parser and the table
 * encoder/decoder (not run in CI): mutated copies of real objects'
 * .eh_frame -- cut at random points, bits flipped, bytes set to 0x00,
 * 0xff, 0x7f or 0x80, runs of bytes copied over others -- are parsed; what
 * is accepted is encoded and looked up at pcs all over its range.  Build
 * it with -fsanitize=address,undefined (fuzz.sh does) so that any read
 * outside a buffer stops it.  Prints how many copies were rejected and
 * accepted.
 *
 * Usage: fuzz_ehframe ITERATIONS SEED FILE...
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/ehframe.h"
#include "unwind/encode.h"

struct input {
	const char *path;
	uint8_t *data; /* the .eh_frame */
	size_t size;
	uint64_t addr;
	size_t count;
	struct ehf_range text[8];
	size_t ntext;
};

/* Loads FILE's .eh_frame and what the parser needs besides. */
static int load(const char *path, struct input *in)
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
	const Elf64_Phdr *ph = (const void *)(f + eh->e_phoff);
	const char *names = (const char *)f + sh[eh->e_shstrndx].sh_offset;
	memset(in, 0, sizeof *in);
	in->path = path;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && in->ntext < 8) {
			in->text[in->ntext].lo = ph[i].p_vaddr;
			in->text[in->ntext++].hi = ph[i].p_vaddr + ph[i].p_memsz;
		}
	for (int i = 0; i < eh->e_shnum; i++) {
		const char *n = names + sh[i].sh_name;
		if (!strcmp(n, ".eh_frame")) {
			in->size = sh[i].sh_size;
			in->addr = sh[i].sh_addr;
			in->data = malloc(in->size);
			memcpy(in->data, f + sh[i].sh_offset, in->size);
		} else if (!strcmp(n, ".eh_frame_hdr")) {
			uint64_t p;
			char err[128];
			cp_ehframe_hdr_parse(f + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr, &p, &in->count, err, sizeof err);
		}
	}
	free(f);
	return in->data ? 0 : -1;
}

static unsigned long long rnd_state;
static uint64_t rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return rnd_state >> 17;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: fuzz_ehframe ITERATIONS SEED FILE...\n");
		return 2;
	}
	long iters = atol(argv[1]);
	rnd_state = strtoull(argv[2], NULL, 0);
	size_t nin = (size_t)argc - 3;
	struct input *in = calloc(nin, sizeof *in);
	for (size_t i = 0; i < nin; i++)
		if (load(argv[3 + i], &in[i]) < 0) {
			fprintf(stderr, "fuzz_ehframe: %s: no .eh_frame\n", argv[3 + i]);
			return 1;
		}
	long rejected = 0, accepted = 0, tables = 0, lookups = 0;
	for (long it = 0; it < iters; it++) {
		struct input *src = &in[rnd() % nin];
		size_t size = src->size;
		/* An exact-size heap copy: ASan sees one byte past the end. */
		uint8_t *buf = malloc(size);
		memcpy(buf, src->data, size);
		int nmut = 1 + (int)(rnd() % 8);
		for (int k = 0; k < nmut; k++) {
			size_t pos = rnd() % size;
			switch (rnd() % 5) {
			case 0:
				buf[pos] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 1: {
				static const uint8_t v[] = { 0x00, 0xff, 0x7f, 0x80, 0x01, 0x0b, 0x0a, 0x0f };
				buf[pos] = v[rnd() % sizeof v];
				break;
			}
			case 2: { /* copy a run of bytes over another place */
				size_t from = rnd() % size, len = 1 + rnd() % 64;
				if (from + len > size)
					len = size - from;
				if (pos + len > size)
					len = size - pos;
				memmove(buf + pos, buf + from, len);
				break;
			}
			case 3: /* cut short */
				size = pos ? pos : 1;
				break;
			default: /* a random byte */
				buf[pos] = (uint8_t)rnd();
				break;
			}
		}
		uint8_t *exact = malloc(size);
		memcpy(exact, buf, size);
		free(buf);
		struct ehf_result r;
		char err[256];
		size_t count = rnd() % 4 ? src->count : 0;
		if (cp_ehframe_parse(exact, size, src->addr, count, src->text, src->ntext, &r, err, sizeof err) < 0) {
			rejected++;
		} else {
			accepted++;
			size_t bytes;
			struct cp_utab *t = cp_unwind_build(&r, &bytes, err, sizeof err);
			if (t) {
				tables++;
				struct cp_urule x;
				uintptr_t step = (t->end - t->start) / 512 + 1;
				for (uintptr_t pc = t->start - 64; pc < t->end + 64; pc += step) {
					if (pc >= t->start && pc < t->end)
						(void)cp_utab_lookup(t, pc, &x);
					lookups++;
				}
				free(t);
			}
			cp_ehframe_free(&r);
		}
		free(exact);
	}
	printf("fuzz_ehframe: %ld mutated copies: %ld rejected, %ld accepted (%ld tables, %ld lookups), no fault\n",
	       iters, rejected, accepted, tables, lookups);
	for (size_t i = 0; i < nin; i++)
		free(in[i].data);
	free(in);
	return 0;
}
