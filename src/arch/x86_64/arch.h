/*
 * arch.h (x86_64) -- register access in a signal's ucontext and the frame
 * record layout.  The only place that names x86_64 registers.
 */
#ifndef CPUPROF_ARCH_H
#define CPUPROF_ARCH_H

#include <stdint.h>
#include <ucontext.h>

#define CP_ARCH_NAME "x86_64"

static inline uintptr_t cp_uc_pc(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP]; }
static inline uintptr_t cp_uc_sp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]; }
static inline uintptr_t cp_uc_fp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP]; }

/* x86_64 has no link register: call pushes the return address. */
static inline uintptr_t cp_uc_lr(const ucontext_t *uc) { return 0; }

/* With frame pointers, a frame record is {saved caller fp, return address}
 * at the address held in rbp. */
#define CP_FRAME_FP_SLOT 0
#define CP_FRAME_RA_SLOT 1

#endif
