/* Xen PV exception and event entry. Xen bounces a trap onto the kernel
 * stack as the hardware would, with %rcx and %r11 pushed on top; popping
 * them leaves the native frame, so the rest is the shared TrapFrame path.
 * Return is the iret hypercall: its stub pushes %rcx, %r11 and %rax itself,
 * so we leave (flags, rip, cs, rflags, rsp, ss) and jump to it. */
#include <xen/xen.h>
#include "guest/arch/trap_regs.inc"

#define PV_EVENT_VECTOR 256
#define PV_FAILSAFE_VECTOR 257
#define PV_SYSCALL_TAG 258

.macro PV_TRAP_NOERR vec
    .global xen_trap_\vec
xen_trap_\vec:
    popq %rcx
    popq %r11
    pushq $0
    pushq $\vec
    jmp xen_trap_common
.endm
.macro PV_TRAP_ERR vec
    .global xen_trap_\vec
xen_trap_\vec:
    popq %rcx
    popq %r11
    pushq $\vec
    jmp xen_trap_common
.endm

    .text
    PV_TRAP_NOERR 0
    PV_TRAP_NOERR 1
    PV_TRAP_NOERR 3
    PV_TRAP_NOERR 4
    PV_TRAP_NOERR 5
    PV_TRAP_NOERR 6
    PV_TRAP_NOERR 7
    PV_TRAP_ERR 8
    PV_TRAP_ERR 10
    PV_TRAP_ERR 11
    PV_TRAP_ERR 12
    PV_TRAP_ERR 13
    PV_TRAP_ERR 14
    PV_TRAP_NOERR 16
    PV_TRAP_ERR 17
    PV_TRAP_NOERR 18
    PV_TRAP_NOERR 19

    /* Event upcall: same frame as an exception without an error code. */
    .global xen_event_callback
xen_event_callback:
    popq %rcx
    popq %r11
    pushq $0
    pushq $PV_EVENT_VECTOR
    jmp xen_trap_common

    /* Failsafe: Xen could not load our segments on return; fatal. */
    .global xen_failsafe_callback
xen_failsafe_callback:
    popq %rcx
    popq %r11
    pushq $0
    pushq $PV_FAILSAFE_VECTOR
    jmp xen_trap_common

    /* System call from user mode: Xen switched to our kernel stack and
     * built the same frame as for an event. */
    .global xen_syscall_callback
xen_syscall_callback:
    popq %rcx
    popq %r11
    pushq $0
    pushq $PV_SYSCALL_TAG
    SAVE_REGS
    mov %rsp, %rdi
    call syscall_dispatch
    jmp xen_ret_to_user

xen_trap_common:
    SAVE_REGS
    mov %rsp, %rdi
    call trap_dispatch
    /* fall through */

    /* Back to whichever mode the frame at %rsp came from: the iret
     * hypercall switches to user mode when the frame's CS has RPL 3. */
    .global xen_ret_to_user
xen_ret_to_user:
    RESTORE_REGS
    add $16, %rsp               /* vector, error code */
    pushq $0                    /* iret flags: full restore */
    jmp hypercall_page + __HYPERVISOR_iret * 32
