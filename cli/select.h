/*
 * select.h -- a part of a profile: the samples of some processes or
 * threads, within a range of time.  `report` and `diff` read a profile,
 * select, and go on as if the file held only that part.
 */
#ifndef CPUPROF_CLI_SELECT_H
#define CPUPROF_CLI_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flags.h"
#include "pprof_read.h"

struct profile_selection {
	bool from_set, to_set;
	double from, to;       /* seconds since the profile's start */
	long *pids, *tids; /* NULL: all */
	size_t npids, ntids;
};

/* The flags that make a selection, for a command's table; their help. */
#define SELECT_FLAG_HELP_FROM "only the samples taken from T seconds after the profile's start (250ms, 1.5s, 2m)"
#define SELECT_FLAG_HELP_TO "only those taken before T seconds after the start"
#define SELECT_FLAG_HELP_PID "only the samples of process PID[,PID...]"
#define SELECT_FLAG_HELP_TID "only the samples of thread TID[,TID...]"

/* The selection of a command's --from, --to, --pid and --tid into *sel
 * (free it with select_free()): 0, or -1 after refusing the command line
 * (flags_refuse) for a bad list of ids or --to not after --from. */
int select_flags(const struct flags *fs, struct flag_value from, struct flag_value to, struct flag_value pid,
		 struct flag_value tid, struct profile_selection *sel);
void select_free(struct profile_selection *sel);

/* Whether sel selects anything less than the whole. */
bool select_any(const struct profile_selection *sel);

/* Makes p the part sel selects, in place: samples of other processes and
 * threads go; with a range, each sample keeps the times within it (an
 * off-CPU interval the part of it within it) and its values shrink to
 * theirs, a sample without times goes (the profile's lost samples and
 * unsampled CPU, which have no time), the times count from the range's
 * start, and time_nanos and duration_nanos are the range's.  A comment
 * "selection=..." says what was kept.  0; 1 if nothing of p is selected
 * (a range outside it, processes or threads it has no sample of: p is
 * then empty, and err[errlen] says why, for a caller none of whose
 * profiles had anything); or -1 with the reason in err[errlen]: a range
 * asked of a profile without times, out of memory. */
int profile_select(struct profile *p, const struct profile_selection *sel, char *err, size_t errlen);

#endif
