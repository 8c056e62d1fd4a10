/*
 * kallsyms.c -- the kernel's function names from /proc/kallsyms
 * (kallsyms.h).  Each line is "ADDRESS TYPE NAME" and, for a module's
 * symbol, "\t[MODULE]"; the text symbols (t, T, w, W) are kept.  Of
 * several at one address the best-named is kept, as perf chooses: global
 * before weak before local, fewer leading underscores, then the shorter
 * ("_stext" and "_text" give way to the function that starts there).
 * Where kernel.kptr_restrict hides the addresses from the reader, every
 * one reads 0: no name could be right, and the caller is told why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/testhooks.h"
#include "kallsyms.h"

/* A symbol as read: its name's offset in the names, and its rank. */
struct ksym {
	uintptr_t start;
	size_t name;
	int rank;
};

/* Lower is better: the binding, then leading underscores, then length. */
static int rank_of(char type, const char *name)
{
	int bind = type == 'T' ? 0 : type == 'W' || type == 'w' ? 1 : 2;
	int under = 0;
	while (name[under] == '_' && under < 3)
		under++;
	size_t n = strlen(name);
	return bind << 16 | under << 12 | (int)(n < 4095 ? n : 4095);
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A kernel setting's value (/proc/sys/kernel/NAME), or -1. */
static int sysctl_kernel(const char *name)
{
	char path[96];
	snprintf(path, sizeof path, "/proc/sys/kernel/%s", name);
	FILE *f = fopen(path, "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The symbols read, sorted, one per address, into k's table. */
static int make_table(struct cp_kallsyms *k, struct ksym *v, size_t n, char *names)
{
	qsort(v, n, sizeof *v, ksym_cmp);
	struct cp_sym *syms = malloc((n ? n : 1) * sizeof *syms);
	if (!syms)
		return -ENOMEM;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && syms[m - 1].start == v[i].start)
			continue; /* the best of this address came first */
		syms[m++] = (struct cp_sym){ v[i].start, 0, names + v[i].name };
	}
	/* Each reaches the next; the last a page. */
	for (size_t i = 0; i < m; i++)
		syms[i].size = i + 1 < m ? syms[i + 1].start - syms[i].start : 4096;
	k->tab = (struct cp_symtab){ syms, m, names };
	k->lo = syms[0].start;
	k->hi = syms[m - 1].start + syms[m - 1].size;
	return 0;
}

int cp_kallsyms_read(const char *path, struct cp_kallsyms *k, char *why, size_t len)
{
	memset(k, 0, sizeof *k);
	if (!path)
		path = cp_test_kallsyms_path();
	if (!path)
		path = "/proc/kallsyms";
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(why, len, "%s: %s", path, strerror(e));
		return -e;
	}
	struct ksym *v = NULL;
	char *names = NULL;
	size_t n = 0, cap = 0, nnames = 0, capnames = 0, zeros = 0;
	char line[1024];
	int rc = 0;
	while (fgets(line, sizeof line, f)) {
		char *end, *name;
		unsigned long long addr = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !strchr("tTwW", end[1]) || end[2] != ' ')
			continue;
		char type = end[1];
		name = end + 3;
		name[strcspn(name, "\n")] = '\0';
		if (addr == 0) {
			zeros++;
			continue;
		}
		/* "name\t[module]" becomes "name [module]"; ranked by name. */
		char *tab = strchr(name, '\t');
		if (tab)
			*tab = '\0';
		int rank = rank_of(type, name);
		if (tab)
			*tab = ' ';
		size_t nl = strlen(name) + 1;
		if (cp_array_grow((void **)&v, &cap, n + 1, sizeof *v, 65536) ||
		    cp_array_grow((void **)&names, &capnames, nnames + nl, 1, 1u << 21)) {
			rc = -ENOMEM;
			break;
		}
		memcpy(names + nnames, name, nl);
		v[n++] = (struct ksym){ (uintptr_t)addr, nnames, rank };
		nnames += nl;
	}
	fclose(f);
	if (rc == 0 && n == 0 && zeros) {
		/* The kernel's rule (kallsyms_show_value): kptr_restrict 0
		 * shows them where perf_event_paranoid <= 1, or to CAP_SYSLOG;
		 * 1 to CAP_SYSLOG only; 2 to nobody. */
		int kptr = sysctl_kernel("kptr_restrict"), par = sysctl_kernel("perf_event_paranoid");
		int root = geteuid() == 0;
		rc = -EPERM;
		if (kptr >= 2 || (kptr == 1 && !root))
			snprintf(why, len, "kernel.kptr_restrict=%d hides the kernel's addresses in %s from %s (every "
				 "one reads 0; `sysctl kernel.kptr_restrict=0` shows them)", kptr, path,
				 kptr == 1 ? "this user (root or CAP_SYSLOG sees them)" : "every user, root too");
		else if (kptr == 0 && !root && par > 1)
			snprintf(why, len, "kernel.perf_event_paranoid=%d hides the kernel's addresses in %s from this "
				 "user (every one reads 0; root, CAP_SYSLOG or perf_event_paranoid <= 1 shows them)", par,
				 path);
		else
			snprintf(why, len, "every address in %s reads 0, which hides the kernel's addresses "
				 "(kernel.kptr_restrict=%d, perf_event_paranoid=%d)", path, kptr, par);
	} else if (rc == 0 && n == 0) {
		rc = -ENOENT;
		snprintf(why, len, "%s has no text symbol", path);
	} else if (rc == 0) {
		rc = make_table(k, v, n, names);
	}
	if (rc == -ENOMEM)
		snprintf(why, len, "%s: out of memory", path);
	free(v);
	if (rc < 0)
		free(names);
	return rc;
}

void cp_kallsyms_free(struct cp_kallsyms *k)
{
	cp_symbols_symtab_free(&k->tab);
	k->lo = k->hi = 0;
}
