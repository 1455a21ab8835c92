/* Native system call entries (the `syscall` instruction from 64-bit mode
 * through LSTAR, from compatibility mode through CSTAR) and the native way
 * back to user mode. The frame built on the kernel stack is a TrapFrame,
 * like an exception's.
 *
 * GS: user mode runs with the user's GS base (whatever it loaded: pvk has
 * no arch_prctl and leaves CR4.FSGSBASE off, so a selector load, base 0),
 * the kernel with its PerCpu's; the other one waits in IA32_KERNEL_GS_BASE.
 * `syscall` comes only from user mode, so the first instruction is the
 * swap; interrupts are masked by SFMASK until the return, and the entries
 * that can still arrive in between (NMI, #MC; #DB cannot: SFMASK clears TF
 * and the kernel arms no breakpoints) decide from the GS base MSR, not
 * from the saved CS (trap_entry.S). Stacks are per CPU, in PerCpu. */
#include "arch/trap_regs.inc"

#define USER_CS (0x28 | 3)
#define USER_DS (0x20 | 3)
#define SYSCALL_TAG 258
#define COMPAT_SYSCALL_TAG 259
#define PERCPU_SYSCALL_RSP 56  /* offsetof(PerCpu, syscall_rsp), checked in arch/smp/percpu.h */
#define PERCPU_USER_RSP 64     /* offsetof(PerCpu, user_rsp) */

/* From the user's stack to the kernel's, building the hardware-shaped part
 * of the frame from what `syscall` left in %rcx (rip) and %r11 (rflags).
 * The selectors are the kernel's constants, never the caller's: a compat
 * caller is returned to (if ever) in 64-bit mode. */
.macro SYSCALL_FRAME tag
    swapgs
    mov %rsp, %gs:PERCPU_USER_RSP
    mov %gs:PERCPU_SYSCALL_RSP, %rsp
    pushq $USER_DS
    pushq %gs:PERCPU_USER_RSP
    pushq %r11                  /* user rflags */
    pushq $USER_CS
    pushq %rcx                  /* user rip */
    pushq $0
    pushq $\tag
    KERNEL_ENTRY
.endm

/* The registers back from the frame at %rsp, the user's GS base back if
 * the frame's CS is the user's, and iretq. */
.macro LEAVE_FOR_USER
    RESTORE_REGS
    add $16, %rsp               /* vector, error code */
    testb $3, 8(%rsp)           /* CS */
    jz 1f
    swapgs
1:  iretq
.endm

    .text
    /* pvk has no 32-bit ABI and offers no 32-bit code segment, so this is
     * unreachable by design; if a caller gets here anyway it is killed
     * (trap_dispatch sees vec::CompatSyscall) instead of entering ring 0
     * wherever an unprogrammed CSTAR points. */
    .global native_compat_syscall_entry
native_compat_syscall_entry:
    SYSCALL_FRAME COMPAT_SYSCALL_TAG
    call trap_dispatch
    ud2                         /* trap_dispatch does not come back for this tag */

    /* A system call's way back is native_ret_to_user's, inline (no jump)
     * and without its first test: a system call's frame always returns to
     * user mode (only the kernel writes its CS, always the user's), so it
     * is counted at once; LEAVE_FOR_USER still tests CS for the swapgs. */
    .global native_syscall_entry
native_syscall_entry:
    SYSCALL_FRAME SYSCALL_TAG
    call syscall_entry_dispatch   /* syscall_entry.cpp: the entry checks, then the call */
    mov pvk_user_returns_counter(%rip), %rax
    lock incq (%rax)
    LEAVE_FOR_USER

    /* Leave for user mode from the TrapFrame at %rsp: every return to
     * ring 3 (system calls, exceptions and interrupts from user mode,
     * signal delivery and sigreturn, which only rewrite the frame, and a
     * new or exec'd process's first entry, process_first_return) comes
     * through here or, a system call's, through the same LEAVE_FOR_USER
     * above, and swaps the user's GS base back in. The frame's CS is
     * always the user's (the kernel writes it: exec, signals, sigreturn);
     * it is tested all the same, so a kernel frame can never leave with the
     * user's GS. From the swap to iretq interrupts are masked; an NMI or an
     * iretq fault in that window enters with CS = kernel and the user's GS
     * base, which trap_entry.S's kernel-entry path detects from the MSR. */
    .global native_ret_to_user
native_ret_to_user:
    /* A return to user mode (the frame's CS, 144(%rsp) before the pops:
     * offsetof(TrapFrame, cs), checked in arch/traps.cpp) is counted
     * (user_returns, base/counters.inc); %rax comes back from the frame. */
    testb $3, 144(%rsp)
    jz 0f
    mov pvk_user_returns_counter(%rip), %rax
    lock incq (%rax)
0:  LEAVE_FOR_USER
