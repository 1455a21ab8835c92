// Timed sleeps: a sleeper is an ordinary sleeping process with a deadline.
// Nothing spins: the process is off every CPU until the timer scan (each
// CPU's tick from user mode, each idle CPU's wake-up; the boot CPU ticks
// even when idle) finds its deadline passed, or a wake_all, a futex wake or
// a signal wakes it first. The scan is one pass over the process table
// under the kernel lock, and runs only once the earliest deadline has
// passed (g_next_deadline), so ticks with no timer due cost one compare.
// Sleepers commit without the kernel lock (a futex wait with a timeout), so
// the earliest deadline is kept with atomics (below).
#include "base/arch/cpu.h"
#include "kernel/proc/process.h"
#include "kernel/proc/wake.h"

namespace pvk {
namespace {

// The earliest deadline of any timed sleeper (UINT64_MAX: none). Lowered
// by each sleeper after it commits (note_deadline), raised only by the scan;
// read without a lock by idle CPUs. It may be earlier than every live
// deadline (a sleeper woken early leaves its own behind): then one scan
// finds nothing and moves it on.
uint64_t g_next_deadline = UINT64_MAX;

}  // namespace

void note_deadline(uint64_t at) {
  uint64_t seen = __atomic_load_n(&g_next_deadline, __ATOMIC_SEQ_CST);
  while (at < seen && !__atomic_compare_exchange_n(&g_next_deadline, &seen, at, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
  }
}

bool sleep_until(const void* channel, uint64_t deadline_tsc) {
  commit_sleep(channel, deadline_tsc);
  sleep_committed();
  return deadline_tsc != UINT64_MAX && cpu::rdtsc() >= deadline_tsc;
}

bool timed_sleep_due() { return cpu::rdtsc() >= __atomic_load_n(&g_next_deadline, __ATOMIC_SEQ_CST); }

// Kernel lock held: one scan at a time. The earliest deadline is cleared
// before the scan and lowered again by it: a sleeper committing meanwhile
// notes its deadline after its commit, so it is either seen by the scan or
// noted after the clear — never lost between the two.
void expire_timed_sleeps() {
  const uint64_t now = cpu::rdtsc();
  if (now < __atomic_load_n(&g_next_deadline, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&g_next_deadline, UINT64_MAX, __ATOMIC_SEQ_CST);
  uint64_t next = UINT64_MAX;
  for (unsigned i = 0; Process* p = process_at(i); ++i) {
    if (!proc::sleeping(proc::load_state(*p))) continue;
    const uint64_t at = __atomic_load_n(&p->wake_deadline, __ATOMIC_RELAXED);
    if (!at) continue;
    if (now >= at)
      wake_up(*p);
    else if (at < next)
      next = at;
  }
  note_deadline(next);
}

}  // namespace pvk
