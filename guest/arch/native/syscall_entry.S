/* Native system call entry (the `syscall` instruction) and the native way
 * back to user mode. One CPU and interrupts masked by SFMASK, so a global
 * scratch slot is enough to switch stacks without swapgs. The frame built
 * on the kernel stack is a TrapFrame, like an exception's. */
#include "guest/arch/trap_regs.inc"

#define USER_CS (0x28 | 3)
#define USER_DS (0x20 | 3)
#define SYSCALL_TAG 258

    .text
    .global native_syscall_entry
native_syscall_entry:
    mov %rsp, native_user_rsp(%rip)
    mov native_kernel_rsp(%rip), %rsp
    pushq $USER_DS
    pushq native_user_rsp(%rip)
    pushq %r11                  /* user rflags */
    pushq $USER_CS
    pushq %rcx                  /* user rip */
    pushq $0
    pushq $SYSCALL_TAG
    SAVE_REGS
    mov %rsp, %rdi
    cld
    call syscall_dispatch
    /* fall through: leave for user mode from the TrapFrame at %rsp */

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
