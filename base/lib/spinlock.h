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

#include "base/lib/lock_order.h"

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

class Spinlock {
 public:
  explicit constexpr Spinlock(const LockClass& cls, LockWait wait = LockWait::Spin) : cls_(&cls), wait_(wait) {}
  Spinlock(const Spinlock&) = delete;
  Spinlock& operator=(const Spinlock&) = delete;

  [[nodiscard]] IrqState lock();
  void unlock(IrqState saved);
  // For callers that already run with interrupts off and keep them off
  // (the kernel lock: every way into the kernel turns them off).
  void lock_irqs_off();
  void unlock_irqs_off();

  // How waiters wait; set before any CPU can contend (at boot).
  void set_wait(LockWait w) { wait_ = w; }

  bool held_by_this_cpu() const;
  bool is_locked() const;
  // Whether some CPU waits for it (a holder at a preemption point lets it in).
  bool contended() const;
  const LockClass& lock_class() const { return *cls_; }

 private:
  void acquire();
  void release();
  void acquire_alone();
  void release_alone();
  void check_take(int32_t cpu) const;
  void note_taken(int32_t cpu) const;
  void check_release(int32_t cpu) const;

  void wait_for(uint32_t ticket, int32_t cpu);
  void wake_next(uint32_t serving);

  const LockClass* cls_;
  LockWait wait_;
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
