/*
 * arch.h (aarch64) -- register access in a signal's ucontext and the frame
 * record layout.  The only place that names AArch64 registers.
 */
#ifndef CPUPROF_ARCH_H
#define CPUPROF_ARCH_H

#include <stdint.h>
#include <ucontext.h>

#define CP_ARCH_NAME "aarch64"

static inline uintptr_t cp_uc_pc(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.pc; }
static inline uintptr_t cp_uc_sp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.sp; }
static inline uintptr_t cp_uc_fp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.regs[29]; }

/* An AAPCS64 frame record is {saved x29, saved x30} at the address in x29. */
#define CP_FRAME_FP_SLOT 0
#define CP_FRAME_RA_SLOT 1

#endif
