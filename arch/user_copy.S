/* Copies between kernel and user memory that survive a bad user pointer:
 * the copy has an .extable fixup, so a fault the mm cannot resolve returns
 * false (the syscall's EFAULT) instead of crashing the kernel.
 *   bool raw_copy_user(void* dst, const void* src, size_t n)
 * With SMAP (native, pvk_smap = 1) this is the only code that may touch user
 * pages: it opens the window with stac and closes it with clac on both
 * exits. stac/clac are #UD without SMAP and at CPL 3 (Xen PV), hence the
 * flag rather than unconditional instructions. */
#include "base/arch/extable.inc"

    .data
    .global pvk_smap
pvk_smap: .byte 0

    .text
    .global raw_copy_user
raw_copy_user:
    /* rep_copy_bytes (base/counters.inc): every byte this rep movsb is
     * asked to move, counted before it runs (a copy cut short by a fault
     * was still paid for up to the fault). */
    mov pvk_rep_copy_counter(%rip), %rax
    lock add %rdx, (%rax)
    mov %rdx, %rcx
    cmpb $0, pvk_smap(%rip)
    je 1f
    stac
1:  rep movsb
    mov $1, %eax
    jmp 3f
2:  xor %eax, %eax
3:  cmpb $0, pvk_smap(%rip)
    je 4f
    clac
4:  ret
    EXTABLE 1b, 2b
