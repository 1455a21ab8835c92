/* Memory probes that survive a fault: the faulting instruction has an
 * .extable entry naming where to resume, and the fault handler jumps there
 * instead of reporting a crash. Used by selftests to prove a mapping is
 * read-only or gone, and by wrpt to catch a page-table store Xen refused.
 *
 *   bool probe_read_u8(const void* p, uint8_t* out)
 *   bool probe_write_u8(void* p, uint8_t v)
 *   bool probe_read_u64(const void* p, uint64_t* out)
 *   bool probe_write_u64(void* p, uint64_t v)  */
#include "base/arch/extable.inc"

    .text
    FAULT_FN probe_read_u8, "", "movb (%rdi), %al", "movb %al, (%rsi)"
    FAULT_FN probe_write_u8, "", "movb %sil, (%rdi)", ""
    FAULT_FN probe_read_u64, "", "movq (%rdi), %rax", "movq %rax, (%rsi)"
    FAULT_FN probe_write_u64, "", "movq %rsi, (%rdi)", ""
