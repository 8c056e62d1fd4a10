/*
 * arch.h (aarch64) -- register access in a signal's ucontext, the frame
 * record layout, the DWARF register numbers the unwind tables speak of and
 * where the kernel's signal frame keeps the interrupted context.  The only
 * place that names AArch64 registers.
 */
#ifndef CPUPROF_ARCH_H
#define CPUPROF_ARCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include <asm/perf_regs.h>

#define CP_ARCH_NAME "aarch64"

static inline uintptr_t cp_uc_pc(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.pc; }
static inline uintptr_t cp_uc_sp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.sp; }
static inline uintptr_t cp_uc_fp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.regs[29]; }

/* Setters, for tests that build contexts by hand. */
static inline void cp_uc_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t lr)
{
	uc->uc_mcontext.pc = pc;
	uc->uc_mcontext.sp = sp;
	uc->uc_mcontext.regs[29] = fp;
	uc->uc_mcontext.regs[30] = lr;
}

/* An AAPCS64 frame record is {saved x29, saved x30} at the address in x29. */
#define CP_FRAME_FP_SLOT 0
#define CP_FRAME_RA_SLOT 1
/* Where the record sits in its frame is up to the compiler: the caller's
 * stack pointer cannot be derived from x29. */
#define CP_FRAME_CFA_OFFSET (-1)

/* DWARF register numbers (AAPCS64 DWARF): sp, x29, and x30, which is both
 * the return-address column and the link register. */
#define CP_DWARF_SP 31
#define CP_DWARF_FP 29
#define CP_DWARF_RA 30
/* A frameless function's return address is still in x30 (the link
 * register): the unwind rule for it is "same value", usable only in a
 * frame whose registers are all known (the interrupted one). */
#define CP_HAS_LINK_REGISTER 1
/* Without a rule (frame pointers only), registers alone cannot tell where
 * x30 is the return address: at a leaf (gcc builds leaves without a frame
 * record, even with -fno-omit-frame-pointer), before the prologue's
 * `mov x29, sp` and after the epilogue's `ldp x29, x30`, x30 holds the
 * caller's return address and x29 still points at the caller's record;
 * anywhere else x30 is stale (it points into the function itself once a
 * call returned) or scratch.  The frame-pointer walk offers x30 as frame
 * 1 unless the record at x29 holds the same address, and the profile
 * writer keeps it only if it lies outside the function of the pc. */
static inline uintptr_t cp_uc_lr(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.regs[30]; }

/* PLT entries carry no CFI expressions here. */
#define CP_HAS_PLT_EXPRESSION 0

/* The kernel's rt_sigframe is {siginfo_t info; struct ucontext uc; ...} at
 * the stack pointer the trampoline (__kernel_rt_sigreturn in the vDSO)
 * runs with; glibc's ucontext_t matches the kernel's up to uc_mcontext
 * (its 128-byte sigset_t covers the kernel's sigmask and padding). */
#define CP_SIGFRAME_UC_OFFSET sizeof(siginfo_t)
#define CP_UC_PC_OFFSET offsetof(ucontext_t, uc_mcontext.pc)
#define CP_UC_SP_OFFSET offsetof(ucontext_t, uc_mcontext.sp)
#define CP_UC_FP_OFFSET offsetof(ucontext_t, uc_mcontext.regs[29])
#define CP_UC_LR_OFFSET offsetof(ucontext_t, uc_mcontext.regs[30])

/* The registers a walk starts from, out of a signal's context. */
#define CP_UC_REGS(uc, r) ((r)->pc = cp_uc_pc(uc), (r)->sp = cp_uc_sp(uc), (r)->fp = cp_uc_fp(uc), (r)->lr = cp_uc_lr(uc))

/* The user registers a perf sample carries (PERF_SAMPLE_REGS_USER), in
 * the kernel's order of their bits: x29, x30 (lr), sp, pc. */
#define CP_PERF_REGS_MASK                                                                                      \
	((1ull << PERF_REG_ARM64_X29) | (1ull << PERF_REG_ARM64_LR) | (1ull << PERF_REG_ARM64_SP) |             \
	 (1ull << PERF_REG_ARM64_PC))
#define CP_PERF_NREGS 4
#define CP_PERF_REGS(v, r) ((r)->fp = (v)[0], (r)->lr = (v)[1], (r)->sp = (v)[2], (r)->pc = (v)[3])

#endif
