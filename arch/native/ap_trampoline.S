/* Where an AP starts natively: the startup IPI points it at a page below
 * 1 MiB (vector 0x08: 0x8000), in real mode. smp_native.cpp copies the
 * bytes between ap_trampoline_start and ap_trampoline_end there and fills in
 * the four slots at the end for one AP at a time.
 *
 * Real mode -> 32-bit protected mode -> long mode on the boot's early page
 * tables (pvh_entry.S: the first 4 GiB identity-mapped, so this page stays
 * reachable as paging comes on, plus the physmap and the kernel image at
 * their usual addresses), then a jump to native_ap_start in the kernel's
 * text with the AP's own stack. The AP's C++ half moves to the kernel's
 * tables and its own GDT/TSS.
 *
 * The code runs at a fixed address, so every absolute address here is
 * computed as (label - start + AP_TRAMPOLINE_PHYS). */
#define AP_TRAMPOLINE_PHYS 0x8000
#define T(x) ((x) - ap_trampoline_start + AP_TRAMPOLINE_PHYS)
#define CR0_PE 0x1
#define CR0_WP (1 << 16)
#define CR0_PG (1 << 31)
#define CR0_NW (1 << 29)
#define CR0_CD (1 << 30)
#define CR4_PAE (1 << 5)
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)
#define EFER_NXE (1 << 11)

    .section .rodata
    .balign 16
    .global ap_trampoline_start, ap_trampoline_end
    .global ap_trampoline_cr3, ap_trampoline_stack, ap_trampoline_arg, ap_trampoline_target
ap_trampoline_start:
    .code16
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    lgdtl T(tramp_gdtr)
    mov %cr0, %eax
    and $~(CR0_CD | CR0_NW), %eax  /* INIT leaves the caches disabled */
    or $CR0_PE, %eax
    mov %eax, %cr0
    ljmpl $0x08, $T(tramp32)

    .code32
tramp32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %cr4, %eax
    or $CR4_PAE, %eax
    mov %eax, %cr4
    mov T(ap_trampoline_cr3), %eax
    mov %eax, %cr3
    mov $MSR_EFER, %ecx
    rdmsr
    or $(EFER_LME | EFER_NXE), %eax
    wrmsr
    mov %cr0, %eax
    or $(CR0_PG | CR0_WP), %eax
    mov %eax, %cr0
    ljmp $0x18, $T(tramp64)

    .code64
tramp64:
    mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    xor %eax, %eax
    mov %eax, %fs
    mov %eax, %gs
    mov T(ap_trampoline_stack), %rsp
    mov T(ap_trampoline_arg), %rdi
    mov T(ap_trampoline_target), %rax
    jmp *%rax

    .balign 8
tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff /* 0x08: 32-bit code */
    .quad 0x00cf92000000ffff /* 0x10: data */
    .quad 0x00af9a000000ffff /* 0x18: 64-bit code */
tramp_gdt_end:
tramp_gdtr:
    .word tramp_gdt_end - tramp_gdt - 1
    .long T(tramp_gdt)
    .balign 8
ap_trampoline_cr3:    .quad 0  /* physical address of the early PML4 */
ap_trampoline_stack:  .quad 0  /* the AP's stack top (a physmap address) */
ap_trampoline_arg:    .quad 0  /* its PerCpu */
ap_trampoline_target: .quad 0  /* native_ap_start */
ap_trampoline_end:

    .text
    /* A parked AP's NMI (its own IDT's vector 2, descriptors.cpp): the
     * wake-up bring-up sends to check that the AP takes an interrupt on its
     * own stack with its PerCpu behind GS. No EOI: an NMI needs none, which
     * is why it is the wake-up while the kernel's tables do not map the
     * local APIC. Back to the parking hlt. The %gs access needs no swapgs
 * check: a parked AP has never been in user mode, so its live GS base is
 * its PerCpu (set in native_ap_entry before it enables anything). */
#define PERCPU_IPIS_TAKEN 48  /* offsetof(PerCpu, ipis_taken), checked in smp_native.cpp */
    .global native_ap_nmi
native_ap_nmi:
    lock incl %gs:PERCPU_IPIS_TAKEN
    iretq

    /* From the trampoline, on the AP's own stack (16-byte aligned). */
    .global native_ap_start
native_ap_start:
    xor %ebp, %ebp
    call native_ap_entry
1:  cli
    hlt
    jmp 1b
