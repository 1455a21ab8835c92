/* _start for pvk user programs (and, unchanged, for Linux).
 *
 * The kernel enters with the System V initial stack:
 *   (%rsp)           argc
 *   8(%rsp)          argv[0] .. argv[argc-1], NULL
 *   then             envp[0] .. NULL   (auxv may follow; unused)
 * and calls nothing else: no constructors, no TLS. main's return value goes
 * to exit_group. */
    .section .text.start, "ax"
    .global _start
    .type _start, @function
_start:
    xor %ebp, %ebp                  /* outermost frame for backtraces */
    mov (%rsp), %rdi                /* argc */
    lea 8(%rsp), %rsi               /* argv */
    lea 16(%rsp,%rdi,8), %rdx       /* envp = argv + argc + 1 */
    mov %rdx, pvk_environ(%rip)
    and $-16, %rsp                  /* ABI: 16-byte aligned before the call */
    call main
    mov %eax, %edi
    mov $231, %eax                  /* exit_group */
    syscall
    ud2
    .size _start, . - _start

    .section .bss.pvk_environ, "aw", @nobits
    .balign 8
    .global pvk_environ
pvk_environ:
    .quad 0

    .section .note.GNU-stack, "", @progbits
