// TLB shootdown gathering (pvops/tlb/lazy_mmu_section.cpp) and the IPI path
// (pvops/tlb/tlb_shootdown.cpp), on the fake MMU (which records each
// flush_tlb_multi) and the fake cross-CPU requests (cross_cpu_host.h).
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "base/layout.h"
#include "cross_cpu_host.h"
#include "mmu_fixture.h"
#include "panic_host.h"
#include "pvops/tlb/tlb_shootdown.h"

namespace pvk::test {
namespace {

using testing::HasSubstr;

constexpr VirtAddr kUser{0x400000};
constexpr VirtAddr kKernel{PVK_SCRATCH_BASE};
VirtAddr user_page(unsigned i) { return kUser + i * kPageSize; }

std::vector<unsigned> cpus_of(const CpuMask& m) {
  std::vector<unsigned> out;
  for (unsigned c : m) out.push_back(c);
  return out;
}

class TlbShootdownTest : public FakeMmuTest {
 protected:
  void SetUp() override {
    start({512, PteAccess::Attrs, true});
    fake_xcpu().online = 4;
  }
  std::vector<MmuEvent> multis() const { return fake().events(Ev::FlushMulti); }
};
using TlbShootdownDeathTest = TlbShootdownTest;

TEST_F(TlbShootdownTest, OnlyThisCpuInTheMaskSendsNothing) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  SpaceTlb mask{CpuMask::of(0)};
  LazyMmuSection section(root_, mask);
  for (unsigned i = 0; i < 5; ++i) section.invalidate(user_page(i));
  section.invalidate_all();
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_TRUE(multis().empty());
  EXPECT_EQ(fake().count(Ev::FlushAll), 1u);
  EXPECT_EQ(g_mmu_counters.shootdowns, 0u);
  EXPECT_EQ(g_mmu_counters.shootdown_cpus, 0u);
}

TEST_F(TlbShootdownTest, OneShootdownPerSectionWithEveryPageAndOnlyTheOtherCpus) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  SpaceTlb mask;
  mask.cpus.set(0), mask.cpus.set(1), mask.cpus.set(3);
  LazyMmuSection section(root_, mask);
  section.invalidate(user_page(0));
  section.invalidate_range(user_page(4), 3);
  section.invalidate(user_page(9));
  EXPECT_TRUE(multis().empty()) << "nothing is sent before the section drains";
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  const auto m = multis();
  ASSERT_EQ(m.size(), 1u) << "one shootdown for the whole section";
  EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{1, 3})) << "never this CPU";
  EXPECT_FALSE(m[0].info.full);
  ASSERT_EQ(m[0].info.count, 5u);
  const VirtAddr want[] = {user_page(0), user_page(4), user_page(5), user_page(6), user_page(9)};
  for (unsigned i = 0; i < 5; ++i) EXPECT_EQ(m[0].info.pages[i], want[i]) << i;
  EXPECT_EQ(fake().count(Ev::FlushOne), 5u) << "this CPU flushes the same pages itself";
  EXPECT_EQ(g_mmu_counters.shootdowns, 1u);
  EXPECT_EQ(g_mmu_counters.shootdown_cpus, 2u);
}

TEST_F(TlbShootdownTest, TheShootdownIsQueuedBeforeTheSectionsUpdatesAreSent) {
  // Xen's hypercall path queues MMUEXT_*_MULTI behind the updates: the
  // section must ask for it before its lazy flush, as it does the local ones.
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  SpaceTlb mask{CpuMask::first(2)};
  LazyMmuSection section(root_, mask);
  section.invalidate(user_page(1));
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  std::vector<Ev> kinds;
  for (const MmuEvent& e : fake().events())
    if (e.kind != Ev::LoadRoot) kinds.push_back(e.kind);
  // The leave sends the queue (no table to release after it).
  EXPECT_THAT(kinds, testing::ElementsAre(Ev::LazyEnter, Ev::FlushOne, Ev::FlushMulti, Ev::LazyLeave));
}

TEST_F(TlbShootdownTest, UpToTheCeilingPagesThenOneFullFlushEverywhere) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  EXPECT_EQ(kTlbSinglePageFlushCeiling, 33u) << "Linux's tlb_single_page_flush_ceiling";
  SpaceTlb mask{CpuMask::first(3)};
  for (unsigned n : {kTlbSinglePageFlushCeiling, kTlbSinglePageFlushCeiling + 1}) {
    SCOPED_TRACE(n);
    fake().clear_events();
    LazyMmuSection section(root_, mask);
    for (unsigned i = 0; i < n; ++i) section.invalidate(user_page(i));
    ASSERT_EQ(error_of(section.finish()), Errno::Ok);
    const auto m = multis();
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{1, 2}));
    if (n <= kTlbSinglePageFlushCeiling) {
      EXPECT_FALSE(m[0].info.full);
      EXPECT_EQ(m[0].info.count, n);
      EXPECT_EQ(fake().count(Ev::FlushOne), n);
    } else {
      EXPECT_TRUE(m[0].info.full);
      EXPECT_EQ(fake().count(Ev::FlushAll), 1u);
      EXPECT_EQ(fake().count(Ev::FlushOne), 0u);
    }
  }
  // A range past the ceiling in one call is a full flush too.
  fake().clear_events();
  LazyMmuSection section(root_, mask);
  section.invalidate_range(user_page(0), 512);
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  ASSERT_EQ(multis().size(), 1u);
  EXPECT_TRUE(multis()[0].info.full);
}

TEST_F(TlbShootdownTest, ASpaceNotLoadedHereIsFlushedOnlyWhereItIs) {
  ASSERT_NE(g_current_root, root_);
  SpaceTlb mask{CpuMask::of(2)};  // loaded on CPU 2 only
  LazyMmuSection section(root_, mask);
  section.invalidate(user_page(3));
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll), 0u) << "nothing cached on this CPU";
  const auto m = multis();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{2}));
  EXPECT_EQ(m[0].info.count, 1u);
}

TEST_F(TlbShootdownTest, AnEmptyMaskAndNoLocalRootFlushesNothing) {
  SpaceTlb mask;
  LazyMmuSection section(root_, mask);
  section.invalidate(user_page(3));
  section.invalidate_all();
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll) + fake().count(Ev::FlushMulti), 0u);
}

TEST_F(TlbShootdownTest, KernelHalfChangesReachEveryCpuOnPvksTables) {
  // CPU 2 has loaded a root (it runs on pvk's tables); CPU 1 never has.
  fake_xcpu().this_cpu = 2;
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  fake_xcpu().this_cpu = 0;
  EXPECT_EQ(cpus_of(kernel_tlb_cpus()), (std::vector<unsigned>{0, 2}));
  LazyMmuSection section(root_);  // a kernel section: no mask of its own
  section.invalidate(kKernel);
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  const auto m = multis();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{2}));
  EXPECT_EQ(m[0].info.pages[0], kKernel);
  EXPECT_EQ(fake().count(Ev::FlushOne), 1u) << "and this CPU";
}

TEST_F(TlbShootdownTest, TheMaskIsReadWhenTheSectionDrains) {
  // A CPU that joins while the section runs (it loaded the root after the
  // section began) is still reached: the mask is read after the stores.
  SpaceTlb mask{CpuMask::of(0)};
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  LazyMmuSection section(root_, mask);
  section.invalidate(user_page(0));
  mask.cpus.set(3);
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  ASSERT_EQ(multis().size(), 1u);
  EXPECT_EQ(cpus_of(multis()[0].cpus), (std::vector<unsigned>{3}));
}

// ---- lazy TLB: who a flush may skip, and who must catch up ----

TEST(LazyTlbDecision, LazyCpusAreLeftOutUnlessTablesWereFreed) {
  CpuMask space, lazy;
  space.set(0), space.set(1), space.set(2), space.set(3);
  lazy.set(2), lazy.set(3), lazy.set(5);  // CPU 5 is lazy on some other space
  EXPECT_EQ(cpus_of(shootdown_targets(space, lazy, 0, TablesFreed::No)), (std::vector<unsigned>{1}));
  EXPECT_EQ(cpus_of(shootdown_targets(space, lazy, 0, TablesFreed::Yes)), (std::vector<unsigned>{1, 2, 3}))
      << "freed tables: the lazy CPUs' paging-structure caches must go too";
  EXPECT_EQ(cpus_of(shootdown_targets(space, lazy, 2, TablesFreed::No)), (std::vector<unsigned>{0, 1}))
      << "never the sender, lazy or not";
  EXPECT_TRUE(shootdown_targets(CpuMask::of(3), lazy, 0, TablesFreed::No).empty());
}

TEST(LazyTlbDecision, ACpuBehindTheSpacesGenerationFlushesEverything) {
  EXPECT_EQ(lazy_catch_up(0, 0), CatchUp::Nothing);
  EXPECT_EQ(lazy_catch_up(7, 7), CatchUp::Nothing);
  EXPECT_EQ(lazy_catch_up(8, 7), CatchUp::FlushAll);
  EXPECT_EQ(lazy_catch_up(20, 3), CatchUp::FlushAll);
}

TEST(LazyTlbDecision, OnlyAFlushOfTheNextGenerationMovesACpuOn) {
  SpaceTlb tlb;
  EXPECT_EQ(bump_tlb_gen(tlb), 1u);
  advance_tlb_flushed(tlb, 1, 1);
  EXPECT_EQ(tlb.flushed[1], 1u) << "it had everything before";
  EXPECT_EQ(bump_tlb_gen(tlb), 2u);  // skipped by this one (lazy) ...
  EXPECT_EQ(bump_tlb_gen(tlb), 3u);  // ... but sent this one's pages
  advance_tlb_flushed(tlb, 1, 3);
  EXPECT_EQ(tlb.flushed[1], 1u) << "generation 2's pages were never flushed there";
  EXPECT_EQ(lazy_catch_up(read_tlb_gen(tlb), tlb.flushed[1]), CatchUp::FlushAll);
  note_tlb_flushed(tlb, 1, 3);  // a full flush after reading generation 3
  EXPECT_EQ(tlb.flushed[1], 3u);
  note_tlb_flushed(tlb, 1, 2);
  EXPECT_EQ(tlb.flushed[1], 3u) << "never lowered";
}

TEST_F(TlbShootdownTest, ASectionSkipsTheLazyCpusCountsThemAndBumpsTheGeneration) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  SpaceTlb space{CpuMask::first(3)};
  set_tlb_lazy(2);
  LazyMmuSection section(root_, space);
  section.invalidate(user_page(1));
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  const auto m = multis();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{1})) << "CPU 2 is lazy";
  EXPECT_EQ(g_mmu_counters.shootdown_lazy_skipped, 1u);
  EXPECT_EQ(g_mmu_counters.shootdown_cpus, 1u);
  EXPECT_EQ(space.gen, 1u);
  EXPECT_EQ(space.flushed[0], 1u) << "this CPU flushed the page itself";
  EXPECT_EQ(space.flushed[1], 1u) << "CPU 1 was sent it";
  EXPECT_EQ(space.flushed[2], 0u) << "CPU 2 is behind: it catches up when it comes back";
}

TEST_F(TlbShootdownTest, OnlyLazyCpusElsewhereMeansNoShootdownAtAll) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  SpaceTlb space{CpuMask::first(2)};
  set_tlb_lazy(1);
  LazyMmuSection section(root_, space);
  section.invalidate_all();
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_TRUE(multis().empty());
  EXPECT_EQ(g_mmu_counters.shootdowns, 0u);
  EXPECT_EQ(g_mmu_counters.shootdown_lazy_skipped, 1u);
  EXPECT_EQ(space.gen, 1u) << "the generation moves even when nobody is sent the flush";
}

TEST_F(TlbShootdownTest, ATableUnhookedFromASharedSetReachesTheLazyCpusToo) {
  // ptshare: a table dropped (or copied out) by this space is freed later
  // by another's section, which does not reach this space's lazy CPUs.
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  SpaceTlb space{CpuMask::first(3)};
  set_tlb_lazy(2);
  LazyMmuSection section(root_, space);
  section.invalidate_range(user_page(0), 512);
  section.table_unhooked();
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  ASSERT_EQ(multis().size(), 1u);
  EXPECT_EQ(cpus_of(multis()[0].cpus), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(g_mmu_counters.shootdown_lazy_skipped, 0u);
}

// ---- the IPI path ----

std::vector<std::pair<unsigned, uint64_t>> g_target_flushes;  // (cpu, va or ~0 for all)
void target_one(VirtAddr va) { g_target_flushes.push_back({fake_xcpu().this_cpu, raw(va)}); }
void target_all() { g_target_flushes.push_back({fake_xcpu().this_cpu, ~uint64_t{0}}); }

class ShootdownIpiTest : public TlbShootdownTest {
 protected:
  void SetUp() override {
    TlbShootdownTest::SetUp();
    g_target_flushes.clear();
    init_tlb_shootdown({&target_one, &target_all});
  }
};

TEST_F(ShootdownIpiTest, EachTargetRunsTheRequestOnItsOwnCpuAndAcknowledges) {
  TlbFlushInfo info;
  info.count = 2;
  info.pages[0] = user_page(1);
  info.pages[1] = user_page(7);
  CpuMask targets;
  targets.set(0), targets.set(1), targets.set(3);
  const CpuMask refused = shootdown_ipi(targets, info);
  EXPECT_TRUE(refused.empty());
  ASSERT_EQ(fake_xcpu().sent.size(), 2u) << "not this CPU";
  EXPECT_EQ(fake_xcpu().sent[0].to, 1u);
  EXPECT_EQ(fake_xcpu().sent[1].to, 3u);
  EXPECT_EQ(fake_xcpu().sent[0].kind, xcpu::Ipi::TlbFlush);
  using P = std::pair<unsigned, uint64_t>;
  EXPECT_EQ(g_target_flushes, (std::vector<P>{{1, raw(user_page(1))}, {1, raw(user_page(7))},
                                              {3, raw(user_page(1))}, {3, raw(user_page(7))}}));
  EXPECT_EQ(g_mmu_counters.ipis_sent, 2u);
  // A second request (the mailbox is free again) asking for everything.
  g_target_flushes.clear();
  TlbFlushInfo all;
  all.full = true;
  EXPECT_TRUE(shootdown_ipi(CpuMask::of(2), all).empty());
  EXPECT_EQ(g_target_flushes, (std::vector<P>{{2, ~uint64_t{0}}}));
}

TEST_F(ShootdownIpiTest, ARequestHandledLaterIsStillRunAndAcknowledged) {
  // Delivery as a real CPU would: the target takes the request when it
  // polls, not inside send(); the sender's wait must see its acknowledgement.
  fake_xcpu().deliver = false;
  TlbFlushInfo info;
  info.full = true;
  // The target polls before the sender waits (a handler run from poll()).
  fake_xcpu().this_cpu = 1;
  handle_tlb_shootdowns();  // nothing pending yet: no flush
  fake_xcpu().this_cpu = 0;
  EXPECT_TRUE(g_target_flushes.empty());
  // With delivery off, the sender would spin: make CPU 1 answer from the
  // fake's poll by delivering again, and check nothing was flushed twice.
  fake_xcpu().deliver = true;
  EXPECT_TRUE(shootdown_ipi(CpuMask::of(1), info).empty());
  EXPECT_EQ(g_target_flushes.size(), 1u);
}

TEST_F(ShootdownIpiTest, RefusedTargetsAreReturnedAndNotWaitedFor) {
  fake_xcpu().refuse = true;
  TlbFlushInfo info;
  info.full = true;
  const CpuMask refused = shootdown_ipi(CpuMask::first(3), info);
  EXPECT_EQ(cpus_of(refused), (std::vector<unsigned>{1, 2}));
  EXPECT_TRUE(g_target_flushes.empty());
  EXPECT_EQ(g_mmu_counters.ipis_sent, 0u);
  // The mailbox is free: a later request goes through.
  fake_xcpu().refuse = false;
  EXPECT_TRUE(shootdown_ipi(CpuMask::of(1), info).empty());
}

TEST_F(ShootdownIpiTest, OfflineTargetsAreRefused) {
  fake_xcpu().online = 2;
  TlbFlushInfo info;
  info.full = true;
  EXPECT_EQ(cpus_of(shootdown_ipi(CpuMask::of(3), info)), (std::vector<unsigned>{3}));
}

}  // namespace
}  // namespace pvk::test
