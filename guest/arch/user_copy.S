/* Copies between kernel and user memory that survive a bad user pointer:
 * the copy has an .extable fixup, so a fault the mm cannot resolve returns
 * false (the syscall's EFAULT) instead of crashing the kernel.
 *   bool raw_copy_user(void* dst, const void* src, size_t n)  */
#include "guest/arch/extable.inc"

    .text
    FAULT_FN raw_copy_user, "mov %rdx, %rcx", "rep movsb", ""
