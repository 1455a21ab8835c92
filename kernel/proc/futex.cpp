// The futex wait queues: a hash table of buckets (kernel/proc/futex_queue.h:
// a lock and a list of waiters each). A wait and a wake of one word meet in
// one bucket and nowhere else: neither takes the kernel lock, scans the
// process table or touches another bucket, so FUTEX_WAIT/WAKE run without
// the kernel lock wherever the space's own lock suffices for a fault
// (kernel/proc/unlocked_calls.cpp). A waiter sleeps by the protocol of
// kernel/proc/wake.h, so its waker needs no lock in common with it.
#include "kernel/proc/futex.h"

#include "base/abi.h"
#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "arch/finish.h"
#include "kernel/proc/clock_calls.h"
#include "kernel/proc/futex_queue.h"
#include "kernel/proc/process.h"
#include "kernel/proc/thread_args.h"
#include "kernel/proc/user_copy.h"
#include "kernel/proc/without_user_faults.h"

namespace pvk {

namespace {

using Waiter = FutexWaiter;
using Bucket = FutexBucket;

constexpr unsigned kBucketBits = 6;
Bucket g_buckets[1u << kBucketBits];

// Every key of one word (whatever its scope) hashes to one bucket.
Bucket& bucket_of(const AddressSpace* as, uint64_t uaddr) {
  const uint64_t h = ((uaddr >> 2) ^ (reinterpret_cast<uint64_t>(as) >> 4)) * 0x9e3779b97f4a7c15ull;
  return g_buckets[h >> (64 - kBucketBits)];
}

// The futex word, read under the bucket lock without taking a fault.
// Nothing under a bucket lock may fault: a fault runs the whole fault path
// (the space's lock, frame allocation, a flush that waits for every other
// CPU) while every other waiter and waker of the bucket spins, and it
// could not sleep or take the kernel lock (ranked outside a bucket) if it
// ever had to. So the copy fails instead
// (kernel_fault_on_user_memory declines while user_faults_off is set, and
// the copy's fixup returns false); the caller drops the lock, reads the
// word with faults allowed (which maps it, or is the call's EFAULT) and
// tries again under the lock — Linux's futex_get_value_locked and
// fault_in_user_writeable, in small. The compare under the lock is what
// makes the wait safe against a wake (futex_wait); the first, faulting
// read only brings the page in.
bool read_word_nofault(uint32_t& value, uint64_t uaddr) {
  return without_user_faults([&] { return !copy_from_user(&value, uaddr, sizeof value).is_error(); });
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
  Process& self = *current();
  Bucket& b = bucket_of(self.as, uaddr);
  Waiter w{self.as, uaddr, static_cast<uint8_t>(scope), bitset, &self};
  // The compare and the link under the bucket lock: a waker stores the new
  // value before it takes the lock to wake, so either this compare sees the
  // new value (EAGAIN) or the waker finds this waiter linked.
  for (;;) {
    uint32_t value;
    b.lock();
    const bool read = read_word_nofault(value, uaddr);
    if (read && value == expected) {
      b.link(w);
      b.unlock();
      break;
    }
    b.unlock();
    if (read) return Errno::EAGAIN;
    TRY(copy_from_user(&value, uaddr, sizeof value));  // maps the page (no lock held), then again
  }
  // A timed wait sleeps on a timer like any other sleep: off the CPU until
  // woken, signalled or past the deadline. ETIMEDOUT only once the TSC is
  // past it, whatever woke us.
  const uint64_t deadline =
      timeout_ns ? deadline_after(cpu::rdtsc(), ns_to_tsc_cycles(timeout_ns, g_platform->tsc_khz)) : UINT64_MAX;
  Errno why;
  for (;;) {
    // Commit, then look (kernel/proc/wake.h): a wake, a signal or the
    // timer after the commit ends the sleep below before it begins.
    commit_sleep(&w, deadline);
    if (__atomic_load_n(&w.woken, __ATOMIC_SEQ_CST)) {
      cancel_committed_sleep();
      return 0;  // the waker unlinked us
    }
    const bool signalled = signal_interrupts(self);
    if (signalled || (deadline != UINT64_MAX && cpu::rdtsc() >= deadline)) {
      cancel_committed_sleep();
      why = signalled ? Errno::EINTR : Errno::ETIMEDOUT;
      break;
    }
    sleep_committed();
  }
  if (b.unlink_unless_woken(w)) return 0;  // a wake came first: it counted us, so we report it
  return why;
}

int futex_wake(const AddressSpace* as, uint64_t uaddr, FutexScope scope, int n, uint32_t bitset) {
  return bucket_of(as, uaddr).wake(as, uaddr, static_cast<uint8_t>(scope), n, bitset, [](Process& t) { wake_up(t); });
}

void futex_forget_all() {
  for (Bucket& b : g_buckets) b.forget_all();
}

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
