/*
 * switches.c -- off-CPU intervals from context-switch samples and records
 * (switches.h): a table of threads by tid, each a small state machine
 * (not known yet, on the CPU, off it since a switch-out) fed in time
 * order.  Records the kernel could not write (a full ring) leave a
 * thread's events out of step; each event then says what it can: a CPU
 * sample while the thread was thought off the CPU ends the interval there,
 * a switch-in without a switch-out record before it ends the interval its
 * sample began, and what cannot be placed is counted (`unpaired`,
 * `stackless`) rather than guessed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "records.h"
#include "switches.h"
#include "base/array.h"

void cp_switches_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	cp_perf_sampling_attr(a, 0, CP_SWITCH_STACK_COPY);
	a->exclude_kernel = 0;
	a->exclude_hv = 1;
	a->inherit = 1;
	a->context_switch = 1;
}

int cp_switches_open(struct cp_switches *s, struct perf_event_attr *a, pid_t pid, int cpu, int ring_fd)
{
	int fd = cp_perf_open(a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 || ring_fd < 0)
		return fd;
	uint64_t id = 0;
	int e = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0 ? -errno : 0;
	if (e == 0)
		e = cp_switches_add_id(s, id);
	if (e < 0) {
		close(fd);
		return e;
	}
	return fd;
}

void cp_switches_record(struct cp_switches *s, const struct cp_perf_event *ev)
{
	switch (ev->type) {
	case PERF_RECORD_FORK: cp_switches_begin(s, ev->tid, ev->time, 1); break;
	case PERF_RECORD_EXIT: cp_switches_end(s, ev->tid, ev->time); break;
	case PERF_RECORD_SWITCH:
		if (ev->misc & PERF_RECORD_MISC_SWITCH_OUT)
			cp_switches_out(s, ev->tid, ev->time, (ev->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0);
		else
			cp_switches_in(s, ev->tid, ev->time);
		break;
	}
}

void cp_switches_refused(int e, char *why, size_t len)
{
	int par = cp_perf_paranoid();
	if ((e == -EACCES || e == -EPERM) && par > 1)
		snprintf(why, len, "the kernel refused the sample it takes as each thread leaves the CPU, a kernel-mode "
			 "sample (perf_event_open: %s, perf_event_paranoid=%d): root, CAP_PERFMON or `sysctl "
			 "kernel.perf_event_paranoid=1` would allow it", strerror(-e), par);
	else if (e == -EACCES || e == -EPERM)
		snprintf(why, len, "the kernel refused the sample it takes as each thread leaves the CPU (perf_event_open: "
			 "%s, though perf_event_paranoid=%d allows it: a seccomp filter, a security module or a "
			 "container's profile refuses it)", strerror(-e), par);
	else
		snprintf(why, len, "no context-switch samples here (perf_event_open: %s)", strerror(-e));
}

static uint64_t thread_key(const void *e)
{
	return (uint64_t)(unsigned)((const struct cp_switch_thread *)e)->tid;
}

void cp_switches_init(struct cp_switches *s, cp_switch_emit_fn *emit, void *arg)
{
	memset(s, 0, sizeof *s);
	s->emit = emit;
	s->arg = arg;
	s->threads.size = sizeof(struct cp_switch_thread);
	s->threads.key_of = thread_key;
}

void cp_switches_free(struct cp_switches *s)
{
	struct cp_switch_thread *t = s->threads.e;
	for (size_t i = 0; i < s->threads.cap; i++)
		free(t[i].pcs);
	cp_table_free(&s->threads);
	free(s->ids);
	memset(s, 0, sizeof *s);
}

int cp_switches_add_id(struct cp_switches *s, uint64_t id)
{
	if (cp_switches_is_switch(s, id))
		return 0;
	if (cp_array_grow((void **)&s->ids, &s->capids, s->nids + 1, sizeof *s->ids, 16))
		return -ENOMEM;
	/* Kept sorted: an insertion per event opened, a binary search per
	 * sample. */
	size_t at = s->nids;
	while (at > 0 && s->ids[at - 1] > id) {
		s->ids[at] = s->ids[at - 1];
		at--;
	}
	s->ids[at] = id;
	s->nids++;
	return 0;
}

int cp_switches_is_switch(const struct cp_switches *s, uint64_t id)
{
	size_t lo = 0, hi = s->nids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ids[mid] == id)
			return 1;
		if (s->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

const struct cp_switch_thread *cp_switches_thread(const struct cp_switches *s, pid_t tid)
{
	return tid > 0 ? cp_table_find(&s->threads, (unsigned)tid) : NULL;
}

/* Thread tid, made (starting at `time`) if new; NULL if out of memory. */
static struct cp_switch_thread *get(struct cp_switches *s, pid_t tid, uint64_t time)
{
	if (tid <= 0)
		return NULL;
	int made;
	struct cp_switch_thread *t = cp_table_get(&s->threads, (unsigned)tid, &made);
	if (t && made) {
		t->tid = tid;
		t->start = time;
		t->state = CP_SW_UNKNOWN;
	}
	return t;
}

/* Hands back t's interval [from, to) of kind `kind`, with its stack if it
 * has one for this switch-out. */
static void give(struct cp_switches *s, struct cp_switch_thread *t, uint64_t from, uint64_t to, uint32_t kind,
		 int with_stack)
{
	if (to <= from)
		return;
	uint64_t ns = to - from;
	t->off_ns += ns;
	if (kind & CP_OFF_RUNNABLE)
		t->runnable_ns += ns;
	t->switches++;
	with_stack = with_stack && t->have_stack;
	s->emit(s->arg, with_stack ? t->out_ctx : NULL, with_stack ? t->out_word : 0, t->tid,
		with_stack ? t->pcs : NULL, with_stack ? t->n : 0, with_stack ? t->stack_flags : 0, kind, from, ns);
}

/* t is on the CPU from `time` (its first event says so, or an event that
 * was lost). */
static void now_on(struct cp_switch_thread *t, uint64_t time)
{
	t->state = CP_SW_ON;
	t->in_time = time;
}

/* The CPU t used from its switch-in (or last sample) to `time`. */
static void ran_until(struct cp_switch_thread *t, uint64_t time)
{
	uint64_t from = t->in_time > t->last_sample ? t->in_time : t->last_sample;
	if (time > from)
		t->run_after += time - from;
}

/* Ends an interval of t that is under way at `time` (its switch-in, or an
 * event that says it ran again). */
static void close_out(struct cp_switches *s, struct cp_switch_thread *t, uint64_t time)
{
	give(s, t, t->out_time, time, t->out_flags, 1);
	t->have_stack = 0;
	now_on(t, time);
}

void cp_switches_begin(struct cp_switches *s, pid_t tid, uint64_t time, int made)
{
	if (cp_switches_thread(s, tid))
		return;
	struct cp_switch_thread *t = get(s, tid, time);
	if (t)
		t->new_thread = made;
}

void cp_switches_sample(struct cp_switches *s, pid_t tid, uint64_t time)
{
	struct cp_switch_thread *t = get(s, tid, time);
	if (!t || t->end)
		return;
	if (t->state == CP_SW_UNKNOWN) {
		now_on(t, t->start);
	} else if (t->state == CP_SW_OFF) {
		/* It runs: its switch-in record was lost. */
		s->unpaired++;
		close_out(s, t, time);
	}
	t->run_after = 0;
	t->last_sample = time;
}

void cp_switches_out_stack(struct cp_switches *s, pid_t tid, uint64_t time, const uintptr_t *pcs, uint32_t n,
			   uint32_t stack_flags, void *ctx, uint64_t word)
{
	struct cp_switch_thread *t = get(s, tid, time);
	if (!t || t->end)
		return;
	if (t->state == CP_SW_UNKNOWN)
		now_on(t, t->start);
	else if (t->state == CP_SW_OFF) {
		s->unpaired++;
		close_out(s, t, time);
	}
	if (n > t->cap) {
		uint32_t cap = n < 64 ? 64 : n;
		uintptr_t *p = realloc(t->pcs, cap * sizeof *p);
		if (!p) {
			t->have_stack = 0;
			return;
		}
		t->pcs = p;
		t->cap = cap;
	}
	if (n)
		memcpy(t->pcs, pcs, n * sizeof *pcs);
	t->n = n;
	t->stack_flags = stack_flags;
	t->out_ctx = ctx;
	t->out_word = word;
	t->stack_time = time;
	t->have_stack = 1;
}

void cp_switches_out(struct cp_switches *s, pid_t tid, uint64_t time, int preempted)
{
	struct cp_switch_thread *t = get(s, tid, time);
	if (!t || t->end)
		return;
	if (t->state == CP_SW_UNKNOWN)
		now_on(t, t->start);
	if (t->state == CP_SW_OFF) {
		/* Two switch-outs in a row: the switch-in between was lost,
		 * and so was where the thread ran; the first interval ends
		 * here. */
		s->unpaired++;
		close_out(s, t, time);
	}
	ran_until(t, time);
	if (t->have_stack && t->stack_time < t->in_time)
		t->have_stack = 0; /* a sample of an earlier switch-out */
	if (!t->have_stack)
		s->stackless++;
	t->state = CP_SW_OFF;
	t->out_time = time;
	t->out_flags = CP_OFF_CPU | (preempted ? CP_OFF_RUNNABLE : 0);
}

void cp_switches_in(struct cp_switches *s, pid_t tid, uint64_t time)
{
	struct cp_switch_thread *t = get(s, tid, time);
	if (!t || t->end)
		return;
	switch (t->state) {
	case CP_SW_OFF:
		close_out(s, t, time);
		return;
	case CP_SW_UNKNOWN:
		/* Off the CPU since its start: a new thread waiting for its
		 * first run, or one that was off the CPU when the profile
		 * started, where it is not known. */
		give(s, t, t->start, time, CP_OFF_CPU | (t->new_thread ? CP_OFF_RUNNABLE : CP_OFF_BEFORE), 0);
		now_on(t, time);
		return;
	default:
		/* On the CPU already: the switch-out record was lost.  With
		 * the switch-out's sample, the interval began there. */
		if (t->have_stack && t->stack_time >= t->in_time) {
			ran_until(t, t->stack_time);
			t->out_time = t->stack_time;
			t->out_flags = CP_OFF_CPU;
			close_out(s, t, time);
		} else {
			s->unpaired++;
			ran_until(t, time);
			now_on(t, time);
		}
		return;
	}
}

void cp_switches_end(struct cp_switches *s, pid_t tid, uint64_t time)
{
	struct cp_switch_thread *t = get(s, tid, time);
	if (!t || t->end)
		return;
	if (t->state == CP_SW_OFF)
		close_out(s, t, time); /* it ran to exit: the switch-in was lost */
	else if (t->state == CP_SW_UNKNOWN)
		now_on(t, t->start);
	ran_until(t, time);
	t->end = time > t->start ? time : t->start;
}

void cp_switches_finish(struct cp_switches *s, uint64_t time)
{
	struct cp_switch_thread *all = s->threads.e;
	for (size_t i = 0; i < s->threads.cap; i++) {
		struct cp_switch_thread *t = &all[i];
		if (!t->tid || t->end)
			continue;
		if (t->state == CP_SW_OFF) {
			/* Off the CPU when the profile ended: charged up to
			 * the end. */
			give(s, t, t->out_time, time, t->out_flags, 1);
		} else if (t->state == CP_SW_UNKNOWN) {
			/* No event in the whole profile: it never ran. */
			give(s, t, t->start, time, CP_OFF_CPU | (t->new_thread ? CP_OFF_RUNNABLE : CP_OFF_BEFORE), 0);
		} else {
			ran_until(t, time);
		}
		t->end = time > t->start ? time : t->start;
	}
}

void cp_switches_check(const struct cp_switches *s, int64_t (*cpu_ns)(void *arg, pid_t tid), void *arg,
		       uint64_t min_life_ns, struct cp_switch_check *out)
{
	memset(out, 0, sizeof *out);
	double worst = -1;
	const struct cp_switch_thread *all = s->threads.e;
	for (size_t i = 0; i < s->threads.cap; i++) {
		const struct cp_switch_thread *t = &all[i];
		if (!t->tid || !t->end || t->end - t->start < min_life_ns)
			continue;
		int64_t cpu = cpu_ns(arg, t->tid);
		if (cpu < 0)
			continue;
		uint64_t life = t->end - t->start;
		double r = ((double)cpu + (double)t->off_ns) / (double)life;
		double d = r > 1 ? r - 1 : 1 - r;
		if (!out->threads || r < out->min)
			out->min = r;
		if (!out->threads || r > out->max)
			out->max = r;
		out->threads++;
		if (d > worst) {
			worst = d;
			out->worst = t->tid;
			out->life_ns = life;
			out->cpu_ns = (uint64_t)cpu;
			out->off_ns = t->off_ns;
		}
	}
}

void cp_switch_check_add(struct cp_switch_check *a, const struct cp_switch_check *b)
{
	if (!b->threads)
		return;
	double da = a->max - 1 > 1 - a->min ? a->max - 1 : 1 - a->min;
	double db = b->max - 1 > 1 - b->min ? b->max - 1 : 1 - b->min;
	if (!a->threads || db > da) {
		a->worst = b->worst;
		a->life_ns = b->life_ns;
		a->cpu_ns = b->cpu_ns;
		a->off_ns = b->off_ns;
	}
	if (!a->threads || b->min < a->min)
		a->min = b->min;
	if (!a->threads || b->max > a->max)
		a->max = b->max;
	a->threads += b->threads;
}
