/*
 * ehframe.h -- a parser of .eh_frame_hdr and .eh_frame (the DWARF call
 * frame information every ELF object carries for exception unwinding):
 * CIEs, FDEs and their CFA programs, reduced to what a stack walk needs
 * (the unwind rules of src/sig/unwind_table.h) as sorted rows.  Not signal
 * context: it allocates.  Every read is checked against the input's size,
 * so malformed or truncated input gives an error, never a crash.
 */
#ifndef CPUPROF_EHFRAME_H
#define CPUPROF_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "sig/unwind_table.h"

/* One function's rules: rows[first .. first + nrows), the first at start,
 * each in force until the next row's pc or end. */
struct ehf_fde {
	uint64_t start, end;
	uint32_t first, nrows;
};

struct ehf_row {
	uint64_t pc;
	struct cp_urule rule;
};

/* A parse result: fdes sorted by start, disjoint. */
struct ehf_result {
	struct ehf_fde *fdes;
	size_t nfdes;
	struct ehf_row *rows;
	size_t nrows;
	size_t entries;  /* FDE entries seen in .eh_frame (used or not) */
	size_t used;     /* bytes of .eh_frame read: up to its terminator */
};

/* A range of code addresses an FDE may describe: FDEs outside every range
 * given (left over from discarded sections) are ignored. */
struct ehf_range {
	uint64_t lo, hi;
};

/* Reads the .eh_frame_hdr at hdr[0..size), which lives at address
 * hdr_addr: the address of .eh_frame into *eh_frame and the number of FDEs
 * its search table lists into *fde_count (0 if it has none).  Returns 0,
 * or -1 with a reason in err. */
int cp_ehframe_hdr_parse(const uint8_t *hdr, size_t size, uint64_t hdr_addr, uint64_t *eh_frame,
		      size_t *fde_count, char *err, size_t errlen);

/* Parses the .eh_frame at data[0..size), which lives at address addr (run
 * time or link time: rows come out in the same addresses).  Parsing stops
 * at a zero terminator, at the end of the data, or once fde_count FDEs have
 * been seen if fde_count is not 0 (fewer is an error: a truncated
 * section).  FDEs are kept if they lie inside one of text[0..ntext).
 * Returns 0 and fills *out (free with cp_ehframe_free), or -1 with a reason
 * in err: the whole section is then rejected. */
int cp_ehframe_parse(const uint8_t *data, size_t size, uint64_t addr, size_t fde_count,
		  const struct ehf_range *text, size_t ntext, struct ehf_result *out, char *err,
		  size_t errlen);

void cp_ehframe_free(struct ehf_result *r);

#endif
