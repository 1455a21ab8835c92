// Going to sleep and the channel wake-up (the wake-up protocol is
// kernel/proc/wake.h; wake_up, which queues the woken, is the scheduler's):
// a sleep commits (Blocked, with its channel and deadline), looks at its
// condition once more, then switches away through schedule().
#include "kernel/proc/process.h"

#include "kernel/proc/process_parts.h"
#include "kernel/proc/wake.h"

namespace pvk {

using namespace proc;

void commit_sleep(const void* channel, uint64_t deadline_tsc) {
  Process& self = *running_here();
  __atomic_store_n(&self.wait_on, channel, __ATOMIC_RELAXED);
  const uint64_t at = deadline_tsc == UINT64_MAX ? 0 : deadline_tsc ? deadline_tsc : 1;
  __atomic_store_n(&self.wake_deadline, at, __ATOMIC_RELAXED);
  commit_to_sleep(self);  // after the two above: whoever sees it Blocked sees them
  // After the commit: a timer scan that cleared the earliest deadline
  // before this saw the state, or sees the deadline noted here.
  if (at) note_deadline(at);
}

void sleep_committed() {
  Process& self = *running_here();
  schedule();  // back once woken (runnable again)
  __atomic_store_n(&self.wake_deadline, uint64_t{0}, __ATOMIC_RELAXED);
  __atomic_store_n(&self.wait_on, static_cast<const void*>(nullptr), __ATOMIC_RELAXED);
}

void cancel_committed_sleep() {
  Process& self = *running_here();
  cancel_sleep(self);
  __atomic_store_n(&self.wake_deadline, uint64_t{0}, __ATOMIC_RELAXED);
  __atomic_store_n(&self.wait_on, static_cast<const void*>(nullptr), __ATOMIC_RELAXED);
}

void sleep_on(const void* channel) {
  commit_sleep(channel, UINT64_MAX);
  sleep_committed();
}

// The channels that remain (wait4, exec, sigsuspend) sleep and wake under
// the kernel lock; a futex and a pipe have wait queues of their own
// (futex.cpp, pipe.cpp).
// The channel first: one compare per slot that sleeps on something else
// or nothing, as one CPU paid before (a futex waiter's channel is its own
// stack entry, which no wake_all names; wake_up decides the rest).
void wake_all(const void* channel) {
  for (Process& p : g_procs)
    if (p.wait_on == channel && sleeping(p.state)) wake_up(p);
}

}  // namespace pvk
