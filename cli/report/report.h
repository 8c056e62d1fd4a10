/*
 * report.h -- the formats of `cpuprof report`.  report.c parses the
 * options, reads and merges the profiles (stacks.h) and calls one of these
 * writers; each writes to `out` and returns 0, or -1 if out of memory
 * (nothing else can fail once the profiles are read).
 */
#ifndef CPUPROF_CLI_REPORT_H
#define CPUPROF_CLI_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "pprof_read.h"
#include "shares.h"
#include "stacks.h"

/* The profiles being reported, as read, and their file names. */
struct report_input {
	struct profile *const *profiles;
	const char *const *names;
	size_t n;
};

/* The comments of each profile that its header shows (the text formats'
 * and the flame graph's), in this order; NULL-terminated. */
extern const char *const report_comment_keys[];

/* Prints p's report_comment_keys as key=value on one line (preceded by
 * `prefix`), but engine_reason, which is long, on a line of its own, then
 * its warning (each line preceded by `prefix`). */
void header_comments(FILE *out, const struct profile *p, const char *prefix);

/* The header of the text formats: each profile's comments that matter
 * (engine, hz, samples, lost, coverage, attributed, unwind; one line per
 * profile when several are merged), any warning, the sample type when it
 * is not CPU time, the duration (summed over the profiles) and the total. */
void header_print(FILE *out, const struct report_input *in,
		  const struct stackset *ss);

/* `--format top`: the `top` functions (0: all) with the most flat value,
 * like `go tool pprof -top`; with_intervals (--intervals) puts each
 * share's 95% interval from the sampling beside it (shares.h). */
int top_write(FILE *out, const struct report_input *in,
	      const struct stackset *ss, long top, bool with_intervals);

/* `--format tree`: the call tree from the roots, children by total, each
 * line with total and self values and shares; subtrees whose total is
 * below min_share percent of the whole are summarised in one line. */
int tree_write(FILE *out, const struct report_input *in,
	       const struct stackset *ss, double min_share);

/* `--format folded`: one line "root;...;leaf VALUE" per distinct stack
 * with a non-zero value, in name order. */
int folded_write(FILE *out, const struct stackset *ss);

/* Folded stacks' lines, "root;...;leaf", of call tree paths (folded.c):
 * each frame's text made once, and each line keeping the prefix it shares
 * with the line before, as the paths of a walk share theirs. */
struct folded_lines {
	const struct stackset *ss;
	const struct calltree *t;
	char **text;     /* per frame, made on first use */
	size_t *textlen;
	char *line;      /* the frames of nodes[0..have), ending at end[] */
	size_t capline;
	uint32_t *nodes;
	size_t *end, have, capnodes, capend;
};
/* 0, or -1 out of memory (fl is then still to be freed). */
int folded_lines_init(struct folded_lines *fl, const struct stackset *ss, const struct calltree *t);
void folded_lines_free(struct folded_lines *fl);
/* The line of path[0..depth) (t's nodes, depth > 0) in *len bytes, not
 * terminated; NULL if out of memory. */
const char *folded_line(struct folded_lines *fl, const uint32_t *path, size_t depth, size_t *len);
/* qsort_r order of t's nodes by their frames' names, arg a folded_lines:
 * the order of folded stacks' lines. */
int folded_by_label(const void *a, const void *b, void *arg);

/* `--format speedscope`: speedscope's JSON file, a profile per thread of
 * its samples in time order (speedscope.c).  ss's stacks must have the
 * grouping frames of GROUP_THREAD at their root. */
int speedscope_write(FILE *out, const struct report_input *in, const struct stackset *ss);

/* `--format html`: the self-contained flame graph page (flame.c). */
int flame_write(FILE *out, const struct report_input *in,
		const struct stackset *ss);

/* What a flame graph page draws (flame_page()): a call tree of ss,
 * each node's own value, and its samples' sums for the tooltips'
 * intervals (shares.h). */
struct flame_tree {
	const struct calltree *t;
	const int64_t *self;           /* per leaf (calltree_leaf_index()):
					  its own value drawn (NULL: the
					  tree's self) */
	const double *q;               /* per leaf: its own samples' sum of
					  w^2 (share_nodes_self_q()) */
	const struct share_base *base; /* the drawn samples' totals */
	int64_t total;                 /* the drawn samples' value */
	const char *title;             /* NULL: the profiles' names */
	/* If not NULL: meta writes members of its own into the data's
	 * header, each preceded by ','; node writes, for each node written,
	 * its entries of the data's "extra" array (after a ',' but for the
	 * first node), in the order of the nodes, at p (at most
	 * FLAME_NODE_MAX bytes), returning their end. */
	void (*meta)(FILE *out, void *arg);
	char *(*node)(char *p, uint32_t node, void *arg);
	void *arg;
	/* The other values the page's menu offers (profiles of off-CPU
	 * time: cpu, off_cpu, wall), nalt of them, each with what the fields
	 * above give for the drawn one; a node is left out only if it holds
	 * none of them. */
	size_t nalt;
	struct flame_alt {
		const char *name, *unit;
		int64_t total;
		struct share_base base;
		int64_t *self; /* per leaf */
		double *q;     /* per leaf */
	} *alt;
	/* Whether the page has a timeline of the samples' times (report's
	 * page; diff's has none). */
	bool timeline;
};

/* Writes the flame graph page of ft, with in's profiles in its header.
 * Subtrees whose value is 0 are left out.  Returns 0, -1 if out of
 * memory. */
int flame_page(FILE *out, const struct report_input *in,
	       const struct stackset *ss, const struct flame_tree *ft);

/* The data's "timeline" member (timeline.c): each Sample's times, lane
 * (thread) and values, its stack as the page's node pindex[node] of t (0:
 * none), or why there is no timeline.  Returns 0, -1 if out of memory. */
int timeline_write(FILE *out, const struct report_input *in, const struct stackset *ss, const struct calltree *t,
		   const uint32_t *pindex, const struct flame_tree *ft);

/* Writes s as a JSON string that is safe inside the page's <script>. */
void flame_json_string(FILE *out, const char *s);

/* Writes v >= 0 as a JSON number with at most three decimals, quickly
 * (%.6g beyond 1e15, 0 for what is not a number). */
void flame_put_number(FILE *out, double v);
/* The same text at p (at most FLAME_NUMBER_MAX bytes); returns its end. */
#define FLAME_NUMBER_MAX 32
/* The most a flame_tree's node() writes for a node. */
#define FLAME_NODE_MAX 128
char *flame_number(char *p, double v);

/* `--list REGEX`: the source of every function whose name matches, each
 * line with its flat and cum values, like `go tool pprof -list`.  Returns
 * 0, -1 if out of memory; writes a line saying so when nothing matches or
 * a source file cannot be read. */
int list_write(FILE *out, const struct report_input *in,
	       const struct stackset *ss, const char *regex);

/* Runs fn(out, arg) with out the file `path`, written whole (base/outfile.h:
 * a temporary file beside it renamed over it once complete, or into it if
 * it is not a regular file), or with out stdout if path is NULL or "-",
 * so that a failed report leaves no partial file.  `cmd` names the
 * command in messages ("report").  Returns 0, or EXIT_USAGE after a
 * message if fn returned -1 (out of memory) or the output could not
 * be written. */
int report_output(const char *path, const char *cmd,
		  int (*fn)(FILE *out, void *arg), void *arg);
/* Whether `path` (-o's) is one of files[0..n), the profiles read (the
 * same file by any name): says so, as command `cmd`, if it is. */
bool report_output_is_input(const char *path, const char *cmd, const char *const *files, size_t n);

#endif
