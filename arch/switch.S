/* Kernel context switch: save the callee-saved registers on the old stack,
 * switch stacks, restore them from the new one and return there.
 *   void switch_context(uint64_t* save_rsp, uint64_t new_rsp)
 * A new process's stack is prepared so that this "returns" into
 * process_first_return, which leaves for user mode through the platform's
 * return path with the TrapFrame at the top of the stack. */
    .text
    .global switch_context
switch_context:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    mov %rsp, (%rdi)
    mov %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret

    /* The kernel lock was held across the switch (kernel/kernel_lock.h):
     * a process's first way to user mode drops it like every other one.
     * %rsp is the TrapFrame, 16-byte aligned, so the call is ABI-aligned. */
    .global process_first_return
process_first_return:
    call process_first_entry   /* the process's selectors; drops the kernel lock */
    jmp *pvk_ret_to_user(%rip)

    /* Set by the boot entry (arch/switch.h). */
    .bss
    .balign 8
    .global pvk_ret_to_user
pvk_ret_to_user:
    .zero 8
