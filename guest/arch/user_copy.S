/* Copies between kernel and user memory that survive a bad user pointer:
 * the copy instruction has an .extable fixup, so a fault the mm cannot
 * resolve returns failure (the syscall's EFAULT) instead of a kernel crash.
 *   bool raw_copy(void* dst, const void* src, size_t n)  */
    .text
    .global raw_copy_user
raw_copy_user:
    mov %rdx, %rcx
1:  rep movsb
    mov $1, %eax
    ret
2:  xor %eax, %eax
    ret
    .pushsection .extable, "a"
    .quad 1b, 2b
    .popsection
