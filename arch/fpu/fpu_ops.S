/* The only code that touches FP/SIMD registers (arch/fpu/fpu.h).
 * Standard (non-compacted) format everywhere, so a thread's area is also
 * the image its signal frames carry. The restores and XSETBV have an
 * exception-table fixup: they return false instead of faulting in the
 * kernel (an image from a user's signal frame, a feature Xen refuses). */
#include "base/arch/extable.inc"

    .text
    .global pvk_fpu_xsave
pvk_fpu_xsave:
    mov $-1, %eax
    mov $-1, %edx
    xsave64 (%rdi)
    ret

    .global pvk_fpu_xsaveopt
pvk_fpu_xsaveopt:
    mov $-1, %eax
    mov $-1, %edx
    xsaveopt64 (%rdi)
    ret

    .global pvk_fpu_fxsave
pvk_fpu_fxsave:
    fxsave64 (%rdi)
    ret

    /* bool pvk_fpu_xrstor(const void* area) */
    FAULT_FN pvk_fpu_xrstor, "mov $-1, %eax; mov $-1, %edx", "xrstor64 (%rdi)", ""
    /* bool pvk_fpu_fxrstor(const void* area) */
    FAULT_FN pvk_fpu_fxrstor, "", "fxrstor64 (%rdi)", ""
    /* bool pvk_fpu_xsetbv(uint64_t xcr0): XCR0 */
    FAULT_FN pvk_fpu_xsetbv, "mov %rdi, %rax; mov %rdi, %rdx; shr $32, %rdx; xor %ecx, %ecx", "xsetbv", ""

    .section .note.GNU-stack, "", @progbits
