/*
 * pprof_read.h -- the CLI's reader of pprof profiles (profile.proto, gzipped
 * or not).  profile_read_file() loads a file into a struct profile whose
 * every cross-reference has been checked and resolved to a pointer: string
 * indexes become C strings, ids become pointers to the object they name.
 * Any malformed input yields an error message, never a crash.  Used by
 * `cpuprof report` and `cpuprof diff`.
 */
#ifndef CPUPROF_CLI_PPROF_READ_H
#define CPUPROF_CLI_PPROF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reader's bounds, so that its time and memory follow the size of its
 * input (README, "Input bounds"):
 * - a file is at most PROFILE_MAX_FILE bytes;
 * - gzip data inflates to at most PROFILE_MAX_RATIO times its compressed
 *   size plus PROFILE_RATIO_SLACK bytes, and never beyond
 *   PROFILE_MAX_DECODED (a plain protobuf is bounded by its file size);
 * - the frames of all samples, each location counted once per inline
 *   level (Line) and once per sample that lists it, are at most
 *   PROFILE_FRAMES_PER_BYTE per byte of protobuf plus PROFILE_FRAMES_SLACK:
 *   every reader that walks the stacks does work in proportion to these;
 * - the samples' times (cpuprof's lists, profile/times.h) take at most
 *   PROFILE_MAX_TIMES bytes, each a time of 16 bytes read (and as much
 *   again for each command that selects or orders them). */
#define PROFILE_MAX_FILE (1ull << 30)
#define PROFILE_MAX_DECODED (1ull << 30)
#define PROFILE_MAX_RATIO 64
#define PROFILE_RATIO_SLACK (1ull << 20)
#define PROFILE_FRAMES_PER_BYTE 32
#define PROFILE_FRAMES_SLACK (4ull << 20)
#define PROFILE_MAX_TIMES (64ull << 20)

/* Strings below are NUL-terminated copies of string-table entries (an
 * entry containing a NUL byte is cut there); never NULL. */
struct profile_value_type {
	const char *type; /* e.g. "cpu" */
	const char *unit; /* e.g. "nanoseconds" */
};

struct profile_function {
	uint64_t id;
	const char *name;
	const char *system_name;
	const char *filename;
	int64_t start_line;
};

struct profile_mapping {
	uint64_t id;
	uint64_t memory_start, memory_limit, file_offset;
	const char *filename;
	const char *build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

/* One frame of a location; a location with inlined calls has several. */
struct profile_line {
	const struct profile_function *function; /* NULL if function_id was 0 */
	int64_t line;
};

struct profile_location {
	uint64_t id;
	const struct profile_mapping *mapping; /* NULL if mapping_id was 0 */
	uint64_t address;
	const struct profile_line *lines; /* lines[0] is the innermost frame */
	size_t nlines;
	bool is_folded;
};

/* A Sample's label: key and either str (num 0) or num (str ""), with
 * num_unit naming num's unit ("" if none).  cpuprof writes pid, tid (num)
 * and process, thread (str). */
struct profile_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

/* When one sample of a Sample was taken (cpuprof's profiles: times.h):
 * ns since the profile's start (off-CPU: when the thread left the CPU),
 * and its weight, its part of the Sample's CPU and off-CPU ns (the
 * weights of a Sample add up to them). */
struct profile_time {
	int64_t t;
	int64_t weight;
};

struct profile_sample {
	const struct profile_location *const *locations; /* [0] is the leaf */
	size_t nlocations;
	const int64_t *values; /* exactly profile.nsample_types of them */
	const struct profile_label *labels; /* in file order */
	size_t nlabels;
	const struct profile_time *times; /* in time order; NULL if none */
	size_t ntimes;
};

struct profile {
	struct profile_value_type *sample_types;
	size_t nsample_types;
	struct profile_sample *samples;
	size_t nsamples;
	struct profile_mapping *mappings; /* in file order */
	size_t nmappings;
	struct profile_location *locations; /* in file order */
	size_t nlocations;
	struct profile_function *functions; /* in file order */
	size_t nfunctions;
	const char **strings; /* the string table; strings[0] is "" */
	size_t nstrings;
	const char **comments;
	size_t ncomments;
	/* Frames of all samples: sum over samples and their locations of the
	 * location's lines (1 for a location without any). */
	size_t nframes;
	const char *drop_frames, *keep_frames, *default_sample_type;
	int64_t time_nanos, duration_nanos;
	struct profile_value_type period_type;
	int64_t period;
	/* The unit of its samples' times, ns; 0: its samples have none. */
	uint64_t time_unit_ns;

	/* Private: pools the arrays above point into; see profile_free(). */
	struct {
		void *text, *lines, *locptrs, *values, *labels, *times;
		void *sel_values, *sel_times, *sel_comment; /* select.h */
	} priv_;
};

/* a + b, clamped to the int64_t range: sums of a profile's values, which
 * a hostile file may set to anything. */
static inline int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Reads the pprof file `path` (gzip-compressed or a plain protobuf).  On
 * success returns 0 and stores a new profile in *out (free it with
 * profile_free()).  On failure returns -1, leaves *out NULL and writes a
 * one-line reason without the file name (e.g. "truncated gzip data") to
 * err[errlen]. */
int profile_read_file(const char *path, struct profile **out, char *err,
		      size_t errlen);

/* The protobuf of the pprof file `path`, inflated if it is gzipped, as a
 * new buffer *out of *len bytes (the caller frees it), within the same
 * bounds; for a command that rewrites a profile (symbolize) and parses it
 * with profile_parse() too.  0, or -1 with the reason in err[errlen]. */
int profile_read_protobuf(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen);

/* Like profile_read_file() on the `len` bytes at `data`, which the caller
 * keeps ownership of. */
int profile_parse(const void *data, size_t len, struct profile **out,
		  char *err, size_t errlen);

/* Releases a profile from profile_read_file() or profile_parse(); NULL is
 * allowed. */
void profile_free(struct profile *p);

/* Frees p's samples (their locations, values, labels and times) and
 * leaves it none, keeping the rest: types, mappings, locations,
 * functions, strings, comments.  For a command that is done with them
 * once it has read them into a stackset (report/stacks.h) and goes on to
 * read more. */
void profile_drop_samples(struct profile *p);

/* Returns the value of the first comment of the form "key=value" in `p`, or
 * NULL if there is none.  The pointer is into p and lives as long as p. */
const char *profile_comment(const struct profile *p, const char *key);

/* Returns the first label of sample s with `key`, or NULL. */
const struct profile_label *profile_label(const struct profile_sample *s,
					  const char *key);
/* The number of sample s's label `key` when it has a numeric one (*has),
 * else 0; its text, else "". */
int64_t profile_label_num(const struct profile_sample *s, const char *key, bool *has);
const char *profile_label_str(const struct profile_sample *s, const char *key);
/* Orders samples by thread: pid, else the process's name; then tid, else
 * the thread's name.  A thread renamed while it ran stays one thread:
 * what every format that splits by thread (the page's lanes, speedscope)
 * calls a thread. */
int profile_thread_cmp(const struct profile_sample *a, const struct profile_sample *b);
/* The threads of samples s[0..n) (of one profile or several), in
 * profile_thread_cmp's order: thread[i] is the number of s[i]'s thread,
 * first[t] the first i of thread t (n entries each).  Samples that share
 * their label list (the reader gives equal lists one copy) are compared
 * once.  The number of threads, or SIZE_MAX if out of memory. */
size_t profile_thread_order(const struct profile_sample *const *s, size_t n, uint32_t *thread, uint32_t *first);

/* Returns the index of the sample type type/unit in p->sample_types, or -1
 * if there is none. */
int profile_find_sample_type(const struct profile *p, const char *type,
			     const char *unit);

#endif
