/* Xen PV exception and event entry. Xen bounces a trap onto the kernel
 * stack as the hardware would, with %rcx and %r11 pushed on top; popping
 * them leaves the native frame, so the rest is the shared TrapFrame path
 * (KERNEL_ENTRY, the prologue the native stubs end with too).
 * Return is the iret hypercall: its stub pushes %rcx, %r11 and %rax itself,
 * so we leave (flags, rip, cs, rflags, rsp, ss) and jump to it.
 *
 * No swapgs here or anywhere under PV: the kernel runs in ring 3, where
 * swapgs faults, and Xen itself switches between the kernel's and the
 * user's GS base on every kernel/user transition (smp_pv.cpp,
 * init_boot_cpu), so every stub starts with the kernel's GS base whatever
 * user mode loaded into %gs (check_entry_state verifies it). */
#include <xen/xen.h>
#include "arch/trap_regs.inc"

#define PV_EVENT_VECTOR 256
#define PV_FAILSAFE_VECTOR 257
#define PV_SYSCALL_TAG 258
#define PV_COMPAT_SYSCALL_TAG 259

/* Turns Xen's bounce frame into a TrapFrame and enters the kernel. */
.macro PV_FRAME vec, has_error
    popq %rcx
    popq %r11
    .if !\has_error
    pushq $0
    .endif
    pushq $\vec
    KERNEL_ENTRY
.endm

.macro PV_TRAP vec, has_error
    .global xen_trap_\vec
xen_trap_\vec:
    PV_FRAME \vec, \has_error
    jmp xen_trap_common
.endm

    .text
    PV_TRAP 0, 0
    PV_TRAP 1, 0
    PV_TRAP 3, 0
    PV_TRAP 4, 0
    PV_TRAP 5, 0
    PV_TRAP 6, 0
    PV_TRAP 7, 0
    PV_TRAP 8, 1
    PV_TRAP 10, 1
    PV_TRAP 11, 1
    PV_TRAP 12, 1
    PV_TRAP 13, 1
    PV_TRAP 14, 1
    PV_TRAP 16, 0
    PV_TRAP 17, 1
    PV_TRAP 18, 0
    PV_TRAP 19, 0

    /* Event upcall: same frame as an exception without an error code. */
    .global xen_event_callback
xen_event_callback:
    PV_FRAME PV_EVENT_VECTOR, 0
    jmp xen_trap_common

    /* Failsafe: Xen could not load our segments on return; fatal. */
    .global xen_failsafe_callback
xen_failsafe_callback:
    PV_FRAME PV_FAILSAFE_VECTOR, 0
    jmp xen_trap_common

    /* `syscall` from 32-bit compatibility mode (FLAT_USER_CS32 is in Xen's
     * GDT, so user code can get there with a far jump) and `sysenter`: pvk
     * has no 32-bit ABI; trap_dispatch kills the caller. */
    .global xen_compat_syscall_callback
xen_compat_syscall_callback:
    PV_FRAME PV_COMPAT_SYSCALL_TAG, 0
    jmp xen_trap_common

    /* System call from user mode: Xen switched to our kernel stack and
     * built the same frame as for an event. */
    .global xen_syscall_callback
xen_syscall_callback:
    PV_FRAME PV_SYSCALL_TAG, 0
    call xen_syscall_entry_dispatch   /* counts Xen's bounce, then syscall_dispatch under the kernel lock */
    jmp xen_ret_to_user

xen_trap_common:
    call trap_dispatch
    /* fall through */

    /* Back to whichever mode the frame at %rsp came from: the iret
     * hypercall switches to user mode when the frame's CS has RPL 3. */
    .global xen_ret_to_user
xen_ret_to_user:
    /* A return to user mode is counted (user_returns): the frame's CS has
     * RPL 3 (144(%rsp) before the pops, as natively). */
    testb $3, 144(%rsp)
    jz 0f
    mov pvk_user_returns_counter(%rip), %rax
    lock incq (%rax)
0:  RESTORE_REGS
    add $16, %rsp               /* vector, error code */
    pushq $0                    /* iret flags: full restore */
    jmp hypercall_page + __HYPERVISOR_iret * 32
