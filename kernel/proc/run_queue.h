// One CPU's run queue: the runnable processes waiting for that CPU, first
// come first served, under a lock of its own (rank RunQueue, inside the
// kernel lock's). A process is on at most one queue, and never on one
// while a CPU runs it or is still switching away from it (on_cpu is
// cleared before a switched-out process is queued again), so whoever
// takes it off a queue may switch to it at once.
//
// The queue is intrusive (Process::rq_next): queuing never allocates.
// Its size is read without the lock by CPUs deciding whether it is worth
// taking the lock to steal from it.
#pragma once
#include <stdint.h>

#include "base/lib/spinlock.h"

namespace pvk {

struct Process;

namespace proc {

class RunQueue {
 public:
  // Every caller runs with interrupts off (kernel code), so the lock
  // leaves them as they are.
  void lock() { lock_.lock_irqs_off(); }
  void unlock() { lock_.unlock_irqs_off(); }
  bool held_here() const { return lock_.held_by_this_cpu(); }

  // Under the lock. `cpu` is the queue's CPU, recorded in the process
  // (Process::rq_cpu) so a change of its affinity can find it.
  void push(Process& p, int16_t cpu);
  // The first process that may run on the CPUs of `cpu_bit` (its
  // affinity), taken off the queue; null if none.
  Process* take_first(uint64_t cpu_bit);
  // Takes p off this queue; false if it is not on it.
  bool remove(Process& p);
  // Empties the queue (the machine stops: nothing runs again).
  void clear();

  unsigned size() const { return __atomic_load_n(&size_, __ATOMIC_ACQUIRE); }

 private:
  void unlink(Process& p, Process* before);

  static constexpr LockClass kLockClass{"run_queue", LockRank::RunQueue, LockStat::run_queue};
  Spinlock lock_{kLockClass};
  Process* head_ = nullptr;
  Process* tail_ = nullptr;
  unsigned size_ = 0;
};

}  // namespace proc
}  // namespace pvk
