/* Native boot through PVH: QEMU's -kernel (and any PVH loader) enters at the
 * physical address named by XEN_ELFNOTE_PHYS32_ENTRY in 32-bit protected mode,
 * paging off, %ebx = physical address of struct hvm_start_info.
 *
 * We build just enough page tables to reach C++ in the higher half: the first
 * 4 GiB identity-mapped (to survive enabling paging), the same 4 GiB at the
 * physmap base, and the first 1 GiB at the kernel's link address, all with
 * 2 MiB pages. C++ then replaces them with 4 KiB tables built through pvops. */
#include <xen/elfnote.h>
#include "base/layout.h"

#define V2P(x) ((x) - PVK_KERNEL_VMA)
#define PTE_P 0x1
#define PTE_W 0x2
#define PTE_PS 0x80
#define CR4_PAE (1 << 5)
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)
#define EFER_NXE (1 << 11)
#define CR0_PE 0x1
#define CR0_WP (1 << 16)
#define CR0_PG (1 << 31)
#define L4_INDEX(va) (((va) >> 39) & 511)

    .section .note.pvh, "a"
    .balign 4
    .long 4f - 3f            /* namesz */
    .long 6f - 5f            /* descsz */
    .long XEN_ELFNOTE_PHYS32_ENTRY
3:  .asciz "Xen"
4:  .balign 4
5:  .long V2P(pvh_start32)
6:  .balign 4

    .section .text.boot, "ax"
    .code32
    .global pvh_start32
pvh_start32:
    cli
    cld
    mov $V2P(boot_stack_top), %esp

    /* Zero the seven early page-table pages. */
    mov $V2P(early_pml4), %edi
    xor %eax, %eax
    mov $(7 * 4096 / 4), %ecx
    rep stosl

    /* Four page directories, 2048 entries of 2 MiB: physical 0 .. 4 GiB. */
    mov $V2P(early_pd), %edi
    xor %ecx, %ecx
1:  mov %ecx, %eax
    shl $21, %eax
    or $(PTE_P | PTE_W | PTE_PS), %eax
    mov %eax, (%edi, %ecx, 8)
    inc %ecx
    cmp $(512 * PVK_EARLY_PHYSMAP_GIB), %ecx
    jb 1b

    /* PDPT for identity + physmap: 4 x 1 GiB. */
    mov $V2P(early_pdpt_low), %edi
    mov $V2P(early_pd), %eax
    or $(PTE_P | PTE_W), %eax
    xor %ecx, %ecx
2:  mov %eax, (%edi, %ecx, 8)
    add $4096, %eax
    inc %ecx
    cmp $PVK_EARLY_PHYSMAP_GIB, %ecx
    jb 2b

    /* PDPT for the kernel image: slot 510 (0xffffffff80000000) -> first GiB. */
    mov $V2P(early_pd), %eax
    or $(PTE_P | PTE_W), %eax
    mov %eax, V2P(early_pdpt_high) + 510 * 8

    mov $V2P(early_pdpt_low), %eax
    or $(PTE_P | PTE_W), %eax
    mov %eax, V2P(early_pml4)
    mov %eax, V2P(early_pml4) + L4_INDEX(PVK_PHYSMAP_BASE) * 8
    mov $V2P(early_pdpt_high), %eax
    or $(PTE_P | PTE_W), %eax
    mov %eax, V2P(early_pml4) + 511 * 8

    mov %cr4, %eax
    or $CR4_PAE, %eax
    mov %eax, %cr4
    mov $V2P(early_pml4), %eax
    mov %eax, %cr3
    mov $MSR_EFER, %ecx
    rdmsr
    or $(EFER_LME | EFER_NXE), %eax
    wrmsr
    mov %cr0, %eax
    or $(CR0_PE | CR0_WP | CR0_PG), %eax
    mov %eax, %cr0

    lgdt V2P(early_gdtr)
    ljmp $0x08, $V2P(long_mode_entry)

    .code64
long_mode_entry:
    mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    xor %eax, %eax
    mov %eax, %fs
    mov %eax, %gs
    movabs $higher_half, %rax
    jmp *%rax

higher_half:
    movabs $boot_stack_top, %rsp
    xor %ebp, %ebp
    mov %ebx, %edi           /* hvm_start_info physical address */
    call native_boot_entry
3:  cli
    hlt
    jmp 3b

    .section .rodata
    .balign 8
early_gdt:
    .quad 0
    .quad 0x00af9a000000ffff /* 0x08: 64-bit code */
    .quad 0x00cf92000000ffff /* 0x10: data */
early_gdt_end:
early_gdtr:
    .word early_gdt_end - early_gdt - 1
    .quad V2P(early_gdt)

    .section .bss.pagetables, "aw", @nobits
    .balign 4096
    .global early_pml4
early_pml4:      .skip 4096
early_pdpt_low:  .skip 4096
early_pdpt_high: .skip 4096
early_pd:        .skip 4096 * PVK_EARLY_PHYSMAP_GIB

    .section .bss
    .balign 16
    .global boot_stack_top
boot_stack:      .skip 16384 * 2
boot_stack_top:
