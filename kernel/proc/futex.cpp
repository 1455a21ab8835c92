// The futex wait queue: one list of waiters, each an entry on its own
// kernel stack, woken one by one through the scheduler's sleep channels
// (the waiter's address is its channel), so a WAKE of n wakes exactly n.
#include "kernel/proc/futex.h"

#include "base/abi.h"
#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "arch/finish.h"
#include "kernel/proc/clock_calls.h"
#include "kernel/proc/process.h"
#include "kernel/proc/thread_args.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

namespace {

struct Waiter {
  const AddressSpace* as;
  uint64_t uaddr;
  FutexScope scope;
  uint32_t bitset;
  Process* thread;
  bool woken;
  Waiter* next;
};

Waiter* g_waiters = nullptr;

void unlink(Waiter& w) {
  for (Waiter** at = &g_waiters; *at; at = &(*at)->next)
    if (*at == &w) {
      *at = w.next;
      return;
    }
}

// The timeout argument as futex_wait takes it (relative ns, 0 for none):
// FUTEX_WAIT's is relative, FUTEX_WAIT_BITSET's an absolute clock time.
ErrorOr<uint64_t> timeout_from_user(uint64_t user_ts, bool absolute) {
  if (!user_ts) return uint64_t{0};
  abi::Timespec ts;
  TRY(copy_from_user(&ts, user_ts, sizeof ts));
  if (absolute) return futex_deadline_timeout_ns(ts, now_ns());
  return futex_timeout_ns(ts);
}

ErrorOr<int> wait_call(const uint64_t (&a)[6], FutexScope scope, bool bitset_form) {
  const uint64_t timeout = TRY(timeout_from_user(a[3], bitset_form));
  const uint32_t bitset = bitset_form ? static_cast<uint32_t>(a[5]) : abi::FUTEX_BITSET_MATCH_ANY;
  if (!bitset) return Errno::EINVAL;
  return futex_wait(a[0], scope, static_cast<uint32_t>(a[2]), timeout, bitset);
}

ErrorOr<int> wake_call(const uint64_t (&a)[6], FutexScope scope, bool bitset_form) {
  const uint64_t uaddr = a[0];
  const uint32_t bitset = bitset_form ? static_cast<uint32_t>(a[5]) : abi::FUTEX_BITSET_MATCH_ANY;
  if (!bitset) return Errno::EINVAL;
  // Nothing is read, but the address must be a user one (Linux's access_ok).
  if (!user_range_ok(uaddr, sizeof(uint32_t))) return Errno::EFAULT;
  if (uaddr & 3) return Errno::EINVAL;
  // val is an int: a count of 0 or less still wakes one, as on Linux.
  const int n = static_cast<int>(a[2]);
  return futex_wake(current()->as, uaddr, scope, n < 1 ? 1 : n, bitset);
}

}  // namespace

ErrorOr<int> futex_wait(uint64_t uaddr, FutexScope scope, uint32_t expected, uint64_t timeout_ns, uint32_t bitset) {
  if (uaddr & 3) return Errno::EINVAL;
  uint32_t value;
  TRY(copy_from_user(&value, uaddr, sizeof value));
  if (value != expected) return Errno::EAGAIN;
  Process& self = *current();
  Waiter w{self.as, uaddr, scope, bitset, &self, false, g_waiters};
  g_waiters = &w;
  // A timed wait sleeps on a timer like any other sleep: off the CPU, the
  // kernel lock released, until woken, signalled or past the deadline.
  // ETIMEDOUT only once the TSC is past it, whatever woke us.
  const uint64_t deadline =
      timeout_ns ? deadline_after(cpu::rdtsc(), ns_to_tsc_cycles(timeout_ns, g_platform->tsc_khz)) : UINT64_MAX;
  for (;;) {
    if (w.woken) return 0;  // the waker unlinked us
    if (signal_interrupts(self)) break;
    if (deadline != UINT64_MAX && cpu::rdtsc() >= deadline) {
      unlink(w);
      return Errno::ETIMEDOUT;
    }
    sleep_until(&w, deadline);
  }
  unlink(w);
  return Errno::EINTR;
}

int futex_wake(const AddressSpace* as, uint64_t uaddr, FutexScope scope, int n, uint32_t bitset) {
  int woken = 0;
  for (Waiter** at = &g_waiters; *at && woken < n;) {
    Waiter& w = **at;
    if (w.as != as || w.uaddr != uaddr || w.scope != scope || !(w.bitset & bitset)) {
      at = &w.next;
      continue;
    }
    *at = w.next;
    w.woken = true;
    wake_all(&w);
    ++woken;
  }
  return woken;
}

void futex_forget_all() { g_waiters = nullptr; }

int64_t sys_futex(const uint64_t (&a)[6]) {
  const uint64_t op = a[1], cmd = op & abi::FUTEX_CMD_MASK;
  const FutexScope scope = (op & abi::FUTEX_PRIVATE_FLAG) ? FutexScope::Private : FutexScope::Shared;
  // As on Linux, FUTEX_CLOCK_REALTIME means something only to the calls
  // with an absolute timeout; with any other it is ENOSYS.
  if ((op & abi::FUTEX_CLOCK_REALTIME) && cmd != abi::FUTEX_WAIT_BITSET) return -static_cast<int64_t>(Errno::ENOSYS);
  ErrorOr<int> r = Errno::ENOSYS;
  switch (cmd) {
    case abi::FUTEX_WAIT: r = wait_call(a, scope, false); break;
    case abi::FUTEX_WAIT_BITSET: r = wait_call(a, scope, true); break;
    case abi::FUTEX_WAKE: r = wake_call(a, scope, false); break;
    case abi::FUTEX_WAKE_BITSET: r = wake_call(a, scope, true); break;
    default: break;
  }
  return r.is_error() ? -static_cast<int64_t>(r.error()) : r.value();
}

}  // namespace pvk
