// The kernel's side of the ways in from user mode (arch/upcalls.h): which
// lock a trap or system call runs under. Entries from user mode take the
// kernel lock (kernel/kernel_lock.h) before they touch anything shared and
// drop it on their way back — except a user page fault and the system
// calls of kernel/proc/unlocked_calls.cpp (the caller's own ids; mmap,
// munmap, mprotect and brk), which run under their address space's lock
// and take the kernel lock only for what follows in the slow cases.
#include "arch/upcalls.h"
#include "base/counters.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/probes.h"
#include "kernel/proc/process.h"

extern "C" void syscall_dispatch(pvk::TrapFrame* f);

namespace pvk {

void trap_from_user(TrapFrame& frame, uint64_t fault_addr) {
  if (frame.vector == vec::CompatSyscall) {
    // 32-bit `syscall`/`sysenter`: no such ABI. Killed without running a
    // handler, which would otherwise start in the caller's 32-bit segment.
    kernel_lock();
    do_exit(abi::wait_signaled(abi::SIGSEGV));
  }
  // A page fault first tries without the kernel lock, under its address
  // space's own (kernel/proc/process.h: user_fault_unlocked), so the faults
  // of several CPUs run at once. `pvk calibrate`'s armed faults come back
  // at once (kernel/proc/probes.h).
  if (frame.vector == vec::PageFault) {
    if (take_probe_fault(frame, fault_addr)) return;
    switch (user_fault_unlocked(frame, fault_addr)) {
      case UnlockedFault::Done: return;
      case UnlockedFault::DoneSignalsPending:
        kernel_lock();
        prepare_return_to_user(frame);
        kernel_unlock();
        return;
      case UnlockedFault::NeedsKernelLock: break;
    }
  }
  kernel_lock();
  user_trap(frame, fault_addr);
  kernel_unlock();
}

}  // namespace pvk

// What the syscall entries call: the calls that need no kernel lock
// without it (kernel/proc/unlocked_calls.cpp), the rest under it.
extern "C" void syscall_entry_dispatch(pvk::TrapFrame* f) {
  pvk::count_event(pvk::g_cpu_counters.syscall_entries);
  pvk::syscall_entry_checks(*f);
  if (pvk::syscall_unlocked(*f)) return;
  pvk::kernel_lock();
  syscall_dispatch(f);
  pvk::kernel_unlock();
}

// Xen PV's syscall callback: Xen took the `syscall`, switched to the
// kernel's page tables and bounced it here (xen_syscall_bounces).
extern "C" void xen_syscall_entry_dispatch(pvk::TrapFrame* f) {
  pvk::count_event(pvk::g_cpu_counters.xen_syscall_bounces);
  syscall_entry_dispatch(f);
}
