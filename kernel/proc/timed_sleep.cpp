// Timed sleeps: a sleeper is an ordinary blocked process with a deadline.
// Nothing spins: the process is off every CPU until the timer scan (each
// CPU's tick from user mode, each idle CPU's wake-up; the boot CPU ticks
// even when idle) finds its deadline passed, or wake_all or a signal
// wakes it first. The scan is one pass over the process table, and runs
// only once the earliest deadline has passed (g_next_deadline), so ticks
// with no timer due cost one compare.
#include "base/arch/cpu.h"
#include "kernel/proc/process.h"

namespace pvk {
namespace {

// The earliest deadline of any timed sleeper (UINT64_MAX: none). Written
// under the kernel lock; read without it by idle CPUs. It may be earlier
// than every live deadline (a sleeper woken early leaves its own behind):
// then one scan finds nothing and moves it on.
uint64_t g_next_deadline = UINT64_MAX;

void note_deadline(uint64_t at) {
  if (at < __atomic_load_n(&g_next_deadline, __ATOMIC_RELAXED)) __atomic_store_n(&g_next_deadline, at, __ATOMIC_SEQ_CST);
}

}  // namespace

bool sleep_until(const void* channel, uint64_t deadline_tsc) {
  Process& self = *current();
  self.timed_out = false;
  if (deadline_tsc == UINT64_MAX) {  // "never": an untimed sleep
    sleep_on(channel);
    return false;
  }
  self.wake_deadline = deadline_tsc ? deadline_tsc : 1;
  note_deadline(self.wake_deadline);
  sleep_on(channel);  // make_runnable clears wake_deadline, whoever wakes us
  return self.timed_out;
}

bool timed_sleep_due() { return cpu::rdtsc() >= __atomic_load_n(&g_next_deadline, __ATOMIC_SEQ_CST); }

void expire_timed_sleeps() {
  const uint64_t now = cpu::rdtsc();
  if (now < __atomic_load_n(&g_next_deadline, __ATOMIC_RELAXED)) return;
  uint64_t next = UINT64_MAX;
  for (unsigned i = 0; Process* p = process_at(i); ++i) {
    if (p->state != ProcState::Blocked || !p->wake_deadline) continue;
    if (now >= p->wake_deadline) {
      p->timed_out = true;
      make_runnable(*p);
    } else if (p->wake_deadline < next) {
      next = p->wake_deadline;
    }
  }
  __atomic_store_n(&g_next_deadline, next, __ATOMIC_SEQ_CST);
}

}  // namespace pvk
