/* The runtime's assembly: the signal restorer and setjmp/longjmp. */

/* pvk_sigreturn_restorer: KernelSigaction.restorer (with SA_RESTORER). A
 * handler's `ret` lands here with %rsp at the kernel's signal frame;
 * rt_sigreturn restores the interrupted context and never returns. */
    .section .text.pvk_sigreturn_restorer, "ax"
    .global pvk_sigreturn_restorer
    .type pvk_sigreturn_restorer, @function
pvk_sigreturn_restorer:
    mov $15, %eax                   /* rt_sigreturn */
    syscall
    ud2
    .size pvk_sigreturn_restorer, . - pvk_sigreturn_restorer

/* int pvk_setjmp(JmpBuf* b): saves the callee-saved registers, the stack
 * pointer after return and the return address; returns 0.
 * Layout (uint64_t[8]): rbx rbp r12 r13 r14 r15 rsp rip. */
    .section .text.pvk_setjmp, "ax"
    .global pvk_setjmp
    .type pvk_setjmp, @function
pvk_setjmp:
    mov %rbx, 0(%rdi)
    mov %rbp, 8(%rdi)
    mov %r12, 16(%rdi)
    mov %r13, 24(%rdi)
    mov %r14, 32(%rdi)
    mov %r15, 40(%rdi)
    lea 8(%rsp), %rdx               /* %rsp as the caller sees it after ret */
    mov %rdx, 48(%rdi)
    mov (%rsp), %rdx                /* return address */
    mov %rdx, 56(%rdi)
    xor %eax, %eax
    ret
    .size pvk_setjmp, . - pvk_setjmp

/* void pvk_longjmp(JmpBuf* b, int value): resumes at b's pvk_setjmp, which
 * then returns value (1 if value is 0). Safe to call from a signal handler
 * running on the same stack; it does not touch the signal mask (pvk has no
 * sigprocmask). */
    .section .text.pvk_longjmp, "ax"
    .global pvk_longjmp
    .type pvk_longjmp, @function
pvk_longjmp:
    mov %esi, %eax
    test %eax, %eax
    jnz 1f
    inc %eax
1:  mov 0(%rdi), %rbx
    mov 8(%rdi), %rbp
    mov 16(%rdi), %r12
    mov 24(%rdi), %r13
    mov 32(%rdi), %r14
    mov 40(%rdi), %r15
    mov 48(%rdi), %rsp
    jmp *56(%rdi)
    .size pvk_longjmp, . - pvk_longjmp

/* int64_t pvk_thread_clone(flags, newsp, parent_tid, child_tid, tls): the
 * clone system call for a thread (bench/libc/thread.h). The parent returns
 * the new tid (or -errno). The child starts on newsp, where thread_create
 * left fn and arg: it calls fn(arg) with no frame above it, then exits the
 * thread (exit, not exit_group). */
    .section .text.pvk_thread_clone, "ax"
    .global pvk_thread_clone
    .type pvk_thread_clone, @function
pvk_thread_clone:
    mov %rcx, %r10                  /* the fourth syscall argument */
    mov $56, %eax                   /* clone */
    syscall
    test %rax, %rax
    jz 1f
    ret
1:  xor %ebp, %ebp                  /* the outermost frame */
    pop %rax                        /* fn */
    pop %rdi                        /* arg */
    call *%rax
    xor %edi, %edi
    mov $60, %eax                   /* exit: this thread only */
    syscall
    ud2
    .size pvk_thread_clone, . - pvk_thread_clone

    .section .note.GNU-stack, "", @progbits
