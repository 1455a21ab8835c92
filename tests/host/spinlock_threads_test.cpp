// The ticket spinlock and its statistics under real parallelism: host
// threads, each playing a CPU of its own (test::act_as_cpu), hammer one
// lock. Mutual exclusion (a plain counter updated under the lock ends
// exact), every acquisition counted once in the taker's own row, and the
// contention the waits saw reported: contended acquisitions at most the
// acquisitions, spins at least the contended ones (each waited one round
// or more). Built with ThreadSanitizer from the lock's own sources
// (pvk_tsan_host_tests, tests/host/CMakeLists.txt), so a data race between
// the threads fails it too.
#include "host_compat.h"

#include <thread>
#include <vector>

#include "base/arch/platform.h"
#include "base/lib/lock_stats.h"
#include "base/lib/spinlock.h"
#include "cross_cpu_host.h"

namespace pvk {

Platform* g_platform = nullptr;  // no platform: interrupts are the host's (irq_save does nothing)

namespace {

constexpr LockClass kCounted{"test-counted", LockRank::Frames, LockStat::frames};

TEST(SpinlockThreads, ExcludesAndCountsEveryAcquisition) {
  // Few rounds: a ticket lock's waiter spins without yielding, so on a
  // host busy with other tests the next ticket's thread may wait for a
  // host CPU while the others spin (what LockWait::Halt avoids in pvk).
  constexpr unsigned kThreads = 3;
  constexpr unsigned kRounds = 2000;
  Spinlock lock{kCounted};
  uint64_t guarded = 0;  // written only under the lock
  const LockCounts before = lock_counts(LockStat::frames);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      test::act_as_cpu(t + 1);
      for (unsigned i = 0; i < kRounds; ++i) {
        SpinGuard guard(lock);
        guarded = guarded + 1;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(guarded, uint64_t{kThreads} * kRounds);
  const LockCounts after = lock_counts(LockStat::frames);
  EXPECT_EQ(after.acquired - before.acquired, uint64_t{kThreads} * kRounds);
  EXPECT_LE(after.contended - before.contended, after.acquired - before.acquired);
  EXPECT_GE(after.spins - before.spins, after.contended - before.contended);
  EXPECT_FALSE(lock.is_locked());
}

TEST(SpinlockThreads, AnUncontendedLockCountsNoWait) {
  Spinlock lock{kCounted};
  const LockCounts before = lock_counts(LockStat::frames);
  for (unsigned i = 0; i < 100; ++i) {
    SpinGuard guard(lock);
    EXPECT_TRUE(lock.held_by_this_cpu());
    EXPECT_FALSE(lock.contended());
  }
  const LockCounts after = lock_counts(LockStat::frames);
  EXPECT_EQ(after.acquired - before.acquired, 100u);
  EXPECT_EQ(after.contended, before.contended);
  EXPECT_EQ(after.spins, before.spins);
  EXPECT_STREQ(lock_stat_name(LockStat::frames), "frames");
  EXPECT_STREQ(lock_stat_name(LockStat::kernel), "kernel");
}

}  // namespace
}  // namespace pvk
