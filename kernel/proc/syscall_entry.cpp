// The kernel's side of the system call entries (arch/native/
// syscall_entry.S, arch/pv/trap_entry.S): the entry checks, then which lock
// the call runs under. The stubs have built the TrapFrame and set the
// kernel's RFLAGS (KERNEL_ENTRY); everything here runs before any call is
// dispatched, for every call.
//
// The null calls (getpid, gettid, getppid: the caller's own ids) are
// answered here, before anything else is looked at, so the path that
// measures what a system call costs in itself is the entry, its checks,
// one compare per id, and the look at whether the way back has work
// (kernel/proc/unlocked_return.h). The other calls that run without the
// kernel lock are in kernel/proc/unlocked_calls.cpp; everything else runs
// under it (syscall_dispatch, kernel/proc/syscalls.cpp).
//
// The checks are those of every way into the kernel, inline: the flags
// the stub set, the GS base (smp::check_this_cpu_inline), the frame at the
// top of the caller's own kernel stack.
#include "arch/smp/percpu.h"
#include "arch/upcalls.h"
#include "base/counters.h"
#include "base/lib/error_or.h"  // panic
#include "kernel/proc/process.h"
#include "kernel/proc/unlocked_return.h"

namespace pvk {
namespace {

constexpr uint64_t kUserChosenFlags = rflags::DF | rflags::AC | rflags::TF | rflags::NT;

// What every system call does first, locked or not: the entry's CPU state
// and frame checked, the thread's fault-livelock books reset. Returns the
// caller.
inline Process& entry_checks(TrapFrame& f) {
  uint64_t flags;
  asm volatile("pushfq; popq %0" : "=r"(flags));
  if (__builtin_expect(flags & kUserChosenFlags, 0)) check_entry_state(f);  // reports it
  PerCpu* cpu = smp::check_this_cpu_inline();
  Process* p = static_cast<Process*>(cpu->current);
  // Every entry from user mode lands at the top of the caller's kernel stack.
  if (__builtin_expect(&f != p->user_frame, 0))
    panic("syscall frame at %p, not at the top of pid %d's kernel stack", static_cast<void*>(&f), p->pid);
  p->fault_repeats = 0;  // a system call is progress: not a fault livelock
  p->fault_failures = 0;
  p->last_fault_rip = 0;
  return *p;
}

}  // namespace
}  // namespace pvk

extern "C" void syscall_entry_dispatch(pvk::TrapFrame* f) {
  using namespace pvk;
  count_event(g_cpu_counters.syscall_entries);
  Process& p = entry_checks(*f);
  int64_t ret;
  switch (f->rax) {
    case abi::SYS_getpid: ret = p.tgid; break;  // the process; gettid is the thread
    case abi::SYS_gettid: ret = p.pid; break;
    case abi::SYS_getppid: ret = __atomic_load_n(&p.ppid, __ATOMIC_RELAXED); break;
    default: return syscall_other(*f);  // a tail call: the null calls' path saves no more registers than it uses
  }
  f->rax = static_cast<uint64_t>(ret);
  finish_unlocked_call(p, *f);
}

// Xen PV's syscall callback: Xen took the `syscall`, switched to the
// kernel's page tables and bounced it here (xen_syscall_bounces).
extern "C" void xen_syscall_entry_dispatch(pvk::TrapFrame* f) {
  pvk::count_event(pvk::g_cpu_counters.xen_syscall_bounces);
  syscall_entry_dispatch(f);
}
