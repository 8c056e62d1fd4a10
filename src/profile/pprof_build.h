/*
 * pprof_build.h -- the inside of the pprof writer (pprof_write.h): the
 * builder of a Profile message and its tables (strings, functions, lines,
 * locations, mappings), shared by pprof_write.c (the tables, the samples,
 * the file) and pprof_names.c (each location's functions and lines, from
 * the symbol tables and the DWARF).
 */
#ifndef CPUPROF_PROFILE_PPROF_BUILD_H
#define CPUPROF_PROFILE_PPROF_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "pprof_write.h"
#include "protobuf.h"

/* Open-addressing map from a 64-bit key to a non-zero 32-bit value (0
 * marks an empty slot), kept at most half full. */
struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, len; /* cap is 0 or a power of two */
};

/* A Location: its Lines are lines[line0 .. line0 + nlines). */
struct location {
	uint64_t addr;
	uint32_t mapping;
	uint32_t part;   /* whose address space it is in */
	uint32_t seg;    /* 1 + symbols segment index of its part, 0 if in none */
	uint32_t line0, nlines;
};

struct line {
	uint32_t function;
	uint32_t line;
};

struct function {
	uint32_t name, system_name, filename; /* string indexes */
	uint32_t start_line;
};

/* Per Mapping: what its Locations have. */
struct mapflags {
	unsigned char filenames, line_numbers, inline_frames;
};

/* What the builder keeps per part (an address space). */
struct part_state {
	const struct cp_profile_part *p;
	struct idmap locmap;       /* address -> location id */
	uint32_t *segmapping;      /* per segment: mapping id or 0 */
	struct mapflags *mapflags; /* per segment */
	uint32_t pid_str;          /* its "process" label's string, or 0 */
	struct idmap jitregion;    /* a JIT region's start -> 1 + its index in jitmaps */
	struct idmap tidname;      /* thread id -> 1 + its "thread" label's string (0: none): asked once */
};

/* A Mapping of JIT code: the anonymous mapping its code is in (or, where
 * that is not known, the named range itself). */
struct jitmap {
	uint32_t id;
	uint64_t lo, hi;
	unsigned char lines;       /* some Location of it has a source line */
};

struct builder {
	struct part_state *parts;
	size_t nparts, cur;        /* the part whose samples are being encoded */
	struct pb_buf pb;
	int err; /* ENOMEM once anything failed */

	char **strs; /* string table; strs[0] is "" */
	size_t nstrs, capstrs;
	uint32_t *strindex; /* open addressing: 1 + string index, 0 empty */
	size_t nstrindex, nindexed;

	struct location *locs; /* location id i + 1 is locs[i] */
	size_t nlocs, caplocs;

	struct line *lines;
	size_t nlines, caplines;

	struct function *fns; /* function id i + 1 is fns[i] */
	size_t nfns, capfns;
	uint32_t *fnindex; /* open addressing: function id, 0 empty */
	size_t nfnindex;

	uint32_t nmappings;
	/* Sample times (times.h): each list is moved this many units
	 * earlier, to count from the profile's start; the list being
	 * written. */
	const struct cp_time_base *times;
	uint64_t times_shift;
	uint8_t *tbuf;
	size_t tlen, tcap;
	struct jitmap *jitmaps;
	size_t njitmaps, capjitmaps;
	size_t jitlocs;            /* Locations named by a JIT */
	/* The profile's own comments (lines_missing=...), malloc'd. */
	char **comments;
	size_t ncomments, capcomments;
	/* Pseudo-frame locations, or 0 until used. */
	uint32_t truncated_loc, nostack_loc, waiting_loc, before_loc;
	/* The values per Sample: 2, or 4 with off-CPU time (meta.off_cpu). */
	size_t nvalues;
	/* The file, written as the profile is encoded: once pb holds
	 * CP_PB_SPILL bytes between two Samples they are compressed into it
	 * and pb starts again, so that a big profile is never whole in
	 * memory.  fd -1: none (pb keeps everything). */
	int fd;
	struct gz_out *gz;  /* NULL until the first bytes go out */
	int werr;           /* a negative errno once writing failed */
};

/* Encoded bytes the builder holds before it compresses them into the file. */
#define CP_PB_SPILL (256u << 10)

/* The string index of s, interned (0 for "", and when out of memory). */
uint32_t cp_pb_str_intern(struct builder *b, const char *s);
/* The function of these strings, made if new; 0 if out of memory. */
uint32_t cp_pb_function_id(struct builder *b, uint32_t name, uint32_t system_name, uint32_t filename,
			   uint32_t start_line);
/* A function of its own named `name` (a pseudo-frame's). */
uint32_t cp_pb_function_unique(struct builder *b, const char *name);
/* Appends a Line of `function` at `line` to location l. */
void cp_pb_line_add(struct builder *b, struct location *l, uint32_t function, uint32_t line);
/* A comment of the profile's own. */
__attribute__((format(printf, 2, 3))) void cp_pb_add_comment(struct builder *b, const char *fmt, ...);
/* Every location's functions and lines (pprof_names.c). */
void cp_pb_symbolize(struct builder *b);

#endif
