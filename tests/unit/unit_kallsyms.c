/*
 * unit_kallsyms.c -- the kernel's names from a kallsyms file
 * (symbolize/kallsyms.h), on files written by hand: text symbols only
 * (data and absolute ones left out), one per address and the best-named
 * (startup_64 over _stext and _text), each reaching the next symbol, a
 * module's named "name [module]"; a file whose addresses all read 0 (what
 * kptr_restrict or perf_event_paranoid shows an unprivileged reader) is
 * refused with the setting that hid them; and this machine's own
 * /proc/kallsyms names vfs_read where its addresses can be seen.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "symbolize/kallsyms.h"

static char path[] = "/tmp/unit_kallsyms.XXXXXX";

static void put_file(const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL, "%s", path);
	fputs(text, f);
	fclose(f);
}

static const char *name_at(const struct cp_kallsyms *k, uintptr_t addr)
{
	const struct cp_sym *s = cp_symbols_symtab_lookup(&k->tab, addr);
	return s ? s->name : NULL;
}

int main(void)
{
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	struct cp_kallsyms k;
	char why[512] = "";

	put_file("0000000000000000 A fixed_percpu_data\n"
		   "ffffffff81000000 T _stext\n"
		   "ffffffff81000000 T startup_64\n"
		   "ffffffff81000000 T _text\n"
		   "ffffffff81000100 t __pfx_read_zero\n"
		   "ffffffff81000110 t read_zero\n"
		   "ffffffff81000200 D some_data\n"
		   "ffffffff81000300 W weak_fn\n"
		   "ffffffffa0000000 t nft_do_chain\t[nf_tables]\n"
		   "garbage line\n");
	CHECK_EQ(cp_kallsyms_read(path, &k, why, sizeof why), 0);
	CHECK_EQ(k.tab.n, 5);
	CHECK_EQ(k.lo, 0xffffffff81000000ull);
	CHECK_EQ(k.hi, 0xffffffffa0001000ull);
	CHECK(name_at(&k, 0xffffffff81000010ull) && !strcmp(name_at(&k, 0xffffffff81000010ull), "startup_64"),
	      "%s", name_at(&k, 0xffffffff81000010ull));
	CHECK(!strcmp(name_at(&k, 0xffffffff81000115ull), "read_zero"), "at read_zero");
	/* No sizes: read_zero reaches weak_fn, past the data symbol. */
	CHECK(!strcmp(name_at(&k, 0xffffffff810002ffull), "read_zero"), "%s", name_at(&k, 0xffffffff810002ffull));
	CHECK(!strcmp(name_at(&k, 0xffffffff81000300ull), "weak_fn"), "weak_fn");
	CHECK(!strcmp(name_at(&k, 0xffffffffa0000010ull), "nft_do_chain [nf_tables]"), "%s",
	      name_at(&k, 0xffffffffa0000010ull));
	CHECK(name_at(&k, 0xffffffff80ffffffull) == NULL, "below the text");
	cp_kallsyms_free(&k);

	/* Hidden: every address 0. */
	put_file("0000000000000000 T _stext\n0000000000000000 t read_zero\n");
	CHECK_EQ(cp_kallsyms_read(path, &k, why, sizeof why), -EPERM);
	CHECK(strstr(why, "hides the kernel's addresses") && (strstr(why, "kptr_restrict=") ||
							     strstr(why, "perf_event_paranoid=")), "%s", why);
	printf("hidden: %s\n", why);

	put_file("ffffffff81000200 D some_data\n");
	CHECK_EQ(cp_kallsyms_read(path, &k, why, sizeof why), -ENOENT);
	unlink(path);
	CHECK_EQ(cp_kallsyms_read(path, &k, why, sizeof why), -ENOENT);

	/* This kernel's. */
	int rc = cp_kallsyms_read(NULL, &k, why, sizeof why);
	if (rc == 0) {
		size_t i = 0;
		while (i < k.tab.n && strcmp(k.tab.syms[i].name, "vfs_read") != 0)
			i++;
		CHECK(i < k.tab.n, "no vfs_read among %zu symbols", k.tab.n);
		CHECK(!strcmp(name_at(&k, k.tab.syms[i].start + 1), "vfs_read"), "lookup");
		printf("/proc/kallsyms: %zu text symbols, vfs_read at %#lx\n", k.tab.n,
		       (unsigned long)k.tab.syms[i].start);
		cp_kallsyms_free(&k);
	} else {
		printf("/proc/kallsyms not checked: %s\n", why);
	}
	return 0;
}
