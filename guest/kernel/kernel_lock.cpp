#include "guest/kernel/kernel_lock.h"

#include "base/arch/platform.h"
#include "base/lib/spinlock.h"
#include "guest/smp/percpu.h"
#include "mm/kernel_space.h"
#include "pvops/mmu_ops.h"

namespace pvk {
namespace {

constexpr LockClass kKernelLockClass{"kernel", LockRank::Kernel};
// Held for whole system calls: where the platform says so its waiters
// halt (LockWait::Halt) instead of spinning; chosen at the first lock,
// which the boot CPU takes before any other CPU runs kernel code.
Spinlock g_kernel_lock{kKernelLockClass};
bool g_wait_chosen = false;

// pvops keeps one g_current_root ("the root loaded": whether a page-table
// change must also flush this CPU's TLB). With several CPUs each has its
// own; as only the lock holder runs kernel code, the global is made to
// mean "the root of the CPU holding the kernel lock": saved here on
// release, given back on acquire.
Pfn g_loaded_root[smp::kMaxCpus];

}  // namespace

void kernel_lock() {
  if (!g_wait_chosen) {
    g_kernel_lock.set_wait(g_platform->halt_lock_waiters ? LockWait::Halt : LockWait::Spin);
    g_wait_chosen = true;
  }
  g_kernel_lock.lock_irqs_off();
  // A CPU's first time: an AP runs on the kernel's root (bring-up loads
  // it); the boot CPU on whatever g_current_root says, which is exact while
  // it was the only CPU running kernel code.
  const unsigned id = this_cpu()->id;
  const Pfn mine = g_loaded_root[id];
  if (raw(mine))
    g_current_root = mine;
  else if (id != 0)
    g_current_root = kernel_root();
}

void kernel_unlock() {
  g_loaded_root[this_cpu()->id] = g_current_root;
  g_kernel_lock.unlock_irqs_off();
}

void kernel_lock_yield() {
  if (!g_kernel_lock.contended()) return;
  kernel_unlock();  // a ticket lock: the waiter gets it before we are back
  kernel_lock();
}

bool kernel_lock_held() { return g_kernel_lock.held_by_this_cpu(); }

}  // namespace pvk
