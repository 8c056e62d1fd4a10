/*
 * judge.h -- a profile's comments and warning from its facts (facts.h).
 * Shared by the library and `cpuprof record`; not signal context.
 */
#ifndef CPUPROF_JUDGE_H
#define CPUPROF_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "facts.h"
#include "pprof_write.h"

/* The profile's comments: "key=value" strings in one buffer. */
#define CP_MAX_COMMENTS 160
struct cp_comments {
	const char *list[CP_MAX_COMMENTS];
	size_t n, used;
	char buf[32768];
};

/* Appends a comment; one that does not fit is dropped whole. */
void cp_comment(struct cp_comments *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A profile's warning: one clause per way in which the profile is not
 * what was asked for, "; " between them, "" if none.  It has room for
 * every clause at once (tests/unit/unit_judge.c): no caller chooses a
 * smaller buffer, so none can cut one. */
#define CP_WARNING_MAX 4096
struct cp_warning {
	char text[CP_WARNING_MAX];
};

/* The warning for f. */
void cp_judge(const struct cp_facts *f, struct cp_warning *w);
/* Appends a clause to w. */
void cp_warning_add(struct cp_warning *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The comments that say how f's profile was taken and what it covers,
 * with the warning (if not empty). */
void cp_facts_comments(struct cp_comments *c, const struct cp_facts *f, const char *warning);

/* The frames that are not code (lost samples, CPU no sample saw, cpuprof's
 * own thread, what ran before the profile), as samples of the profile;
 * returns how many (CP_FACTS_PSEUDO). */
#define CP_FACTS_PSEUDO 6
/* Two of them: the kernel's time where only user-mode samples are
 * allowed, and the switches' time the task clock does not count. */
#define CP_FRAME_KERNEL_UNSAMPLED "[kernel: unsampled, user-mode samples only]"
#define CP_FRAME_WAKEUP "[kernel: switching threads in, not counted by perf's clock]"
size_t cp_facts_pseudo(const struct cp_facts *f, struct cp_pseudo_sample out[CP_FACTS_PSEUDO]);
const char *cp_facts_unsampled_frame(const struct cp_facts *f);

/* The CPU the profile accounts for, and the share of f->cpu_ns it is. */
uint64_t cp_facts_profile_ns(const struct cp_facts *f);
double cp_facts_coverage(const struct cp_facts *f);
/* The samples the rate asks for over f->cpu_ns. */
uint64_t cp_facts_expected(const struct cp_facts *f);
/* The mean CPU between two waits of the program's threads. */
int64_t cp_facts_mean_run_ns(const struct cp_facts *f);

#endif
