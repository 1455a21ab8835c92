/* The page Xen fills with hypercall entry stubs (named by the
 * XEN_ELFNOTE_HYPERCALL_PAGE note in arch/boot/pv/xen_entry.S). */
    .section .text.hypercall_page, "ax"
    .balign 4096
    .global hypercall_page
hypercall_page:
    .skip 4096, 0xcc
