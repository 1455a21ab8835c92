// A ticket spinlock for the kernel. CPUs are served in the order they
// arrived (no starvation under TCG's uneven vCPU speeds). While a CPU holds
// a lock its interrupts (under Xen: event upcalls) are off, so an interrupt
// handler on the same CPU can never spin on a lock its own CPU holds; while
// it spins it keeps answering cross-CPU requests (xcpu::poll), so a CPU
// waiting for a lock never keeps another one waiting for it in turn (the
// TLB shootdown a lock holder may be waiting on).
//
// A lock held for long stretches (the kernel lock) may let its waiters
// halt instead of spinning (LockWait::Halt): after a short spin a waiter
// halts with interrupts enabled, and the CPU that hands the lock on wakes
// the next ticket's holder with a Reschedule IPI (its timer tick wakes it
// anyway). Under TCG a spinning vCPU is a host thread that burns the time
// the lock holder's thread needs; Linux's paravirtual spinlocks halt and
// kick the same way.
//
// On a machine with one CPU (xcpu::one_cpu, base/arch/cross_cpu.h) a lock
// is an owner mark and a count: no ticket, no wait loop.
//
// Every lock has a class (base/lib/lock_order.h); in debug builds each CPU
// keeps the list of locks it holds and taking one out of rank order panics
// with both names.
#pragma once
#include <stdint.h>

#include "base/arch/cross_cpu.h"
#include "base/lib/lock_order.h"
#include "base/lib/lock_stats.h"

namespace pvk {

// What a CPU's interrupt state was before a lock turned it off.
struct IrqState {
  uint64_t bits;
};

// This CPU's interrupts (events) off, returning how they were; and back.
// Through the platform (natively pushf/cli, under Xen the vCPU's upcall mask).
IrqState irq_save();
void irq_restore(IrqState s);

enum class LockWait : uint8_t { Spin, Halt };

namespace lock_detail {
// Each CPU's row of lock statistics (base/lib/lock_stats.h): written only
// by its own CPU, so plain adds; a row per cache line pair, so no CPU's
// count shares a line with another's. Here so a one-CPU lock counts inline.
struct alignas(128) LockCountsRow {
  LockCounts c[kLockStats];
};
inline constexpr unsigned kMaxLockCpus = 32;
extern LockCountsRow g_lock_counts[kMaxLockCpus];
}  // namespace lock_detail

class Spinlock {
 public:
  explicit constexpr Spinlock(const LockClass& cls, LockWait wait = LockWait::Spin)
      : cls_(&cls), wait_(wait), stat_(cls.stat) {}
  Spinlock(const Spinlock&) = delete;
  Spinlock& operator=(const Spinlock&) = delete;

  // On one CPU (xcpu::one_cpu) these are inline and leave interrupts
  // alone: kernel code always runs with them off (every entry masks them;
  // only a halt, holding no lock, enables them), so an interrupt handler
  // can only run where this CPU holds no lock, and there is no other CPU
  // to wait for. With several CPUs the interrupt state is saved and
  // interrupts turned off as the contract above says.
  [[nodiscard]] IrqState lock() {
    if (xcpu::one_cpu()) {
      acquire_alone();
      return {0};
    }
    return lock_shared();
  }
  void unlock(IrqState saved) {
    if (xcpu::one_cpu()) return release_alone();
    unlock_shared(saved);
  }
  // For callers that already run with interrupts off and keep them off
  // (the kernel lock: every way into the kernel turns them off).
  void lock_irqs_off() {
    if (xcpu::one_cpu()) return acquire_alone();
    acquire();
  }
  void unlock_irqs_off() {
    if (xcpu::one_cpu()) return release_alone();
    release();
  }

  // How waiters wait; set before any CPU can contend (at boot).
  void set_wait(LockWait w) { wait_ = w; }

  bool held_by_this_cpu() const {
    if (xcpu::one_cpu()) return __atomic_load_n(&owner_, __ATOMIC_RELAXED) == 0;
    return held_by_this_cpu_shared();
  }
  bool is_locked() const;
  // Whether some CPU waits for it (a holder at a preemption point lets it in).
  bool contended() const;
  const LockClass& lock_class() const { return *cls_; }

 private:
  bool held_by_this_cpu_shared() const;
  IrqState lock_shared();
  void unlock_shared(IrqState saved);
  void acquire();
  void release();
  // A machine with one CPU: no other CPU can hold or wait for a lock, so
  // taking one is marking its owner (what held_by_this_cpu reads) and
  // counting it; no ticket, no wait loop, no call (debug builds also check
  // the order, out of line).
  void acquire_alone() {
#ifndef NDEBUG
    check_take(0);
#endif
    owner_ = 0;
    if (stat_ != LockStat::none) ++lock_detail::g_lock_counts[0].c[static_cast<unsigned>(stat_)].acquired;
#ifndef NDEBUG
    note_taken(0);
#endif
  }
  void release_alone() {
#ifndef NDEBUG
    check_release(0);
#endif
    owner_ = -1;
  }
  void check_take(int32_t cpu) const;
  void note_taken(int32_t cpu) const;
  void check_release(int32_t cpu) const;

  void wait_for(uint32_t ticket, int32_t cpu);
  void wake_next(uint32_t serving);

  const LockClass* cls_;
  LockWait wait_;
  LockStat stat_;  // cls_->stat, kept here so a one-CPU take reads one byte
  uint32_t next_ = 0;     // the next ticket handed out
  uint32_t serving_ = 0;  // the ticket that may hold the lock
  int32_t owner_ = -1;    // the CPU holding it (-1: none), for checks and reports
};

class SpinGuard {
 public:
  explicit SpinGuard(Spinlock& l) : lock_(l), saved_(l.lock()) {}
  ~SpinGuard() { lock_.unlock(saved_); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  Spinlock& lock_;
  IrqState saved_;
};

}  // namespace pvk
