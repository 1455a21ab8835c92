/* Where a secondary vCPU starts under Xen PV: the rip of the context
 * VCPUOP_initialise gave it, in kernel mode on its own stack (16-byte
 * aligned), %rdi = its PerCpu, on the kernel's page tables. */
    .text
    .global xen_ap_start
xen_ap_start:
    cld
    xor %ebp, %ebp
    call xen_ap_entry
1:  jmp 1b
