/* Memory probes that survive a fault: each faulting instruction has an
 * .extable entry naming where to resume, and the fault handler jumps there
 * instead of reporting a crash. Used by selftests to prove a mapping is
 * read-only or gone, and later for copies from user memory (EFAULT).
 *
 *   bool probe_read_u8(const void* p, uint8_t* out)
 *   bool probe_write_u8(void* p, uint8_t v)
 *   bool probe_read_u64(const void* p, uint64_t* out)
 *   bool probe_write_u64(void* p, uint64_t v)  */

    .text
    .global probe_read_u8
probe_read_u8:
1:  movb (%rdi), %al
    movb %al, (%rsi)
    mov $1, %eax
    ret
2:  xor %eax, %eax
    ret
    .pushsection .extable, "a"
    .quad 1b, 2b
    .popsection

    .global probe_write_u8
probe_write_u8:
1:  movb %sil, (%rdi)
    mov $1, %eax
    ret
2:  xor %eax, %eax
    ret
    .pushsection .extable, "a"
    .quad 1b, 2b
    .popsection

    .global probe_read_u64
probe_read_u64:
1:  movq (%rdi), %rax
    movq %rax, (%rsi)
    mov $1, %eax
    ret
2:  xor %eax, %eax
    ret
    .pushsection .extable, "a"
    .quad 1b, 2b
    .popsection

    /* bool probe_write_u64(void* p, uint64_t v) */
    .global probe_write_u64
probe_write_u64:
1:  movq %rsi, (%rdi)
    mov $1, %eax
    ret
2:  xor %eax, %eax
    ret
    .pushsection .extable, "a"
    .quad 1b, 2b
    .popsection
