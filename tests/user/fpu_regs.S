/* Vector registers held across a system call (tests/user/test_fpu.cpp).
 *
 *   int64_t fpu_regs_syscall_{avx,sse}(const void* in, void* out, uint64_t spin,
 *                                      int64_t nr, uint64_t a1, uint64_t a2)
 *
 * Loads ymm0..15 (avx: 16 x 32 bytes) or xmm0..15 (sse: 16 x 16 bytes) from
 * in, spins `spin` iterations (timer ticks land here: preemption with the
 * registers live), makes system call nr(a1, a2) unless nr < 0, and stores
 * the registers to out. Nothing but the kernel can change them in between. */
    .text
.macro BODY op, reg, w
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    \op \n*\w(%rdi), %\reg\n
    .endr
1:  test %rdx, %rdx
    jz 2f
    dec %rdx
    jmp 1b
2:  test %rcx, %rcx
    js 3f
    push %rsi
    mov %rcx, %rax
    mov %r8, %rdi
    mov %r9, %rsi
    syscall
    pop %rsi
    jmp 4f
3:  xor %eax, %eax
4:
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    \op %\reg\n, \n*\w(%rsi)
    .endr
    ret
.endm

    .global fpu_regs_syscall_avx
    .type fpu_regs_syscall_avx, @function
fpu_regs_syscall_avx:
    BODY vmovdqu, ymm, 32
    .size fpu_regs_syscall_avx, . - fpu_regs_syscall_avx

    .global fpu_regs_syscall_sse
    .type fpu_regs_syscall_sse, @function
fpu_regs_syscall_sse:
    BODY movdqu, xmm, 16
    .size fpu_regs_syscall_sse, . - fpu_regs_syscall_sse

    .section .note.GNU-stack, "", @progbits
