/* Native exception entry: one stub per vector pushes a uniform
 * (vector, error code) pair, then the common path saves the registers in
 * TrapFrame order (KERNEL_ENTRY) and calls trap_dispatch(frame).
 *
 * GS (see syscall_entry.S): user mode always runs with the user's GS base
 * and the kernel, once past the swap, with its PerCpu's.
 *  - From ring 3 (saved CS has RPL 3) the GS base is the user's, always:
 *    swapgs, and leave through native_ret_to_user, which swaps back.
 *  - From ring 0 the saved CS does not say which base is live: an NMI or
 *    #MC may arrive between `syscall` and its swapgs, between a stub's
 *    swapgs and the user-mode test, or between the return path's swapgs
 *    and iretq, and an iretq that faults does so in ring 0 with the user's
 *    GS. So every entry from ring 0 is "paranoid" (as Linux's
 *    paranoid_entry without FSGSBASE): it reads IA32_GS_BASE and swaps
 *    only if the live base is not one of the kernel's PerCpus
 *    (pvk_percpus, arch/smp/percpu.h) — a user base never is: user code
 *    can only load selectors, whose bases are 0 (no arch_prctl, no
 *    CR4.FSGSBASE). It swaps back on the way out iff it swapped (%ebx,
 *    callee-saved, across trap_dispatch), so the interrupted code resumes
 *    with the base it had.
 *  - NMI, #DB, #DF and #MC take that paranoid path from ring 3 too: they
 *    can arrive at any instruction, so they never trust the saved CS
 *    alone. (#DF runs on its IST stack; a #DB from ring 3 — TF, int1 — is
 *    a user trap like any other and may reschedule on this process's
 *    stack, as it is not an IST vector.) */
#include "arch/trap_regs.inc"

#define MSR_GS_BASE 0xc0000101
#define PERCPU_AREA_BYTES (16 * 128)  /* sizeof pvk_percpus, checked in arch/smp/percpu.h */

.macro TRAP_NOERR vec
    .align 16
    pushq $0
    pushq $\vec
    jmp trap_common
.endm
.macro TRAP_ERR vec
    .align 16
    pushq $\vec
    jmp trap_common
.endm
/* Vectors that may arrive anywhere: never trust the saved CS. */
.macro TRAP_PARANOID_NOERR vec
    .align 16
    pushq $0
    pushq $\vec
    jmp trap_paranoid
.endm
.macro TRAP_PARANOID_ERR vec
    .align 16
    pushq $\vec
    jmp trap_paranoid
.endm

    .text
    .align 16
    .global native_trap_stubs
native_trap_stubs:
    TRAP_NOERR 0
    TRAP_PARANOID_NOERR 1
    TRAP_PARANOID_NOERR 2
    TRAP_NOERR 3
    TRAP_NOERR 4
    TRAP_NOERR 5
    TRAP_NOERR 6
    TRAP_NOERR 7
    TRAP_PARANOID_ERR 8
    TRAP_NOERR 9
    TRAP_ERR 10
    TRAP_ERR 11
    TRAP_ERR 12
    TRAP_ERR 13
    TRAP_ERR 14
    TRAP_NOERR 15
    TRAP_NOERR 16
    TRAP_ERR 17
    TRAP_PARANOID_NOERR 18
    TRAP_NOERR 19
    TRAP_NOERR 20
    TRAP_ERR 21
    TRAP_NOERR 22
    TRAP_NOERR 23
    TRAP_NOERR 24
    TRAP_NOERR 25
    TRAP_NOERR 26
    TRAP_NOERR 27
    TRAP_NOERR 28
    TRAP_ERR 29
    TRAP_ERR 30
    TRAP_NOERR 31
    /* Legacy PIC interrupts, remapped to 32..47. */
    .irp irq, 32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47
    TRAP_NOERR \irq
    .endr
    /* The local APIC's: the cross-CPU IPI and the spurious vector. */
    TRAP_NOERR 48
    TRAP_NOERR 49

    /* (vector, error code) pushed: CS is at 24(%rsp). */
trap_common:
    testb $3, 24(%rsp)
    jz trap_paranoid
    swapgs
    KERNEL_ENTRY
    call trap_dispatch
    jmp native_ret_to_user

trap_paranoid:
    KERNEL_ENTRY
    mov $MSR_GS_BASE, %ecx
    rdmsr
    shl $32, %rdx
    or %rax, %rdx               /* the live GS base */
    lea pvk_percpus(%rip), %rax
    sub %rax, %rdx
    xor %ebx, %ebx
    cmp $PERCPU_AREA_BYTES, %rdx
    jb 1f                       /* already the kernel's */
    swapgs
    mov $1, %ebx
1:  call trap_dispatch          /* %rdi: the frame (KERNEL_ENTRY) */
    test %ebx, %ebx
    jz 2f
    swapgs
2:  RESTORE_REGS
    add $16, %rsp
    iretq
