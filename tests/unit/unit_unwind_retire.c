/*
 * unit_unwind_retire.c -- replaced unwind tables are freed only once no
 * handler can be reading them (unwind.c's retire list), deterministically:
 * the tables of a library are built when it is loaded; with a handler
 * "in flight" (cp_sig.inflight raised by hand, as a timer engine's handler
 * raises it while it walks a stack) the library is unloaded and the
 * tables rebuilt and reclaimed: the old set and the library's table must
 * still be intact (free() writes its list pointers into the first bytes
 * of a freed block, and a block handed back to the kernel faults).
 * test_unwind_churn does the same under real sampling, where catching a
 * table freed too early is a matter of luck.
 */
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "sig/sigstate.h"
#include "sig/unwind_table.h"
#include "unwind/tables.h"

int main(void)
{
	char dir[PATH_MAX], lib[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
	CHECK(n > 0, "readlink");
	dir[n] = '\0';
	*strrchr(dir, '/') = '\0';
	snprintf(lib, sizeof lib, "%s/libunwind_dl.so", dir);
	CHECK(access(lib, R_OK) == 0, "%s is not built (make tests)", lib);

	cp_unwind_start(CP_UNWIND_AUTO, 0);
	void *h = dlopen(lib, RTLD_NOW);
	CHECK(h, "dlopen %s: %s", lib, dlerror());
	void *entry = dlsym(h, "dl_entry");
	CHECK(entry, "dl_entry");
	CHECK(cp_unwind_refresh() == 1, "loading %s did not rebuild the tables", lib);
	const struct cp_unwind_set *old = atomic_load(&cp_sig.unwind);
	CHECK(old && old->n > 0, "no tables");
	/* Its table, built as a walk would ask for it. */
	cp_unwind_want_mark(cp_sig.unwind_want, cp_uset_find(old, (uintptr_t)entry)->obj);
	CHECK(cp_unwind_build_wanted() == 1, "the library's table was not built when asked for");
	old = atomic_load(&cp_sig.unwind);
	const struct cp_utab *tab = cp_uset_find(old, (uintptr_t)entry)->tab;
	CHECK(tab, "no table for the library");
	uint8_t set_bytes[16], tab_bytes[16];
	memcpy(set_bytes, old, sizeof set_bytes);
	memcpy(tab_bytes, tab, sizeof tab_bytes);

	/* A handler is walking with `old` now. */
	atomic_store(&cp_sig.inflight, 1);
	CHECK_EQ(dlclose(h), 0);
	CHECK(cp_unwind_refresh() == 1, "unloading the library did not rebuild the tables");
	CHECK(atomic_load(&cp_sig.unwind) != old, "the set was not replaced");
	size_t before = mallinfo2().uordblks;
	for (int i = 0; i < 3; i++)
		cp_unwind_reclaim();
	CHECK(mallinfo2().uordblks == before, "memory was freed with a handler in flight");
	CHECK(!memcmp(set_bytes, old, sizeof set_bytes), "the replaced set was freed while a handler could read it");
	CHECK(!memcmp(tab_bytes, tab, sizeof tab_bytes), "the unloaded library's table was freed while a handler could "
	      "read it");
	CHECK(cp_uset_find(old, (uintptr_t)entry)->tab == tab, "the replaced set no longer finds the library's table");

	/* The handler is done: reclaiming may free them now (which the
	 * allocator's counts do not show: freed blocks wait in its
	 * per-thread cache as if in use). */
	atomic_store(&cp_sig.inflight, 0);
	cp_unwind_reclaim();
	printf("# retired tables kept while a handler was in flight\n");
	cp_unwind_stop(1);
	return 0;
}
