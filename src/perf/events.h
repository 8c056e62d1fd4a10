/*
 * events.h -- the kernel's perf_event rings, for whoever reads them: the perf
 * engines inside the profiled process (src/engines/perf.c) and `cpuprof
 * record` from outside it (cli/record/kernel.c).  The CPUs to open events
 * on, how large a ring the locked-memory limits allow, mapping a ring
 * (smaller if the limits refuse), reading its records in order (a record
 * that wraps around the ring's end is handed over whole, from a bounce
 * buffer), and the per-thread, per-CPU counts that weigh each sample by
 * the CPU time since the thread's previous one.  Not signal context.
 */
#ifndef CPUPROF_PERF_EVENTS_H
#define CPUPROF_PERF_EVENTS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/table.h"

/* The least and most data pages of a ring (powers of two): 512 KiB, as
 * much as perf_event_mlock_kb lets any user map per CPU by default, and
 * 4 MiB. */
#define CP_PERF_RING_PAGES_MIN 128
#define CP_PERF_RING_PAGES_MAX 1024

struct cp_perf_ring {
	int cpu;
	int fd;                            /* the event it is mapped from, or -1 */
	struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t size;                     /* data bytes, a power of two */
	size_t map_bytes;
};

/* perf_event_open(2). */
int cp_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group, unsigned long flags);

/* /proc/sys/kernel/perf_event_paranoid, or -1 if unreadable. */
int cp_perf_paranoid(void);

/* The online CPUs (from sysfs; else 0..configured-1) as rings not yet
 * mapped (fd -1): *rings is malloc'd.  0 or -ENOMEM. */
int cp_perf_rings(struct cp_perf_ring **rings, size_t *n);

/* The data pages each of n rings may have (a power of two, at most
 * `want`, at least CP_PERF_RING_PAGES_MIN) within the limits on locked
 * memory of a user without CAP_IPC_LOCK: the user's perf_event_mlock_kb
 * per online CPU, then the process's RLIMIT_MEMLOCK.  Estimated (other
 * processes of the user may hold some) so that the first rings mapped do
 * not leave the last none; cp_perf_ring_map() still falls back. */
unsigned cp_perf_ring_pages(size_t n, unsigned want);

/* Maps event fd as ring r with *pages data pages, halving *pages (down to
 * the least) while the limits refuse.  0 or a negative errno. */
int cp_perf_ring_map(struct cp_perf_ring *r, int fd, unsigned *pages);
void cp_perf_ring_unmap(struct cp_perf_ring *r);

/* Bytes written and not yet read. */
uint64_t cp_perf_ring_used(const struct cp_perf_ring *r);

/* Hands every record of r not yet read to fn, in order, then frees their
 * room: h is the record whole, header and body, h->size bytes (in the
 * ring, or in bounce for one that wraps around the ring's end: bounce_size
 * bytes, and a longer wrapping record is skipped), valid only during the
 * call. */
typedef void cp_perf_record_fn(const struct perf_event_header *h, int cpu, void *arg);
void cp_perf_ring_drain(struct cp_perf_ring *r, uint8_t *bounce, size_t bounce_size, cp_perf_record_fn *fn,
			void *arg);
/* Where the kernel has written r up to (a byte count, as data_tail). */
uint64_t cp_perf_ring_head(const struct cp_perf_ring *r);
/* The same, of the records before byte `end` (a head read before), and
 * stopping after the record that makes `most` bytes read: 1 if it stopped
 * there with records before `end` left, else 0. */
int cp_perf_ring_drain_to(struct cp_perf_ring *r, uint64_t end, size_t most, uint8_t *bounce, size_t bounce_size,
			  cp_perf_record_fn *fn, void *arg);

/* A record being read: its bytes and where the cursor is. */
struct cp_perf_rec {
	const uint8_t *p, *end;
};
/* Copies the next n bytes into out: 1, or 0 if the record is short. */
int cp_perf_take(struct cp_perf_rec *r, void *out, size_t n);
/* The next 8 bytes, or 0 if the record is short. */
uint64_t cp_perf_u64(struct cp_perf_rec *r);
/* A sample's user registers and stack copy (PERF_SAMPLE_REGS_USER with
 * nregs registers, PERF_SAMPLE_STACK_USER): into regs, *stack and *dyn
 * (the bytes the kernel copied).  1 if the sample has them, 0 if it caught
 * no user context, -1 if the record is short. */
int cp_perf_take_user(struct cp_perf_rec *r, uint64_t *regs, size_t nregs, const uint8_t **stack, uint64_t *dyn);

/* The counts each thread's samples on each CPU accounted for so far: with
 * PERF_SAMPLE_READ a sample carries its event's count, and weighs what the
 * thread ran on that CPU since its previous sample there. */
struct cp_perf_count {
	uint64_t key; /* tid << 32 | cpu */
	uint64_t accounted;
};
struct cp_perf_counts {
	struct cp_table t; /* of struct cp_perf_count; all zero to start */
};

/* The units a sample of thread tid on cpu stands for: the count `value`
 * less what that thread's samples there accounted for (have_value), else
 * one period; and accounts for them.  One period if out of memory.  For
 * tests (unit_clock_ahead, t_clock_ahead.sh), the test build's
 * CPUPROF_TEST_CLOCK_AHEAD_PCT (base/testhooks.h) makes them that many
 * percent more than that, as when a virtual machine's host takes its CPU
 * and the task clock runs on.
 *
 * With kernel non-NULL, the event takes samples in user mode only (an
 * unprivileged user's): its clock fires every period of the thread's CPU,
 * and each firing that found the thread in the kernel raised no sample, so
 * the units since the previous sample hold that many more whole periods.
 * Those periods go to *kernel, not to this sample's user stack: the
 * kernel time was spent by whatever entered the kernel since the previous
 * sample, which the sample does not know. */
uint64_t cp_perf_counts_weigh(struct cp_perf_counts *c, pid_t tid, int cpu, uint64_t value, int have_value,
			      uint64_t period, uint64_t *kernel);
/* Thread tid's final count on cpu (a PERF_RECORD_READ as it exits): the
 * units after its last sample there, and accounts for them. */
uint64_t cp_perf_counts_tail(struct cp_perf_counts *c, pid_t tid, int cpu, uint64_t value);
/* What every thread's samples and final counts accounted for. */
uint64_t cp_perf_counts_accounted(const struct cp_perf_counts *c);
void cp_perf_counts_free(struct cp_perf_counts *c);

/* The most CPU one context switch may cost a thread unseen by its task
 * clock (cp_perf_unseen): measured here 1-20 us (a virtual machine, where
 * leaving idle is slow), taken with room to spare. */
#define CP_PERF_SWITCH_UNSEEN_MAX_NS 50000
/* The part of `gap_ns` -- CPU the scheduler charged threads beyond what
 * their task clocks counted -- that `switches` context switches explain.
 * The scheduler's charge of a thread starts before its task clock does at
 * every switch-in: it runs from a clock read before the switch (on a CPU
 * that was idle, before leaving idle), the task clock from when perf's
 * context is switched in, once the switch is done.  No perf event counts
 * the time in between, so a thread that wakes often loses that much at
 * each wake-up (measured here: none without switches, about 20 us a
 * voluntary switch on this virtual machine).  Beyond what the switches
 * explain, a gap is something else, and stays a gap. */
uint64_t cp_perf_unseen(int64_t gap_ns, int64_t switches);

#endif
