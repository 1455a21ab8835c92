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

// A machine with one CPU (xcpu::one_cpu): a lock is an owner mark and a
// count, and it leaves interrupts alone (kernel code runs with them off;
// base/lib/spinlock.h) — no call to the platform's irq_save/irq_restore,
// which with several CPUs every lock() and unlock() makes.
struct IrqCalls {
  static inline unsigned saves = 0, restores = 0;
  static uint64_t save() { return ++saves, 1; }
  static void restore(uint64_t) { ++restores; }
};

TEST(SpinlockOneCpu, AnOwnerMarkAndACountWithoutMasking) {
  Platform fake{};
  fake.irq_save = &IrqCalls::save;
  fake.irq_restore = &IrqCalls::restore;
  g_platform = &fake;
  Spinlock lock{kCounted};

  // Several CPUs: the interrupt state is saved and restored by the platform.
  IrqCalls::saves = IrqCalls::restores = 0;
  { SpinGuard guard(lock); }
  EXPECT_EQ(IrqCalls::saves, 1u);
  EXPECT_EQ(IrqCalls::restores, 1u);

  xcpu::g_one_cpu = true;
  IrqCalls::saves = IrqCalls::restores = 0;
  const LockCounts before = lock_counts(LockStat::frames);
  for (unsigned i = 0; i < 10; ++i) {
    SpinGuard guard(lock);
    EXPECT_TRUE(lock.held_by_this_cpu());
    EXPECT_TRUE(lock.is_locked());
    EXPECT_FALSE(lock.contended());
  }
  EXPECT_FALSE(lock.is_locked());
  EXPECT_FALSE(lock.held_by_this_cpu());
  lock.lock_irqs_off();
  EXPECT_TRUE(lock.held_by_this_cpu());
  lock.unlock_irqs_off();
  EXPECT_FALSE(lock.is_locked());
  const LockCounts after = lock_counts(LockStat::frames);
  EXPECT_EQ(after.acquired - before.acquired, 11u);
  EXPECT_EQ(after.contended, before.contended);
  EXPECT_EQ(IrqCalls::saves, 0u) << "a one-CPU lock masked interrupts through the platform";
  EXPECT_EQ(IrqCalls::restores, 0u);

  // An uncounted class counts nothing, and still marks its owner.
  constexpr LockClass kUncounted{"test-uncounted", LockRank::Frames};
  Spinlock quiet{kUncounted};
  const LockCounts frames_before = lock_counts(LockStat::frames);
  {
    SpinGuard guard(quiet);
    EXPECT_TRUE(quiet.held_by_this_cpu());
  }
  EXPECT_EQ(lock_counts(LockStat::frames).acquired, frames_before.acquired);

  xcpu::g_one_cpu = false;
  g_platform = nullptr;
}

}  // namespace
}  // namespace pvk
