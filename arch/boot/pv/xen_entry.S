/* Xen PV boot: the ELF notes Xen's domain builder reads, and the 64-bit
 * entry it jumps to — in ring 3 with paging on, on Xen's initial page
 * tables, %rsi = virtual address of struct start_info.
 *
 * Addresses: linked at VIRT_BASE + 1 MiB with PADDR_OFFSET 0, so Xen lays
 * the image out at the same virtual addresses a native boot uses, and
 * pseudo-physical frame k of the initial mapping is at VIRT_BASE + k*4 KiB. */
#include <xen/elfnote.h>
#include <xen/features.h>
#include "base/layout.h"

.macro XEN_NOTE type, payload:vararg
    .pushsection .note.xen, "a"
    .balign 4
    .long 2f - 1f
    .long 4f - 3f
    .long \type
1:  .asciz "Xen"
2:  .balign 4
3:  \payload
4:  .balign 4
    .popsection
.endm

    XEN_NOTE XEN_ELFNOTE_GUEST_OS, .asciz "pvk"
    XEN_NOTE XEN_ELFNOTE_GUEST_VERSION, .asciz "0.1"
    XEN_NOTE XEN_ELFNOTE_XEN_VERSION, .asciz "xen-3.0"
    XEN_NOTE XEN_ELFNOTE_LOADER, .asciz "generic"
    XEN_NOTE XEN_ELFNOTE_VIRT_BASE, .quad PVK_KERNEL_VMA
    XEN_NOTE XEN_ELFNOTE_PADDR_OFFSET, .quad 0
    XEN_NOTE XEN_ELFNOTE_ENTRY, .quad xen_start64
    XEN_NOTE XEN_ELFNOTE_HYPERCALL_PAGE, .quad hypercall_page
    XEN_NOTE XEN_ELFNOTE_SUPPORTED_FEATURES, .long (1 << XENFEAT_dom0)

    .text
    .global xen_start64
xen_start64:
    cld
    mov %rsi, %rdi              /* start_info */
    mov %rsp, %rsi              /* Xen's boot stack: its page is ours to keep */
    movabs $boot_stack_top, %rsp
    xor %ebp, %ebp
    call xen_boot_entry
1:  jmp 1b
