// clone's flag rules and futex's timeout check (kernel/proc/thread_args.h).
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>

#include "kernel/proc/thread_args.h"

namespace pvk {
namespace {

// <sched.h>'s and <signal.h>'s macros shadow base/abi.h's names here (see
// host_compat.h): Linux's values, spelled apart.
constexpr uint64_t kVm = 0x100, kFs = 0x200, kFiles = 0x400, kSighand = 0x800, kVfork = 0x4000, kParent = 0x8000,
                   kThread = 0x10000, kSysvsem = 0x40000, kSettls = 0x80000, kParentSettid = 0x100000,
                   kChildCleartid = 0x200000, kChildSettid = 0x01000000, kSigchld = 17;
constexpr uint64_t kThreadFlags =
    kVm | kFs | kFiles | kSighand | kThread | kSysvsem | kSettls | kParentSettid | kChildCleartid;
constexpr uint64_t kUserTop = abi::kUserTop, kNonCanonicalStart = abi::kNonCanonicalStart;
using abi::Timespec;

Errno clone_error(uint64_t flags, uint64_t newsp = 0x7000000, uint64_t tls = 0x600000) {
  auto r = check_clone_args(flags, newsp, tls);
  return r.is_error() ? r.error() : Errno::Ok;
}

TEST(CloneArgs, ThreadLibraryFlagsMakeAThread) {
  auto r = check_clone_args(kThreadFlags, 0x7000000, 0x600000);
  ASSERT_FALSE(r.is_error());
  EXPECT_EQ(r.value(), CloneKind::Thread);
  // Without the optional companions too (no TLS, no tid words, no FS/SYSVSEM).
  r = check_clone_args(kVm | kFiles | kSighand | kThread, 0, 0);
  ASSERT_FALSE(r.is_error());
  EXPECT_EQ(r.value(), CloneKind::Thread);
}

TEST(CloneArgs, ForkLikeFlagsMakeAProcess) {
  for (uint64_t flags : {uint64_t{0}, kSigchld, kSigchld | kChildCleartid | kParentSettid,
                         kSigchld | kChildCleartid | kChildSettid,  // glibc's fork
                         kSettls, kFs}) {
    auto r = check_clone_args(flags, 0, 0x600000);
    ASSERT_FALSE(r.is_error()) << flags;
    EXPECT_EQ(r.value(), CloneKind::Process) << flags;
  }
}

TEST(CloneArgs, LinuxRulesAreEinval) {
  EXPECT_EQ(clone_error(kThread), Errno::EINVAL);                             // without SIGHAND
  EXPECT_EQ(clone_error(kThread | kVm | kFiles), Errno::EINVAL);   // without SIGHAND
  EXPECT_EQ(clone_error(kSighand), Errno::EINVAL);                            // without VM
  EXPECT_EQ(clone_error(kSighand | kThread | kFiles), Errno::EINVAL);
}

TEST(CloneArgs, WhatPvkCannotHonourIsEinval) {
  EXPECT_EQ(clone_error(kVm), Errno::EINVAL);                            // a shared space, not a thread
  EXPECT_EQ(clone_error(kVm | kSighand | kThread), Errno::EINVAL);  // a thread with its own files
  EXPECT_EQ(clone_error(kFiles), Errno::EINVAL);                         // files shared between processes
  EXPECT_EQ(clone_error(kThreadFlags | kVfork), Errno::EINVAL);
  EXPECT_EQ(clone_error(kThreadFlags | kParent), Errno::EINVAL);
  EXPECT_EQ(clone_error(kThreadFlags | (uint64_t{1} << 40)), Errno::EINVAL);  // unknown bits
}

TEST(CloneArgs, StackAndTlsMustBeUserAddresses) {
  EXPECT_EQ(clone_error(kThreadFlags, kUserTop - 16), Errno::Ok);
  EXPECT_EQ(clone_error(kThreadFlags, kUserTop), Errno::EINVAL);
  EXPECT_EQ(clone_error(kThreadFlags, 0xffff800000000000), Errno::EINVAL);
  EXPECT_EQ(clone_error(kThreadFlags, 0x7000000, kUserTop - 8), Errno::Ok);
  EXPECT_EQ(clone_error(kThreadFlags, 0x7000000, kUserTop), Errno::EPERM);
  EXPECT_EQ(clone_error(kThreadFlags, 0x7000000, kNonCanonicalStart), Errno::EPERM);
  EXPECT_EQ(clone_error(kThreadFlags, 0x7000000, ~uint64_t{0}), Errno::EPERM);
  // Without kSettls the tls argument is not looked at.
  EXPECT_EQ(clone_error(kThreadFlags & ~kSettls, 0x7000000, ~uint64_t{0}), Errno::Ok);
}

uint64_t timeout(int64_t sec, int64_t nsec) {
  auto r = futex_timeout_ns(Timespec{sec, nsec});
  return r.is_error() ? ~uint64_t{0} : r.value();
}

TEST(FutexTimeout, Converts) {
  EXPECT_EQ(timeout(0, 20000000), 20000000u);
  EXPECT_EQ(timeout(3, 5), 3000000005u);
  EXPECT_EQ(timeout(0, 0), 1u);  // expires at once, but is still a timeout
  EXPECT_EQ(timeout(INT64_MAX, 999999999), 1000000000ull * 1000000000ull + 999999999ull);  // capped
}

TEST(FutexTimeout, RefusesBadTimespecs) {
  EXPECT_TRUE(futex_timeout_ns(Timespec{-1, 0}).is_error());
  EXPECT_TRUE(futex_timeout_ns(Timespec{0, -1}).is_error());
  EXPECT_TRUE(futex_timeout_ns(Timespec{0, 1000000000}).is_error());
  EXPECT_EQ(futex_timeout_ns(Timespec{0, 1000000000}).error(), Errno::EINVAL);
}

// FUTEX_WAIT_BITSET's absolute times: what is left of them from now.
TEST(FutexDeadline, IsWhatIsLeftFromNow) {
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{5, 0}, 2000000000).value(), 3000000000u);
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{2, 1}, 2000000000).value(), 1u);
  // Now or past: a timeout that expires at once (0 would mean none).
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{2, 0}, 2000000000).value(), 1u);
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{0, 0}, 2000000000).value(), 1u);
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{0, 0}, 0).value(), 1u);
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{0, 1000000000}, 0).error(), Errno::EINVAL);
  EXPECT_EQ(futex_deadline_timeout_ns(Timespec{-1, 0}, 0).error(), Errno::EINVAL);
  // Far ahead: capped, never wrapped.
  EXPECT_GT(futex_deadline_timeout_ns(Timespec{INT64_MAX, 0}, 5).value(), 1000000000ull * 999999999ull);
}

// The conversion that once overflowed: (ns/1000) * khz / 1000 wraps past
// 2^64 / 2.7e6 us (~79 days at 2.7 GHz), so a long timeout expired at once.
TEST(TscCycles, LongTimeoutsDoNotWrap) {
  constexpr uint64_t kKhz = 2700000;  // 2.7 GHz
  EXPECT_EQ(ns_to_tsc_cycles(1000000000, kKhz), 2700000000u);
  EXPECT_EQ(ns_to_tsc_cycles(20000000, kKhz), 54000000u);
  EXPECT_EQ(ns_to_tsc_cycles(1, kKhz), 2u);  // 2.7 cycles, rounded down
  const uint64_t day_ns = 86400ull * 1000000000ull;
  EXPECT_EQ(ns_to_tsc_cycles(100 * day_ns, kKhz), 100ull * 86400ull * 2700000000ull);
  // The ~31-year cap of futex_timeout_ns still fits.
  const uint64_t cap = timeout(INT64_MAX, 999999999);
  const uint64_t c = ns_to_tsc_cycles(cap, kKhz);
  EXPECT_GT(c, ns_to_tsc_cycles(100 * day_ns, kKhz));
  EXPECT_EQ(c, 1000000000ull * 2700000000ull + 999999999ull * kKhz / 1000000);
  // Monotone across the old overflow point.
  uint64_t last = 0;
  for (uint64_t d = 1; d < 20000; d *= 3) {
    const uint64_t now = ns_to_tsc_cycles(d * day_ns, kKhz);
    EXPECT_GT(now, last) << d << " days";
    last = now;
  }
}

TEST(TscCycles, SaturatesInsteadOfWrapping) {
  EXPECT_EQ(ns_to_tsc_cycles(UINT64_MAX, 4000000000u), UINT64_MAX);
  EXPECT_EQ(deadline_after(UINT64_MAX - 5, 10), UINT64_MAX);
  EXPECT_EQ(deadline_after(100, 10), 110u);
}

}  // namespace
}  // namespace pvk
