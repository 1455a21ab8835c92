// What arch/ calls in the layer above it, kernel/: the only way up from
// arch/. The layering check keeps arch/ to its own headers and those
// below, and checks that every symbol arch's objects take from kernel's is
// one of these (tests/layering/arch_upcalls_test.sh); kernel/ implements
// each.
#pragma once
#include <stdint.h>

#include "arch/trap_frame.h"
#include "base/boot_info.h"

namespace pvk {

// The environment-neutral half of boot, once an entry (native PVH, Xen PV)
// has described the machine (kernel/main.cpp).
[[noreturn]] void kernel_main(Platform& platform, BootInfo& info);
// A secondary CPU's life once bring-up is done: wait until processes run,
// then run them (never returns). Entered with interrupts off.
[[noreturn]] void secondary_cpu_scheduler();

// A trap from user mode (an exception, a tick, a page fault with its
// address; fault_addr is 0 for the others), interrupts off: what it means
// for the process, under the locks the kernel wants (kernel/proc/entries.cpp).
void trap_from_user(TrapFrame& f, uint64_t fault_addr);
// After the cross-CPU handlers of an interrupt (event) from user mode: if
// one of them was a signal kick (Ipi::SignalKick), the way back to user
// mode delivers what is pending, under the kernel lock (taken here).
void return_after_kick(TrapFrame& f);
// A page fault of the kernel's own on user memory (a copy): true if it was
// demand-paged like a user access, false if it is the kernel's bug (or an
// .extable fixup's business).
bool kernel_fault_on_user_memory(const TrapFrame& f, uint64_t fault_addr);

}  // namespace pvk

// Called by the entry stubs (assembly).
extern "C" {
// A system call (native `syscall`; Xen PV's bounce of one): the call,
// under the kernel lock.
void syscall_entry_dispatch(pvk::TrapFrame* f);
void xen_syscall_entry_dispatch(pvk::TrapFrame* f);
// A new process's first way to user mode (switch.S's process_first_return):
// its segment selectors, then the kernel lock is dropped.
void process_first_entry();
}
