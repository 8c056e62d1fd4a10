/*
 * times.h -- when each sample was taken: the profile's sample times, kept
 * with each distinct stack (stacktab.h) while recording and written into
 * its pprof Sample as a field of its own (SAMPLE_TIMES, profile_proto.h),
 * which pprof readers skip as they skip every field they do not know.
 *
 * The format, one list per Sample: for each of its samples in time order,
 * the varint (delta << 1 | irregular), delta the time since the Sample's
 * previous sample (the first: since the profile's start) in units of
 * PROFILE_TIME_UNIT_NS (the profile's unit: the sampling period, at most
 * 1 ms), and, if irregular, the varint of its weight in microseconds.  A
 * regular sample weighs what the Sample's CPU (or off-CPU) nanoseconds
 * leave over the irregular ones, shared equally: a sample is regular when
 * its weight is within an eighth of the period, as nearly all are, so
 * that a time costs about a byte after gzip.  Off-CPU intervals are
 * always irregular: their time is when the thread left the CPU, their
 * weight how long it stayed off.  Why a list per Sample, not a label per
 * sample: a label costs about 10 bytes a sample and repeats the stack
 * once per sample; the list adds 1.2-1.7 bytes (docs/report.md, "Sample
 * times").
 */
#ifndef CPUPROF_TIMES_H
#define CPUPROF_TIMES_H

#include <stddef.h>
#include <stdint.h>

/* The clock of a profile's times: CLOCK_MONOTONIC ns at its start, its
 * unit and the sampling period that makes a sample regular. */
struct cp_time_base {
	uint64_t t0_ns;
	uint64_t unit_ns;   /* 0: times are not kept */
	uint64_t period_ns;
};

/* Sets the base every stack table keeps its times in (one profile is
 * recorded per process at a time: the library's session, or record's):
 * t0_ns the start, period_ns the sampling period (the unit is that, at
 * most 1 ms, at least 1 us). */
void cp_times_begin(uint64_t t0_ns, uint64_t period_ns);
/* Stops keeping times (what is kept stays readable). */
void cp_times_end(void);
/* The base now, or NULL if times are not kept. */
const struct cp_time_base *cp_times_base(void);

/* The most the lists of a process may hold: 16 MiB, 8 to 16 million
 * samples (about 40 minutes of 4 threads at 1 kHz).  A sample past it is
 * kept without its time (but for what fits in its stack's struct, which
 * takes no more memory), and the profile is then written without times
 * (with a comment that says so) until every list has been freed (a
 * window of record --every, which is how long runs keep them). */
#define CP_TIMES_MAX_BYTES (16u << 20)
/* Whether a sample's time was refused since the lists last held none. */
int cp_times_dropped(void);

/* One stack's times, encoded as above relative to the base's t0.  A list
 * of at most CP_TIMES_SMALL bytes is kept in the struct itself (most of a
 * big profile's stacks are sampled once or twice: a malloc each was most
 * of what their times cost), a longer one in the heap, where it moves
 * when it outgrows the struct; cp_times_bytes() is where it is. */
#define CP_TIMES_SMALL 8
struct cp_times {
	union {
		uint8_t *buf;                  /* cap > 0: in the heap */
		uint8_t small[CP_TIMES_SMALL]; /* cap 0: here */
	};
	uint32_t len, cap; /* cap: of buf, at most CP_TIMES_MAX_BYTES */
	uint64_t last;     /* units since t0 of the last time added */
};

/* The bytes of t's list (t->len of them). */
static inline const uint8_t *cp_times_bytes(const struct cp_times *t)
{
	return t->cap ? t->buf : t->small;
}

/* Appends a sample taken at time_ns (CLOCK_MONOTONIC) weighing weight_ns;
 * `irregular` forces its weight to be written.  A time before the last is
 * taken as the last.  0; -E2BIG past CP_TIMES_MAX_BYTES, or -ENOMEM
 * (t unchanged either way). */
int cp_times_add(struct cp_times *t, const struct cp_time_base *base, uint64_t time_ns, uint64_t weight_ns,
		 int irregular);
/* dst (not initialised) as a copy of src.  0 or -ENOMEM (dst empty). */
int cp_times_copy(struct cp_times *dst, const struct cp_times *src);
void cp_times_free(struct cp_times *t);

/* A reader of one list. */
struct cp_times_reader {
	const uint8_t *p, *end;
	uint64_t at; /* units since the start, of the last read */
};
/* The next sample: its time in units since the start and its weight in
 * us, or -1 if regular.  1, 0 at the end, -1 if the list is malformed. */
int cp_times_next(struct cp_times_reader *r, uint64_t *at, int64_t *weight_us);

/* The list `src` of n bytes, its times moved `shift` units earlier (those
 * that would fall before 0 at 0), appended to *out (a buffer of *len
 * bytes, *cap allocated): how a list relative to the base's t0 becomes
 * relative to a profile's start.  0, or -1 malformed or out of memory. */
int cp_times_rebase(const uint8_t *src, size_t n, uint64_t shift, uint8_t **out, size_t *len, size_t *cap);

#endif
