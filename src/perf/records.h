/*
 * records.h -- the records of the perf rings, read once for both readers
 * (the perf engines inside the process, src/engines/perf.c, and `cpuprof
 * record` from outside, cli/record/kernel.c): the one sample layout their
 * events write, a record decoded into what its handlers use, and the
 * queue that puts the records of several CPUs' rings in time order before
 * they are handled, in the manner of perf's ordered events (a record is
 * handed on once no older one can still be in another ring).  Not signal
 * context.
 */
#ifndef CPUPROF_PERF_RECORDS_H
#define CPUPROF_PERF_RECORDS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "events.h"

/* What every sample of every event cpuprof opens carries, in the kernel's
 * order: its event's id, the thread, the time (CLOCK_MONOTONIC), the CPU
 * (read past: each ring is one CPU's, and the ring says which),
 * the event's count (with PERF_SAMPLE_READ, where asked), the user
 * registers and the top of the user stack. */
#define CP_PERF_SAMPLE_TYPE                                                                                        \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |  \
	 PERF_SAMPLE_STACK_USER)

/* Bytes of each CPU sample's stack copied (a multiple of 8 below 64 KiB):
 * deeper stacks end where the copy does, in [truncated]. */
#define CP_PERF_STACK_COPY 16384

/* Sets the sampling part of *a to that layout: the sample type (with
 * PERF_SAMPLE_READ if use_read), the registers, stack_bytes of stack, the
 * side records' sample_id, the monotonic clock.  The rest of *a is the
 * caller's. */
void cp_perf_sampling_attr(struct perf_event_attr *a, int use_read, uint32_t stack_bytes);

/* *a for a CPU sampler both readers open: event type/config every
 * `period` counts, kernel mode counted if `kernel`, in that layout with
 * CP_PERF_STACK_COPY bytes of stack, inherited with each inherited
 * thread's final count (inherit_stat), and the task and comm records.
 * The caller adds what its rings and tasks want. */
void cp_perf_sampler_attr(struct perf_event_attr *a, uint32_t type, uint64_t config, uint64_t period, int kernel,
			  int use_read);

/* The most kernel frames record keeps of a sample's chain (the kernel's
 * own default limit, kernel.perf_event_max_stack, is 127). */
#define CP_PERF_KERNEL_CHAIN_MAX 127

/* Adds the kernel's part of each stack to sampler *a (record --kernel):
 * samples in kernel mode too, and PERF_SAMPLE_CALLCHAIN with the user
 * part left out (exclude_callchain_user: the user stack is unwound from
 * the registers and the stack copy, as without it).  Samples then carry
 * the chain between the count and the user registers; decode them with
 * cp_perf_decode_chain. */
void cp_perf_kernel_chain_attr(struct perf_event_attr *a);

/* Makes event fd write into ring r: maps it as r if r has no event yet
 * (*pages as cp_perf_ring_map), else redirects it there.  0 or a negative
 * errno. */
int cp_perf_ring_join(struct cp_perf_ring *r, int fd, unsigned *pages);

/* A growing list of open event descriptors. */
struct cp_perf_fds {
	int *fd;
	size_t n, cap;
};
/* Keeps fd: 0, or -ENOMEM (fd is then not kept, nor closed). */
int cp_perf_fds_keep(struct cp_perf_fds *l, int fd);
/* Forgets the last kept if it is fd (its room failed afterwards). */
void cp_perf_fds_drop_last(struct cp_perf_fds *l, int fd);
/* Disables every event of l (the records they wrote stay in the rings). */
void cp_perf_fds_disable(const struct cp_perf_fds *l);
/* Closes every one and empties l; frees it if `release`. */
void cp_perf_fds_close(struct cp_perf_fds *l, int release);

/* One record, decoded.  Every record has its thread, time and CPU (the
 * sample's fields, or sample_id_all's). */
struct cp_perf_event {
	uint32_t type;      /* PERF_RECORD_* */
	uint16_t misc;
	int cpu;            /* of the ring it came from */
	pid_t pid, tid;
	uint64_t time;      /* CLOCK_MONOTONIC ns */
	uint64_t id;        /* the event that wrote it (samples; 0 for others) */
	int is_switch;      /* a sample of a context-switch event: a switch-out */
	/* PERF_RECORD_SAMPLE: the count (PERF_SAMPLE_READ, else 0; READ:
	 * the thread's final count); whether
	 * it caught a user context (user registers and a stack copy). */
	uint64_t value;
	int user;
	uint64_t regs[CP_PERF_NREGS];
	/* A sample's kernel frames (cp_perf_kernel_chain_attr), leaf first,
	 * among the kernel's context markers (PERF_CONTEXT_KERNEL: every
	 * value from PERF_CONTEXT_MAX up, to be skipped); nchain 0 without
	 * them.  In a queued record, a copy. */
	const uint64_t *chain;
	uint32_t nchain;
	/* PERF_RECORD_FORK, _EXIT: the parent process and thread. */
	pid_t ppid, ptid;
	/* PERF_RECORD_LOST: how many. */
	uint64_t lost;
	/* A sample's stack copy (len: the bytes the kernel copied); any
	 * other record's body before its sample_id (MMAP2's and COMM's
	 * fields and names).  In a queued record, a copy; a reader may put
	 * its own bytes here before queueing one. */
	const void *data;
	size_t len;
};

/* Decodes record h of the ring of `cpu` (events opened with
 * cp_perf_sampling_attr; use_read as there; the context-switch events of
 * sw, which carry no count, or NULL) into *ev.  1, or 0 if it is short or
 * of a kind no reader uses. */
struct cp_switches;
int cp_perf_decode(const struct perf_event_header *h, int cpu, int use_read, const struct cp_switches *sw,
		   struct cp_perf_event *ev);
/* The same, of samplers that also carry the kernel's chain if `chain`
 * (cp_perf_kernel_chain_attr; the context-switch events' samples never
 * do). */
int cp_perf_decode_chain(const struct perf_event_header *h, int cpu, int use_read, int chain,
			 const struct cp_switches *sw, struct cp_perf_event *ev);

/* A record's body as a cursor (MMAP2's and COMM's fields). */
static inline struct cp_perf_rec cp_perf_event_body(const struct cp_perf_event *ev)
{
	const uint8_t *p = ev->data;
	return (struct cp_perf_rec){ p, p + ev->len };
}

/* A NUL-terminated name at the cursor into name[size] (COMM's, MMAP2's
 * path), cut to fit. */
void cp_perf_take_name(struct cp_perf_rec *r, char *name, size_t size);

/* A record younger than this may still have an older one of another CPU
 * not yet in its ring: readers hand on what is older than the time they
 * read the rings, less this. */
#define CP_PERF_ORDER_SLACK_NS 2000000

/* Records waiting for their turn: each a copy of the event and its data. */
struct cp_perf_queue {
	struct cp_perf_qent {
		uint64_t time, seq;
		size_t off, len;    /* its copy in buf */
	} *q;
	size_t n, cap;
	uint8_t *buf;
	size_t nbuf, capbuf;
	size_t most;        /* the most bytes of buf it has held */
	uint64_t seq;
	uint64_t newest;    /* the latest time pushed (cp_perf_drain_ordered) */
};
/* Queues a copy of ev, of its chain and of its data.  0 or -ENOMEM (ev is then lost;
 * record counts a lost sample among the lost). */
int cp_perf_queue_push(struct cp_perf_queue *q, const struct cp_perf_event *ev);
/* Hands every queued record older than `until` to fn, oldest first (ties
 * in the order they came), and keeps the rest.  UINT64_MAX: all. */
typedef void cp_perf_deliver_fn(void *arg, const struct cp_perf_event *ev);
void cp_perf_queue_flush(struct cp_perf_queue *q, uint64_t until, cp_perf_deliver_fn *fn, void *arg);
void cp_perf_queue_free(struct cp_perf_queue *q);

/* Reading n rings into a queue a batch at a time, so that the queue holds
 * about `budget` bytes, not all the rings hold (up to 4 MiB a CPU where
 * the reader fell behind): each batch is of the ring read least far in
 * time, and after it the queue hands on what no ring can still hold an
 * older record than.  rec decodes a record and pushes it into q (or
 * counts it); mark: n entries of the caller's, the pass's state. */
struct cp_perf_mark {
	uint64_t end;       /* the ring's head when the pass began */
	uint64_t last;      /* the latest time read from it */
	int more;           /* records before `end` still to read */
};
struct cp_perf_drain {
	struct cp_perf_ring *rings;
	struct cp_perf_mark *mark;
	size_t n, budget;
	uint8_t *bounce;
	size_t bounce_size;
	cp_perf_record_fn *rec;
	void *rec_arg;
	struct cp_perf_queue *q;
};
#define CP_PERF_DRAIN_BUDGET (1u << 20)
/* Reads every ring up to where it was written when called, and hands
 * every queued record older than `until` to fn in time order. */
void cp_perf_drain_ordered(const struct cp_perf_drain *d, uint64_t until, cp_perf_deliver_fn *fn, void *arg);

#endif
