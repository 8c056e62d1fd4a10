/*
 * testhooks.c -- the test build's knobs (testhooks.h).  Without
 * -DCPUPROF_TEST_HOOKS nothing is defined here: the knobs are constants.
 */
#include "testhooks.h"

#ifdef CPUPROF_TEST_HOOKS

#include <stdlib.h>
#include <string.h>

size_t cp_test_ring_cells;
int cp_test_no_drain;
long cp_test_timer_resolution_ns;
int cp_test_perf_no_read, cp_test_perf_stall, cp_test_perf_ring_pause_ms;
int cp_lines_fault_object = -1, cp_lines_fault_kind;
uint64_t cp_test_lines_asked, cp_test_lines_looked_up, cp_test_inflated;

uint64_t cp_test_clock_ahead_pct(void)
{
	static int pct = -1;
	if (pct < 0) {
		const char *v = getenv("CPUPROF_TEST_CLOCK_AHEAD_PCT");
		pct = v ? atoi(v) : 0;
		if (pct < 0 || pct > 1000)
			pct = 0;
	}
	return (uint64_t)pct;
}

const char *cp_test_debug_root(void)
{
	static int read;
	static const char *root;
	if (!read) {
		root = getenv("CPUPROF_TEST_DEBUG_ROOT");
		if (root && !root[0])
			root = NULL;
		read = 1;
	}
	return root;
}

const char *cp_test_kallsyms_path(void)
{
	return getenv("CPUPROF_TEST_KALLSYMS");
}

int cp_test_no_callchain(void)
{
	const char *v = getenv("CPUPROF_TEST_NO_CALLCHAIN");
	return v && !strcmp(v, "1");
}

long cp_test_debuginfod_budget_ms(void)
{
	const char *v = getenv("CPUPROF_TEST_DEBUGINFOD_BUDGET_MS");
	long ms = v ? atol(v) : 0;
	return ms > 0 && ms <= 600000 ? ms : 0;
}

#else

/* ISO C wants a translation unit to declare something. */
typedef int cp_testhooks_none;

#endif
