// Sleeping and waking without a lock in common: the handshake between a
// process going to sleep and whoever wakes it (Linux's try_to_wake_up and
// its on_cpu wait, in small). Header-only, so the host tests drive the
// same code with threads playing CPUs (tests/host/wake_threads_test.cpp).
//
// A process's state moves, for a sleep:
//
//   Runnable --itself: commit_to_sleep-------------------> Blocked
//   Blocked  --a waker: claim_wake (StillOnCpu)----------> Runnable
//   Blocked  --its CPU, at the switch away: switch_out---> Asleep
//   Asleep   --a waker: claim_wake (QueueIt)-------------> Runnable
//
// Every step out of Blocked or Asleep is one compare-and-swap, so of the
// sleeper's own switch decision and any number of wakers (a futex wake, a
// signal, the timer, a wake_all) exactly one wins each step, and exactly
// one party queues the process again:
//  - a waker that finds it Blocked: the sleeper has not yet decided at its
//    switch; that decision (switch_out) then sees Runnable, and the process
//    runs on, or is queued again by its own switch (finish_switch) — the
//    waker queues nothing;
//  - a waker that finds it Asleep: the switch decided to leave it off every
//    queue; the waker queues it, but only once the switch away is complete
//    (on_cpu cleared by finish_switch, which saved its registers): until
//    then another CPU must not run it. The wait is short (the rest of one
//    switch: no lock the waker may hold is taken on that path) and answers
//    cross-CPU requests meanwhile (the switch may wait for a flush).
//
// No wake-up is lost between a sleeper's last look at its condition and its
// sleep: the sleeper commits first (state Blocked, a sequentially
// consistent store), then looks at its condition once more; a waker makes
// the condition true with a sequentially consistent store (or a locked
// read-modify-write) and then reads the state. Of two such store-then-load
// pairs at least one sees the other's store: either the waker sees Blocked
// (and wakes it), or the sleeper sees the condition (and cancels).
#pragma once
#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "kernel/proc/process.h"

namespace pvk::proc {

inline ProcState load_state(const Process& p) {
  return static_cast<ProcState>(__atomic_load_n(reinterpret_cast<const uint8_t*>(&p.state), __ATOMIC_SEQ_CST));
}

inline bool cas_state(Process& p, ProcState& expected, ProcState to) {
  auto* word = reinterpret_cast<uint8_t*>(&p.state);
  auto* seen = reinterpret_cast<uint8_t*>(&expected);
  return __atomic_compare_exchange_n(word, seen, static_cast<uint8_t>(to), false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}

// Committed to sleep or asleep: what a wake-up would end.
inline bool sleeping(ProcState s) { return s == ProcState::Blocked || s == ProcState::Asleep; }

// The running process p commits to sleep: from here on any wake-up makes
// the coming switch keep it runnable. Sequentially consistent (an xchg):
// the caller's look at its condition comes after it.
inline void commit_to_sleep(Process& p) {
  __atomic_store_n(reinterpret_cast<uint8_t*>(&p.state), static_cast<uint8_t>(ProcState::Blocked), __ATOMIC_SEQ_CST);
}

// The running process p, committed, found its condition true after all:
// runnable again (a waker may have got there first; either way it is).
inline void cancel_sleep(Process& p) {
  ProcState s = ProcState::Blocked;
  cas_state(p, s, ProcState::Runnable);
}

// At the switch away from p, on its CPU: whether it stays runnable (goes
// back on a queue once its registers are saved). A committed sleeper that
// no one has woken becomes Asleep: from now on its waker queues it. A plain
// (relaxed) load first: a preempted or yielding process pays no locked
// instruction.
inline bool switch_out(Process& p) {
  ProcState s = static_cast<ProcState>(__atomic_load_n(reinterpret_cast<const uint8_t*>(&p.state), __ATOMIC_RELAXED));
  if (s != ProcState::Blocked) return s == ProcState::Runnable;
  if (cas_state(p, s, ProcState::Asleep)) return false;
  return s == ProcState::Runnable;  // woken since the load above
}

enum class Claim : uint8_t {
  NotSleeping,  // runnable already (woken by another), or never asleep: nothing to do
  StillOnCpu,   // woken before its switch decided: it stays runnable by itself
  QueueIt,      // woken after: the caller queues it once it is off its CPU
};

// A waker's claim on p: the one compare-and-swap that ends its sleep.
inline Claim claim_wake(Process& p) {
  ProcState s = load_state(p);
  for (;;) {
    if (!sleeping(s)) return Claim::NotSleeping;
    const ProcState was = s;
    if (cas_state(p, s, ProcState::Runnable)) return was == ProcState::Blocked ? Claim::StillOnCpu : Claim::QueueIt;
    // s is what it was instead: its switch decided (Blocked -> Asleep), or
    // another waker won (-> Runnable). Look again.
  }
}

// Waits until no CPU runs p or is switching away from it (its registers
// saved: finish_switch cleared on_cpu with a release store). Only for a
// process this CPU claimed as QueueIt: it is off its CPU soon and never
// back on one before it is queued.
inline void wait_until_off_cpu(const Process& p) {
  while (__atomic_load_n(&p.on_cpu, __ATOMIC_ACQUIRE) != Process::kNoCpu) {
    cpu::relax();
    xcpu::poll();
  }
}

}  // namespace pvk::proc
