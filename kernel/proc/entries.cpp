// The kernel's side of the traps from user mode (arch/upcalls.h): which
// lock a trap runs under. Entries from user mode take the kernel lock
// (kernel/kernel_lock.h) before they touch anything shared and drop it on
// their way back — except a user page fault, which runs under its address
// space's lock and takes the kernel lock only for what follows in the slow
// cases. System calls come in through kernel/proc/syscall_entry.cpp.
#include "arch/upcalls.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/probes.h"
#include "base/arch/platform.h"
#include "kernel/proc/process.h"
#include "kernel/proc/unlocked_return.h"

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
  if (frame.vector == vec::Timer || frame.vector == vec::XenEvent) {
    // A tick: this CPU's counts and run queue, which have locks of their
    // own (a switch away made without the kernel lock comes back without
    // it, as sched_yield's does), and the timed sleepers' scan, which takes
    // the kernel lock only when a deadline has passed. The way back takes
    // it for a deliverable signal.
    if (frame.vector == vec::Timer) g_platform->timer_ack();
    on_user_tick();
    finish_unlocked_call(*current(), frame);
    return;
  }
  kernel_lock();
  user_trap(frame, fault_addr);
  kernel_unlock();
}

}  // namespace pvk
