#include "kernel/kernel_lock.h"

#include "base/arch/platform.h"
#include "base/lib/spinlock.h"
#include "arch/smp/percpu.h"
#include "mm/kernel_space.h"
#include "pvops/mmu_ops.h"
#include "pvops/tlb/tlb_shootdown.h"

namespace pvk {
namespace {

constexpr LockClass kKernelLockClass{"kernel", LockRank::Kernel, LockStat::kernel};
// Held for whole system calls: where the platform says so its waiters
// halt (LockWait::Halt) instead of spinning; chosen at the first lock,
// which the boot CPU takes before any other CPU runs kernel code.
Spinlock g_kernel_lock{kKernelLockClass};
bool g_wait_chosen = false;

}  // namespace

void kernel_lock() {
  if (!g_wait_chosen) {
    g_kernel_lock.set_wait(g_platform->halt_lock_waiters ? LockWait::Halt : LockWait::Spin);
    g_wait_chosen = true;
  }
  g_kernel_lock.lock_irqs_off();
  // Each CPU's loaded root is its own (pvops' current_root()). An AP's first
  // time: it runs on the kernel's root, which bring-up loaded without
  // telling pvops; saying so puts it among the CPUs kernel-half shootdowns
  // reach.
  // (The CPU's id first: one load, and false on the boot CPU, so one CPU
  // never asks for its root here.)
  if (this_cpu()->id != 0 && !raw(current_root())) set_current_root(kernel_root());
}

void kernel_unlock() {
  g_kernel_lock.unlock_irqs_off();
}

void kernel_lock_yield() {
  if (!g_kernel_lock.contended()) return;
  kernel_unlock();  // a ticket lock: the waiter gets it before we are back
  kernel_lock();
}

bool kernel_lock_held() { return g_kernel_lock.held_by_this_cpu(); }

}  // namespace pvk
