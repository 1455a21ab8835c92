// CpuMask (base/lib/cpumask.h): set/clear/test, iteration, counting, and
// bits changed by several threads at once staying exact.
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "base/lib/cpumask.h"

namespace pvk {
namespace {

std::vector<unsigned> cpus_of(const CpuMask& m) {
  std::vector<unsigned> out;
  for (unsigned c : m) out.push_back(c);
  return out;
}

TEST(CpuMask, StartsEmpty) {
  CpuMask m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.count(), 0u);
  EXPECT_EQ(m.next(0), CpuMask::kBits);
  EXPECT_TRUE(cpus_of(m).empty());
  for (unsigned c = 0; c < CpuMask::kBits; ++c) EXPECT_FALSE(m.test(c)) << c;
}

TEST(CpuMask, SizedFromTheKernelLimit) {
  EXPECT_EQ(CpuMask::kBits, kCpuMaskBits);
  EXPECT_GE(CpuMask::kWords * CpuMask::kWordBits, kCpuMaskBits);
}

TEST(CpuMask, SetClearTestCountAndIterate) {
  CpuMask m;
  m.set(0);
  m.set(3);
  m.set(CpuMask::kBits - 1);
  m.set(3);  // twice: still one
  EXPECT_EQ(m.count(), 3u);
  EXPECT_TRUE(m.test(0));
  EXPECT_TRUE(m.test(3));
  EXPECT_FALSE(m.test(2));
  EXPECT_EQ(cpus_of(m), (std::vector<unsigned>{0, 3, CpuMask::kBits - 1}));
  EXPECT_EQ(m.next(1), 3u);
  EXPECT_EQ(m.next(4), CpuMask::kBits - 1);
  m.clear(3);
  m.clear(5);  // never set: nothing
  EXPECT_EQ(cpus_of(m), (std::vector<unsigned>{0, CpuMask::kBits - 1}));
  m.clear_all();
  EXPECT_TRUE(m.empty());
}

TEST(CpuMask, OutOfRangeCpusAreIgnored) {
  CpuMask m;
  m.set(CpuMask::kBits);
  m.set(1000);
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.test(CpuMask::kBits));
  EXPECT_FALSE(m.test_and_set(CpuMask::kBits));
  EXPECT_TRUE(CpuMask::of(CpuMask::kBits).empty());
}

TEST(CpuMask, TestAndSetSaysWhetherItWasThere) {
  CpuMask m;
  EXPECT_FALSE(m.test_and_set(2));
  EXPECT_TRUE(m.test_and_set(2));
  EXPECT_EQ(m.count(), 1u);
}

TEST(CpuMask, CombinationsAndConstructors) {
  const CpuMask first3 = CpuMask::first(3);
  EXPECT_EQ(cpus_of(first3), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(cpus_of(first3.without(1)), (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(cpus_of(first3.without(7)), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(cpus_of(first3 & CpuMask::of(2)), (std::vector<unsigned>{2}));
  EXPECT_EQ(cpus_of(CpuMask::of(5) | CpuMask::of(1)), (std::vector<unsigned>{1, 5}));
  EXPECT_TRUE(CpuMask::first(CpuMask::kBits + 4) == CpuMask::first(CpuMask::kBits));
  EXPECT_EQ(CpuMask::first(CpuMask::kBits).count(), CpuMask::kBits);
  EXPECT_FALSE(first3 == CpuMask::first(2));
}

TEST(CpuMask, WordsAreTheBitmapXenReads) {
  CpuMask m;
  m.set(0);
  m.set(9);
  EXPECT_EQ(m.words()[0], (uint64_t{1} << 0) | (uint64_t{1} << 9));
}

TEST(CpuMask, ConcurrentSetsAndClearsOfDifferentBitsAreNotLost) {
  // Each thread plays one CPU joining and leaving its bit many times while
  // the others do the same; a non-atomic read-modify-write would lose bits.
  CpuMask m;
  constexpr unsigned kThreads = 8, kRounds = 20000;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([&m, t] {
      for (unsigned i = 0; i < kRounds; ++i) {
        m.set(t);
        if (!m.test(t)) std::abort();
        m.clear(t);
      }
      m.set(t);  // each ends joined
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(m.snapshot(), CpuMask::first(kThreads));
}

}  // namespace
}  // namespace pvk
