/*
 * testhooks.h -- every knob the tests turn inside the library and the CLI,
 * declared once.  They exist only in the test build: the objects compiled
 * with -DCPUPROF_TEST_HOOKS ($(B)/hooks/, linked into the unit tests and
 * into the hooked cpuprof and libcpuprof.so that scripts needing a hook
 * run; docs/building.md).  Everywhere else, in what `make` builds and
 * `make install` installs, each knob is a constant, so the compiler drops
 * the paths it guards, and nothing is read from the environment.
 *
 * Include it only from .c files: the Makefile compiles the hooked objects
 * of exactly the files whose source names this header.  Tests read and set
 * the knobs as plain variables (the unit tests are compiled with the same
 * flag); a knob another thread reads while the library runs is read with
 * cp_test_read().
 */
#ifndef CPUPROF_BASE_TESTHOOKS_H
#define CPUPROF_BASE_TESTHOOKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef CPUPROF_TEST_HOOKS

/* src/cpuprof.c (unit_lost, unit_clock_ahead, unit_tickbound): a ring of
 * this many cells instead of RING_CELLS (0: RING_CELLS); a keeper that
 * moves no samples into the table; a timer resolution to believe instead
 * of the kernel's (0: the kernel's). */
extern size_t cp_test_ring_cells;
extern int cp_test_no_drain;
extern long cp_test_timer_resolution_ns;

/* src/engines/perf.c (unit_lost_kernel): no PERF_SAMPLE_READ, as on
 * kernels before 6.12; and, while cp_test_perf_stall is set, a keeper
 * that leaves the rings alone, so that they fill and the kernel loses
 * samples.  (unit_offcpu_order) a keeper that pauses this many ms after
 * draining the first ring, as one preempted there would. */
extern int cp_test_perf_no_read, cp_test_perf_stall, cp_test_perf_ring_pause_ms;

/* src/symbolize/lines_child.c (unit_lines): the lines child crashes (kind
 * 1: SIGSEGV) or hangs (kind 2) when it starts on the object of this index
 * (-1: never), or crashes once it has sent its first answer with lines
 * about that object (kind 3). */
extern int cp_lines_fault_object, cp_lines_fault_kind;
/* ... (unit_lines) how many queries were handed to lines children (the
 * cache held no answer for them), and how many of those the children
 * asked libdw about (the others were inside the span of the answer
 * before): counted, never reset. */
extern uint64_t cp_test_lines_asked, cp_test_lines_looked_up;
/* Images made by unpack.c with compressed sections inflated. */
extern uint64_t cp_test_inflated;
#define cp_test_count(counter, n) ((counter) += (n))

/* src/perf/events.c (unit_clock_ahead, t_clock_ahead.sh): the percentage
 * by which the perf weigher makes every sample weigh more than its count,
 * as when a virtual machine's host takes its CPU and the task clock runs
 * on: $CPUPROF_TEST_CLOCK_AHEAD_PCT (0 to 1000), read once. */
uint64_t cp_test_clock_ahead_pct(void);
/* src/symbolize/kallsyms.c, src/perf/events.c (t_kernel_frames.sh): the
 * kallsyms file record --kernel reads instead of /proc/kallsyms
 * ($CPUPROF_TEST_KALLSYMS, or NULL), as one whose addresses kptr_restrict
 * hides even from root; and perf_event_open refusing every event that
 * asks for a callchain with EINVAL ($CPUPROF_TEST_NO_CALLCHAIN=1), as a
 * kernel that cannot give one. */
const char *cp_test_kallsyms_path(void);
int cp_test_no_callchain(void);

/* src/symbolize/symbols.c and lines.c (t_debuginfo.sh): the directory
 * searched for separate debug files in place of /usr/lib/debug (its
 * .build-id/ tree and the mirrored .gnu_debuglink tree):
 * $CPUPROF_TEST_DEBUG_ROOT, read once; NULL when unset.  The tests install
 * debug files there, never in the machine's own. */
const char *cp_test_debug_root(void);

/* src/symbolize/debuginfod.c (t_debuginfod.sh): the time all fetches may
 * take, in ms, instead of CP_DEBUGINFOD_BUDGET_MS:
 * $CPUPROF_TEST_DEBUGINFOD_BUDGET_MS (1 to 600000; 0: the constant). */
long cp_test_debuginfod_budget_ms(void);

#define cp_test_read(knob) __atomic_load_n(&(knob), __ATOMIC_RELAXED)

#else

#define cp_test_ring_cells ((size_t)0)
#define cp_test_no_drain 0
#define cp_test_timer_resolution_ns 0L
#define cp_test_perf_no_read 0
#define cp_test_perf_stall 0
#define cp_test_perf_ring_pause_ms 0
#define cp_lines_fault_object (-1)
#define cp_lines_fault_kind 0
#define cp_test_count(counter, n) ((void)0)
#define cp_test_clock_ahead_pct() ((uint64_t)0)
#define cp_test_debug_root() ((const char *)0)
#define cp_test_kallsyms_path() ((const char *)0)
#define cp_test_no_callchain() 0
#define cp_test_debuginfod_budget_ms() 0L
#define cp_test_read(knob) (knob)

#endif

#endif
