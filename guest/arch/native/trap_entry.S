/* Native exception entry: one stub per vector pushes a uniform
 * (vector, error code) pair, then the common path saves the registers in
 * TrapFrame order (KERNEL_ENTRY) and calls trap_dispatch(frame). */
#include "guest/arch/trap_regs.inc"

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

    .text
    .align 16
    .global native_trap_stubs
native_trap_stubs:
    TRAP_NOERR 0
    TRAP_NOERR 1
    TRAP_NOERR 2
    TRAP_NOERR 3
    TRAP_NOERR 4
    TRAP_NOERR 5
    TRAP_NOERR 6
    TRAP_NOERR 7
    TRAP_ERR 8
    TRAP_NOERR 9
    TRAP_ERR 10
    TRAP_ERR 11
    TRAP_ERR 12
    TRAP_ERR 13
    TRAP_ERR 14
    TRAP_NOERR 15
    TRAP_NOERR 16
    TRAP_ERR 17
    TRAP_NOERR 18
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

trap_common:
    KERNEL_ENTRY
    call trap_dispatch
    RESTORE_REGS
    add $16, %rsp
    iretq
