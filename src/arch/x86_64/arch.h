/*
 * arch.h (x86_64) -- register access in a signal's ucontext, the frame
 * record layout, the DWARF register numbers the unwind tables speak of and
 * where the kernel's signal frame keeps the interrupted context.  The only
 * place that names x86_64 registers.
 */
#ifndef CPUPROF_ARCH_H
#define CPUPROF_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include <asm/perf_regs.h>

#define CP_ARCH_NAME "x86_64"

static inline uintptr_t cp_uc_pc(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP]; }
static inline uintptr_t cp_uc_sp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]; }
static inline uintptr_t cp_uc_fp(const ucontext_t *uc) { return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP]; }

/* Setters, for tests that build contexts by hand. */
static inline void cp_uc_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t lr)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	uc->uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
	(void)lr;
}

/* With frame pointers, a frame record is {saved caller fp, return address}
 * at the address held in rbp. */
#define CP_FRAME_FP_SLOT 0
#define CP_FRAME_RA_SLOT 1
/* The caller's stack pointer (the CFA) relative to a frame record: the
 * record sits just below it.  Negative if the ABI does not fix it. */
#define CP_FRAME_CFA_OFFSET 16

/* DWARF register numbers (x86-64 psABI): rsp, rbp, and the return-address
 * column (the pseudo-register for rip). */
#define CP_DWARF_SP 7
#define CP_DWARF_FP 6
#define CP_DWARF_RA 16
/* The return address of a frameless function lives in a register (a link
 * register) rather than on the stack: not on x86_64, where `call` pushes it. */
#define CP_HAS_LINK_REGISTER 0
static inline uintptr_t cp_uc_lr(const ucontext_t *uc) { (void)uc; return 0; }

/* A lazy-binding PLT entry's CFA is given by a DWARF expression: sp + N,
 * plus one word once the entry has pushed its relocation index (pc & 15 at
 * or past a threshold).  The unwind tables recognise that expression. */
#define CP_HAS_PLT_EXPRESSION 1

/* When a signal handler returns into the signal trampoline (glibc's
 * __restore_rt), the stack pointer points at the kernel's struct
 * ucontext, whose layout up to uc_mcontext matches glibc's ucontext_t. */
#define CP_SIGFRAME_UC_OFFSET 0
#define CP_UC_PC_OFFSET offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP])
#define CP_UC_SP_OFFSET offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP])
#define CP_UC_FP_OFFSET offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP])
/* No link register: the same slot as the pc, read and ignored. */
#define CP_UC_LR_OFFSET CP_UC_PC_OFFSET

/* The registers a walk starts from, out of a signal's context. */
#define CP_UC_REGS(uc, r) ((r)->pc = cp_uc_pc(uc), (r)->sp = cp_uc_sp(uc), (r)->fp = cp_uc_fp(uc), (r)->lr = cp_uc_lr(uc))

/* The user registers a perf sample carries (PERF_SAMPLE_REGS_USER), in
 * the kernel's order of their bits: rbp, rsp, rip. */
#define CP_PERF_REGS_MASK ((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))
#define CP_PERF_NREGS 3
#define CP_PERF_REGS(v, r) ((r)->fp = (v)[0], (r)->sp = (v)[1], (r)->pc = (v)[2], (r)->lr = 0)

#endif
