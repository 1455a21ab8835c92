// Traps that concern processes: faults and ticks from user mode, and the
// kernel's own faults on user memory while copying (demand paging).
#include "guest/arch/platform.h"
#include "guest/console/console.h"
#include "guest/proc/process.h"

namespace pvk {

void user_trap(TrapFrame& f, uint64_t fault_addr) {
  Process& p = *current();
  switch (f.vector) {
    case vec::PageFault: {
      const bool write = f.error_code & 2;
      switch (p.as->handle_fault(fault_addr, write)) {
        case FaultOutcome::Handled: break;
        case FaultOutcome::BadAccess: raise_fault_signal(abi::SIGSEGV); break;
        case FaultOutcome::OutOfMemory:
          kprintf("pvk: pid %d (%s): out of memory at 0x%lx\n", p.pid, p.name, fault_addr);
          do_exit(abi::wait_signaled(abi::SIGKILL));
      }
      break;
    }
    case vec::DivideError: raise_fault_signal(abi::SIGFPE); break;
    case vec::Timer:
      g_platform->timer_ack();
      on_timer_tick(true);
      break;
    case vec::XenEvent: on_timer_tick(true); break;  // the platform handled the event itself
    default: raise_fault_signal(abi::SIGSEGV); break;  // #GP, #UD, #BP...: the program is broken
  }
  prepare_return_to_user(f);
}

bool kernel_fault_on_user_memory(uint64_t fault_addr, uint64_t error_code) {
  Process* p = current();
  if (!p || !p->as || fault_addr >= abi::kUserTop) return false;
  return p->as->handle_fault(fault_addr, error_code & 2) == FaultOutcome::Handled;
}

}  // namespace pvk
