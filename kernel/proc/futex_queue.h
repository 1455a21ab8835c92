// One futex hash bucket: a spinlock (class `futex`, rank Futex: inside the
// kernel lock's, outside the run queues', since a wake queues the woken
// under it) and the list of its waiters, each an entry on its waiter's
// kernel stack. Header-only, so the host tests drive the same code from
// threads playing CPUs (tests/host/wake_threads_test.cpp).
//
// A WAKE of n wakes exactly n: under the lock it unlinks each match, marks
// it woken and wakes its thread. A waiter woken otherwise (a signal, its
// timeout, a spurious wake-up) unlinks itself under the same lock unless it
// finds itself woken there (unlink_unless_woken): then the wake was its, so
// no wake is lost between the two and none counts twice.
#pragma once
#include <stdint.h>

#include "base/lib/spinlock.h"

namespace pvk {

class AddressSpace;
struct Process;

struct FutexWaiter {
  const AddressSpace* as;
  uint64_t uaddr;
  uint8_t scope;  // FutexScope
  uint32_t bitset;
  Process* thread;
  bool woken = false;  // set (sequentially consistent) by the waker that unlinked it
  FutexWaiter* next = nullptr;
};

class FutexBucket {
 public:
  static constexpr LockClass kLockClass{"futex", LockRank::Futex, LockStat::futex};

  // Kernel code runs with interrupts off: the lock leaves them so.
  void lock() { lock_.lock_irqs_off(); }
  void unlock() { lock_.unlock_irqs_off(); }

  // Under the lock.
  void link(FutexWaiter& w) {
    w.next = head_;
    head_ = &w;
  }

  // Whether a waker unlinked w (and so counted it); if not, w is unlinked
  // here. Takes the lock.
  bool unlink_unless_woken(FutexWaiter& w) {
    lock();
    const bool woken = __atomic_load_n(&w.woken, __ATOMIC_RELAXED);
    if (!woken)
      for (FutexWaiter** at = &head_; *at; at = &(*at)->next)
        if (*at == &w) {
          *at = w.next;
          break;
        }
    unlock();
    return woken;
  }

  // Wakes up to n waiters on (as, uaddr, scope) whose bitset meets
  // `bitset`, calling wake(Process&) for each under the lock; returns how
  // many. Takes the lock.
  template <typename Wake>
  int wake(const AddressSpace* as, uint64_t uaddr, uint8_t scope, int n, uint32_t bitset, Wake&& wake) {
    int woken = 0;
    lock();
    for (FutexWaiter** at = &head_; *at && woken < n;) {
      FutexWaiter& w = **at;
      if (w.as != as || w.uaddr != uaddr || w.scope != scope || !(w.bitset & bitset)) {
        at = &w.next;
        continue;
      }
      *at = w.next;
      // The thread before `woken`: once that is set the waiter may return
      // and its entry (on its stack) be gone. Waking it after it returned
      // is a spurious wake-up of whatever it sleeps on next, which every
      // sleeper re-checks.
      Process& t = *w.thread;
      __atomic_store_n(&w.woken, true, __ATOMIC_SEQ_CST);
      wake(t);
      ++woken;
    }
    unlock();
    return woken;
  }

  // Init has exited: every waiter's stack is gone.
  void forget_all() { head_ = nullptr; }
  // For tests: whether w is linked here (under the lock).
  bool linked(const FutexWaiter& w) const {
    for (const FutexWaiter* q = head_; q; q = q->next)
      if (q == &w) return true;
    return false;
  }

 private:
  Spinlock lock_{kLockClass};
  FutexWaiter* head_ = nullptr;
};

}  // namespace pvk
