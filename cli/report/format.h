/*
 * format.h -- how `cpuprof report` writes numbers: values in their unit
 * (times scaled to s/ms/us/ns), shares as percentages like pprof's, and
 * saturating sums for values a hostile profile may make overflow.
 */
#ifndef CPUPROF_CLI_FORMAT_H
#define CPUPROF_CLI_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pprof_read.h" /* sat_add */


/* Nanoseconds per unit for time units ("nanoseconds", "ms", ...), 0 for
 * anything else. */
double ns_per_unit(const char *unit);

/* Formats v (in `unit`) into buf: times scaled to s/ms/us/ns with two
 * decimals and no ".00", other units as plain integers. */
void format_value(char *buf, size_t len, int64_t v, const char *unit);

/* v as a percentage of total with two decimals ("0%" and "100%" without,
 * as pprof does). */
void format_pct(char *buf, size_t len, int64_t v, int64_t total);

/* The length of the valid UTF-8 sequence at s[0..n) (1 to 4 bytes; no
 * overlong forms, surrogates or code points above U+10FFFF), or 0 if s
 * does not start with one. */
size_t utf8_char_len(const unsigned char *s, size_t n);

/* Writes name s to out for a text format: every byte that is not part of
 * valid UTF-8 becomes U+FFFD, control characters (C0, DEL, C1) become '?', and so do
 * the bytes in `also` (";" for folded stacks), so that a hostile name can
 * neither forge lines nor send escape sequences to a terminal. */
void put_name(FILE *out, const char *s, const char *also);

/* Writes frame f of a folded stack: its label, a kernel's or a JIT's
 * with flamegraph.pl's mark of its kind in place of the label's:
 * "name_[k]", "name_[j]". */
struct frame;
void put_frame_folded(FILE *out, const struct frame *f);

#endif
