// The frame allocator's per-CPU magazines (base/frames/frame_magazines.cpp),
// one host thread switching between fake CPUs (fake_xcpu().this_cpu): the
// free count stays exact while frames sit in magazines, a frame in a
// magazine is free (freeing it again is EINVAL), frames stranded in another
// CPU's magazine are still found when the bitmap runs out, contiguous runs
// see past them, and a CPU that allocates and frees in turn takes the lock
// once per batch, not per frame.
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "base/frames/frame_allocator.h"
#include "base/lib/lock_stats.h"
#include "cross_cpu_host.h"
#include "mmu_fixture.h"

namespace pvk::test {
namespace {

struct Allocator {
  explicit Allocator(uint64_t max_pfn) : bits(FrameAllocator::storage_words_for(max_pfn)) {
    fake_xcpu().reset();
    fake_xcpu().online = 4;
    fa.init(bits.data(), max_pfn);
    EXPECT_EQ(error_of(fa.add_free_range(Pfn{0}, max_pfn)), Errno::Ok);
  }
  ~Allocator() { fake_xcpu().reset(); }
  void on_cpu(unsigned cpu) { fake_xcpu().this_cpu = cpu; }
  std::vector<uint64_t> bits;
  FrameAllocator fa;
};

uint64_t frames_lock_taken() { return lock_counts(LockStat::frames).acquired; }

TEST(FrameMagazines, RoundTripsOnSeveralCpusKeepTheFreeCountExact) {
  constexpr uint64_t kFrames = 1000;
  Allocator a(kFrames);
  std::set<uint64_t> held;
  std::mt19937 rng(11);
  for (int step = 0; step < 20000; ++step) {
    a.on_cpu(rng() % 4);
    if (held.empty() || rng() % 100 < 52) {
      auto p = a.fa.try_alloc();
      if (held.size() == kFrames) {
        ASSERT_EQ(error_of(p), Errno::ENOMEM) << "step " << step;
        continue;
      }
      ASSERT_FALSE(p.is_error()) << "step " << step << " with " << held.size() << " held";
      ASSERT_TRUE(held.insert(raw(p.value())).second) << "frame " << raw(p.value()) << " handed out twice";
      ASSERT_FALSE(a.fa.is_free(p.value()));
    } else {
      auto it = held.begin();
      std::advance(it, rng() % held.size());
      ASSERT_EQ(error_of(a.fa.try_free(Pfn{*it})), Errno::Ok) << "step " << step;
      ASSERT_TRUE(a.fa.is_free(Pfn{*it}));
      held.erase(it);
    }
    ASSERT_EQ(a.fa.free_count(), kFrames - held.size()) << "step " << step;
  }
  for (uint64_t p : held) ASSERT_EQ(error_of(a.fa.try_free(Pfn{p})), Errno::Ok);
  EXPECT_EQ(a.fa.free_count(), kFrames);
  for (uint64_t p = 0; p < kFrames; ++p) ASSERT_TRUE(a.fa.is_free(Pfn{p})) << p;
}

TEST(FrameMagazines, FreeingACachedFrameAgainIsEinvalOnEveryCpu) {
  Allocator a(256);
  a.on_cpu(0);
  const Pfn p = a.fa.must_alloc();
  ASSERT_EQ(error_of(a.fa.try_free(p)), Errno::Ok);  // now in CPU 0's magazine
  const uint64_t free_now = a.fa.free_count();
  EXPECT_TRUE(a.fa.is_free(p));
  EXPECT_EQ(error_of(a.fa.try_free(p)), Errno::EINVAL) << "the same CPU";
  a.on_cpu(2);
  EXPECT_EQ(error_of(a.fa.try_free(p)), Errno::EINVAL) << "another CPU";
  EXPECT_EQ(a.fa.free_count(), free_now);
  // The refill took a batch into the magazine: frames never handed out are
  // free there too, and one free in the bitmap is still caught.
  a.on_cpu(0);
  const Pfn next = a.fa.must_alloc();
  EXPECT_EQ(next, p) << "the last frame freed comes back first";
  EXPECT_EQ(error_of(a.fa.try_free(Pfn{raw(p) + 1})), Errno::EINVAL) << "in CPU 0's magazine, never handed out";
  EXPECT_EQ(error_of(a.fa.try_free(Pfn{200})), Errno::EINVAL) << "free in the bitmap";
  EXPECT_EQ(a.fa.free_count(), free_now - 1);
  // The refused frees changed nothing: every frame comes out once.
  std::set<uint64_t> got{raw(next)};
  for (auto f = a.fa.try_alloc(); !f.is_error(); f = a.fa.try_alloc())
    ASSERT_TRUE(got.insert(raw(f.value())).second) << raw(f.value());
  EXPECT_EQ(got.size(), 256u);
}

TEST(FrameMagazines, FramesStrandedInAnotherCpusMagazineAreStillAllocated) {
  constexpr uint64_t kFrames = 100;
  Allocator a(kFrames);
  a.on_cpu(1);
  std::vector<Pfn> all;
  for (uint64_t i = 0; i < kFrames; ++i) all.push_back(a.fa.must_alloc());
  EXPECT_EQ(error_of(a.fa.try_alloc()), Errno::ENOMEM);
  for (unsigned i = 0; i < 40; ++i) ASSERT_EQ(error_of(a.fa.try_free(all[i])), Errno::Ok);  // into CPU 1's magazine
  EXPECT_EQ(a.fa.free_count(), 40u);
  a.on_cpu(0);  // its magazine and the bitmap are empty
  std::set<uint64_t> got;
  for (unsigned i = 0; i < 40; ++i) {
    auto p = a.fa.try_alloc();
    ASSERT_FALSE(p.is_error()) << "ENOMEM with " << 40 - i << " frames in CPU 1's magazine";
    ASSERT_TRUE(got.insert(raw(p.value())).second);
  }
  EXPECT_EQ(error_of(a.fa.try_alloc()), Errno::ENOMEM);
  EXPECT_EQ(a.fa.free_count(), 0u);
  for (unsigned i = 0; i < 40; ++i) EXPECT_TRUE(got.count(raw(all[i]))) << raw(all[i]);
}

TEST(FrameMagazines, ContiguousRunsSeePastTheMagazines) {
  constexpr uint64_t kFrames = 64;
  Allocator a(kFrames);
  a.on_cpu(3);
  std::vector<Pfn> all;
  for (uint64_t i = 0; i < kFrames; ++i) all.push_back(a.fa.must_alloc());
  for (Pfn p : all) ASSERT_EQ(error_of(a.fa.try_free(p)), Errno::Ok);  // all in CPU 3's magazine
  EXPECT_EQ(a.fa.free_count(), kFrames);
  a.on_cpu(1);
  auto run = a.fa.try_alloc_run(16);
  ASSERT_FALSE(run.is_error()) << "every frame is free, only cached";
  EXPECT_EQ(a.fa.free_count(), kFrames - 16);
  const uint64_t first = raw(run.value());
  for (uint64_t p = first; p < first + 16; ++p) EXPECT_FALSE(a.fa.is_free(Pfn{p})) << p;
  // The rest comes out once each, never a frame of the run.
  std::set<uint64_t> got;
  for (auto f = a.fa.try_alloc(); !f.is_error(); f = a.fa.try_alloc()) {
    EXPECT_TRUE(raw(f.value()) < first || raw(f.value()) >= first + 16) << raw(f.value());
    ASSERT_TRUE(got.insert(raw(f.value())).second);
  }
  EXPECT_EQ(got.size(), kFrames - 16);
  EXPECT_EQ(error_of(a.fa.try_alloc_run(1)), Errno::ENOMEM);
}

TEST(FrameMagazines, AFullMagazineDrainsABatchAndStaysBounded) {
  constexpr uint64_t kFrames = 512;
  Allocator a(kFrames);
  a.on_cpu(0);
  std::vector<Pfn> all;
  for (uint64_t i = 0; i < 300; ++i) all.push_back(a.fa.must_alloc());
  for (uint64_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(error_of(a.fa.try_free(all[i])), Errno::Ok);
    ASSERT_EQ(a.fa.free_count(), kFrames - 300 + i + 1);
  }
  // Frames drained to the bitmap are free there: a second free still fails.
  for (Pfn p : all) ASSERT_EQ(error_of(a.fa.try_free(p)), Errno::EINVAL) << raw(p);
  a.fa.drain_magazines();
  EXPECT_EQ(a.fa.free_count(), kFrames);
  for (uint64_t p = 0; p < kFrames; ++p) ASSERT_TRUE(a.fa.is_free(Pfn{p})) << p;
  EXPECT_EQ(error_of(a.fa.add_free_range(Pfn{5}, 1)), Errno::EEXIST);
}

// The point of the magazines: a CPU that allocates and frees in turn stays
// off the shared lock; it takes it to refill or drain a batch, no more.
TEST(FrameMagazines, SteadyAllocAndFreeOnOneCpuTakesTheLockOncePerBatch) {
  Allocator a(4096);
  a.on_cpu(1);
  std::vector<Pfn> held;
  for (unsigned i = 0; i < 16; ++i) held.push_back(a.fa.must_alloc());  // warm: one refill
  for (Pfn p : held) a.fa.must_free(p);
  const uint64_t before = frames_lock_taken();
  for (unsigned round = 0; round < 1000; ++round) {
    held.clear();
    for (unsigned i = 0; i < 16; ++i) held.push_back(a.fa.must_alloc());
    for (Pfn p : held) a.fa.must_free(p);
  }
  EXPECT_EQ(frames_lock_taken() - before, 0u) << "32,000 operations within one magazine";
  EXPECT_EQ(a.fa.free_count(), 4096u);
}

}  // namespace
}  // namespace pvk::test
