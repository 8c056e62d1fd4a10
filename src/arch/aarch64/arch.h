/*
 * arch.h (aarch64) -- register access in a signal's ucontext and the frame
 * record layout.  The only place that names AArch64 registers.
 *
 * AAPCS64: x29 is the frame pointer, x30 the link register.  A bl/blr puts
 * the return address in x30, not on the stack; a function that calls
 * others stores {x29, x30} as a 16-byte frame record and points x29 at it.
 * So at a leaf (gcc builds leaves without a frame record, even with
 * -fno-omit-frame-pointer), at a function's first instructions before
 * `mov x29, sp`, and after the epilogue's `ldp x29, x30`, the caller's
 * return address is only in x30 and x29 still points at the caller's own
 * record.  Everywhere else x30 is stale (it points into the function
 * itself after a call returned) or holds scratch data.  The generic walk
 * cannot tell these apart from registers alone: see cp_uc_lr.
 */
#ifndef CPUPROF_ARCH_H
#define CPUPROF_ARCH_H

#include <stdint.h>
#include <ucontext.h>

#define CP_ARCH_NAME "aarch64"

static inline uintptr_t cp_uc_pc(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.pc; }
static inline uintptr_t cp_uc_sp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.sp; }
static inline uintptr_t cp_uc_fp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.regs[29]; }

/* The link register (x30) at the interrupt: the return address of the
 * interrupted function while it has not stored it in its frame record (a
 * leaf, a prologue, an epilogue).  The frame-pointer walk offers it as the
 * caller of frame 0 unless it equals the return address in the record at
 * x29; the profile writer keeps it only if it lies outside the function
 * that contains the pc (else it is stale).  Architectures whose calls push
 * the return address return 0 here. */
static inline uintptr_t cp_uc_lr(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.regs[30]; }

/* An AAPCS64 frame record is {saved x29, saved x30} at the address in x29. */
#define CP_FRAME_FP_SLOT 0
#define CP_FRAME_RA_SLOT 1

/* DWARF register numbers (DWARF for the Arm 64-bit Architecture): x0-x30
 * are 0-30, sp is 31; the return address column of .eh_frame CIEs is 30
 * (x30), whose rule is "same value" at a leaf and until the prologue
 * stores it.  pc has no DWARF number: a step's new pc is the return
 * address. */
#define CP_DWARF_FP 29
#define CP_DWARF_RA 30
#define CP_DWARF_SP 31

/* The value of DWARF register `reg` (0-31) in uc; 0 for other numbers. */
static inline uintptr_t cp_uc_dwarf_reg(const ucontext_t *uc, unsigned reg)
{
	if (reg < 31)
		return (uintptr_t)uc->uc_mcontext.regs[reg];
	return reg == CP_DWARF_SP ? (uintptr_t)uc->uc_mcontext.sp : 0;
}

#endif
