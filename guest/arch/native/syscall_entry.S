/* Native system call entries (the `syscall` instruction from 64-bit mode
 * through LSTAR, from compatibility mode through CSTAR) and the native way
 * back to user mode. One CPU and interrupts masked by SFMASK, so a global
 * scratch slot is enough to switch stacks without swapgs. The frame built
 * on the kernel stack is a TrapFrame, like an exception's. */
#include "guest/arch/trap_regs.inc"

#define USER_CS (0x28 | 3)
#define USER_DS (0x20 | 3)
#define SYSCALL_TAG 258
#define COMPAT_SYSCALL_TAG 259

/* From the user's stack to the kernel's, building the hardware-shaped part
 * of the frame from what `syscall` left in %rcx (rip) and %r11 (rflags).
 * The selectors are the kernel's constants, never the caller's: a compat
 * caller is returned to (if ever) in 64-bit mode. */
.macro SYSCALL_FRAME tag
    mov %rsp, native_user_rsp(%rip)
    mov native_kernel_rsp(%rip), %rsp
    pushq $USER_DS
    pushq native_user_rsp(%rip)
    pushq %r11                  /* user rflags */
    pushq $USER_CS
    pushq %rcx                  /* user rip */
    pushq $0
    pushq $\tag
    KERNEL_ENTRY
.endm

    .text
    .global native_syscall_entry
native_syscall_entry:
    SYSCALL_FRAME SYSCALL_TAG
    call syscall_dispatch
    jmp native_ret_to_user

    /* pvk has no 32-bit ABI and offers no 32-bit code segment, so this is
     * unreachable by design; if a caller gets here anyway it is killed
     * (trap_dispatch sees vec::CompatSyscall) instead of entering ring 0
     * wherever an unprogrammed CSTAR points. */
    .global native_compat_syscall_entry
native_compat_syscall_entry:
    SYSCALL_FRAME COMPAT_SYSCALL_TAG
    call trap_dispatch
    /* fall through: trap_dispatch does not come back for this tag */

    /* Leave for user mode from the TrapFrame at %rsp. */
    .global native_ret_to_user
native_ret_to_user:
    RESTORE_REGS
    add $16, %rsp
    iretq

    .bss
    .balign 8
    .global native_kernel_rsp
native_kernel_rsp: .quad 0
native_user_rsp:   .quad 0
