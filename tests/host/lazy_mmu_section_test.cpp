// LazyMmuSection (pvops/tlb/lazy_mmu_section.{h,cpp}): the lazy-MMU section object — TLB
// invalidation gathering, deferred page-table release, finish() rules.
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "base/layout.h"
#include "mmu_fixture.h"
#include "panic_host.h"

namespace pvk::test {
namespace {

using testing::ElementsAreArray;
using testing::HasSubstr;

constexpr VirtAddr kUser{0x400000};
constexpr VirtAddr kKernel{PVK_SCRATCH_BASE};

class LazyMmuSectionTest : public FakeMmuTest {
 protected:
  void SetUp() override { start({512, PteAccess::Attrs, false}); }

  // A frame prepared as an (empty) page table, as the walk would have made it.
  Pfn make_table(Level level = Level::L1) {
    const Pfn t = frames().must_alloc();
    memset(phys_to_virt(t), 0, kPageSize);
    must(g_mmu.alloc_pt_page(t, level), "prepare");
    return t;
  }

  std::vector<Ev> kinds() const {
    std::vector<Ev> k;
    for (const MmuEvent& e : fake().events()) k.push_back(e.kind);
    return k;
  }
};
using LazyMmuSectionDeathTest = LazyMmuSectionTest;

VirtAddr user_page(unsigned i) { return kUser + i * kPageSize; }

TEST_F(LazyMmuSectionTest, EntersLazyModeOnConstructionAndLeavesOnFinish) {
  LazyMmuSection section(root_);
  EXPECT_EQ(fake().lazy_depth(), 1);
  EXPECT_THAT(kinds(), ElementsAreArray({Ev::LazyEnter}));
  EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(fake().lazy_depth(), 0);
  // Nothing gathered: leaving lazy mode sends the queue, with no flush of
  // its own before it.
  EXPECT_THAT(kinds(), ElementsAreArray({Ev::LazyEnter, Ev::LazyLeave}));
}

TEST_F(LazyMmuSectionTest, ASectionWithOnlyFlushesLeavesLazyModeWhereItWouldSendTheQueue) {
  LazyMmuSection section(root_);
  section.invalidate(kKernel);  // the kernel half: every CPU's, this one's too
  EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  // The TLB flush is queued before the leave, which sends it with the
  // updates; no table follows, so no separate send.
  EXPECT_THAT(kinds(), ElementsAreArray({Ev::LazyEnter, Ev::FlushOne, Ev::LazyLeave}));
  EXPECT_EQ(fake().lazy_depth(), 0);
}

TEST_F(LazyMmuSectionTest, AFlushingSectionReportsAFailedLeave) {
  static ErrorOr<void> (*saved)() = nullptr;
  saved = g_mmu.leave_lazy_mmu;
  g_mmu.leave_lazy_mmu = []() -> ErrorOr<void> {
    (void)saved();
    return Errno::EIO;
  };
  LazyMmuSection section(root_);
  section.invalidate(kKernel);
  const Errno e = error_of(section.finish());
  g_mmu.leave_lazy_mmu = saved;
  EXPECT_EQ(e, Errno::EIO) << "the leave sent the queue in the drain: its refusal is the section's";
}

TEST_F(LazyMmuSectionTest, AnEmptySectionReportsAFailedLeave) {
  static ErrorOr<void> (*saved)() = nullptr;
  saved = g_mmu.leave_lazy_mmu;
  g_mmu.leave_lazy_mmu = []() -> ErrorOr<void> {
    (void)saved();  // left all the same, as a refused send leaves lazy mode
    return Errno::EIO;
  };
  LazyMmuSection section(root_);
  const Errno e = error_of(section.finish());
  g_mmu.leave_lazy_mmu = saved;
  EXPECT_EQ(e, Errno::EIO) << "the leave sent the queue: its refusal is the section's";
}

TEST_F(LazyMmuSectionDeathTest, DestroyingWithoutFinishPanics) {
  EXPECT_DEATH({ LazyMmuSection section(root_); }, "LazyMmuSection destroyed without finish");
}

TEST_F(LazyMmuSectionTest, FinishTwicePanics) {
  LazyMmuSection section(root_);
  EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  const unsigned panics = panic_count();
  try {
    (void)section.finish();
    ADD_FAILURE() << "second finish() returned";
  } catch (const PanicError& e) {
    EXPECT_THAT(e.what(), HasSubstr("twice"));
  }
  EXPECT_EQ(panic_count(), panics + 1);
  EXPECT_EQ(fake().count(Ev::LazyLeave), 1u) << "the second finish must not leave lazy mode again";
}

TEST_F(LazyMmuSectionTest, NestingPanics) {
  LazyMmuSection outer(root_);
  const unsigned panics = panic_count();
  try {
    LazyMmuSection inner(root_);
    ADD_FAILURE() << "a nested section was opened";
    (void)inner.finish();
  } catch (const PanicError& e) {
    EXPECT_THAT(e.what(), HasSubstr("do not nest"));
  }
  EXPECT_EQ(panic_count(), panics + 1);
  EXPECT_EQ(fake().lazy_depth(), 1) << "the inner section never entered lazy mode";
  EXPECT_EQ(error_of(outer.finish()), Errno::Ok);
  LazyMmuSection after(root_);  // the outer one is closed: a new section may open
  EXPECT_EQ(error_of(after.finish()), Errno::Ok);
}

TEST_F(LazyMmuSectionTest, TheFakeRefusesANestedEnterAsXenWould) {
  g_mmu.enter_lazy_mmu(OnRefusal::Fail);
  g_mmu.enter_lazy_mmu(OnRefusal::Fail);
  ASSERT_EQ(fake().violations().size(), 1u);
  EXPECT_THAT(fake().violations()[0], HasSubstr("do not nest"));
  fake().violations().clear();
  EXPECT_EQ(error_of(g_mmu.leave_lazy_mmu()), Errno::Ok);
  EXPECT_EQ(error_of(g_mmu.leave_lazy_mmu()), Errno::Ok);
}

TEST_F(LazyMmuSectionTest, InvalidationsOfAnUnloadedRootAreDroppedExceptKernelHalf) {
  ASSERT_NE(g_current_root, root_);
  {
    LazyMmuSection section(root_);
    section.invalidate(user_page(1));
    section.invalidate(kKernel);
    EXPECT_EQ(fake().count(Ev::FlushOne), 0u) << "flushes wait for finish()";
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  auto flushed = fake().events(Ev::FlushOne);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].va, kKernel);

  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    section.invalidate(user_page(1));
    section.invalidate(kKernel);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  flushed = fake().events(Ev::FlushOne);
  ASSERT_EQ(flushed.size(), 2u);
  EXPECT_EQ(flushed[0].va, user_page(1));
  EXPECT_EQ(flushed[1].va, kKernel);
}

TEST_F(LazyMmuSectionTest, UpToTheLimitFlushesEachPageThenTheWholeTlb) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  for (unsigned n : {0u, 1u, LazyMmuSection::kMaxSinglePageFlushes, LazyMmuSection::kMaxSinglePageFlushes + 1, 1000u}) {
    SCOPED_TRACE(n);
    fake().clear_events();
    LazyMmuSection section(root_);
    for (unsigned i = 0; i < n; ++i) section.invalidate(user_page(i));
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
    if (n <= LazyMmuSection::kMaxSinglePageFlushes) {
      std::vector<uint64_t> vas, expected;
      for (const MmuEvent& e : fake().events(Ev::FlushOne)) vas.push_back(raw(e.va));
      for (unsigned i = 0; i < n; ++i) expected.push_back(raw(user_page(i)));
      EXPECT_EQ(vas, expected);
      EXPECT_EQ(fake().count(Ev::FlushAll), 0u);
    } else {
      EXPECT_EQ(fake().count(Ev::FlushOne), 0u);
      EXPECT_EQ(fake().count(Ev::FlushAll), 1u);
    }
  }
}

TEST_F(LazyMmuSectionTest, TablesAreFreedOnlyAfterTheFlushes) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  const Pfn a = make_table(Level::L1), b = make_table(Level::L2);
  const uint64_t free_before = frames().free_count();
  // When a table is retired its frame must not be free yet (freed after).
  fake().fault = [](const MmuEvent& e) {
    if (e.kind == Ev::RetireTable) {
      EXPECT_FALSE(frames().is_free(e.table)) << "freed before release_pt_page";
    }
    return Errno::Ok;
  };
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    section.invalidate(user_page(0));
    EXPECT_EQ(error_of(section.release_table(a, Level::L1)), Errno::Ok);
    EXPECT_EQ(error_of(section.release_table(b, Level::L2)), Errno::Ok);
    EXPECT_FALSE(frames().is_free(a)) << "not before finish()";
    EXPECT_EQ(fake().count(Ev::RetireTable), 0u);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  fake().fault = nullptr;
  EXPECT_THAT(kinds(), ElementsAreArray({Ev::LazyEnter, Ev::FlushOne, Ev::LazyFlush, Ev::RetireTable, Ev::RetireTable,
                                         Ev::LazyLeave}));
  auto retired = fake().events(Ev::RetireTable);
  EXPECT_EQ(retired[0].table, a);
  EXPECT_EQ(retired[0].level, Level::L1);
  EXPECT_EQ(retired[1].table, b);
  EXPECT_EQ(retired[1].level, Level::L2);
  EXPECT_TRUE(frames().is_free(a));
  EXPECT_TRUE(frames().is_free(b));
  EXPECT_EQ(frames().free_count(), free_before + 2);
}

TEST_F(LazyMmuSectionTest, MoreThanMaxPendingTablesDrainsEarly) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  const unsigned n = LazyMmuSection::kMaxPendingTables + 1;
  std::vector<Pfn> tables;
  for (unsigned i = 0; i < n; ++i) tables.push_back(make_table());
  const uint64_t free_before = frames().free_count();
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    for (unsigned i = 0; i < 3; ++i) section.invalidate(user_page(i));
    for (unsigned i = 0; i + 1 < n; ++i) EXPECT_EQ(error_of(section.release_table(tables[i], Level::L1)), Errno::Ok);
    EXPECT_EQ(fake().count(Ev::RetireTable), 0u) << "a full batch is not drained until it must be";
    EXPECT_EQ(frames().free_count(), free_before);

    // One more: the pending ones go first, after the TLB and lazy flushes.
    EXPECT_EQ(error_of(section.release_table(tables[n - 1], Level::L1)), Errno::Ok);
    std::vector<Ev> expected = {Ev::LazyEnter, Ev::FlushOne, Ev::FlushOne, Ev::FlushOne, Ev::LazyFlush};
    expected.insert(expected.end(), LazyMmuSection::kMaxPendingTables, Ev::RetireTable);
    EXPECT_THAT(kinds(), ElementsAreArray(expected));
    EXPECT_EQ(frames().free_count(), free_before + LazyMmuSection::kMaxPendingTables);
    for (unsigned i = 0; i + 1 < n; ++i) EXPECT_TRUE(frames().is_free(tables[i])) << i;
    EXPECT_FALSE(frames().is_free(tables[n - 1]));
    EXPECT_EQ(fake().lazy_depth(), 1) << "still in the section";

    // The drain started over: a new invalidation is flushed by finish().
    fake().clear_events();
    section.invalidate(user_page(7));
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_THAT(kinds(), ElementsAreArray({Ev::FlushOne, Ev::LazyFlush, Ev::RetireTable, Ev::LazyLeave}));
  EXPECT_EQ(fake().events(Ev::FlushOne)[0].va, user_page(7));
  EXPECT_EQ(fake().events(Ev::RetireTable)[0].table, tables[n - 1]);
  EXPECT_EQ(frames().free_count(), free_before + n);
}

TEST_F(LazyMmuSectionTest, EarlyDrainResetsTheFullFlush) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  std::vector<Pfn> tables;
  for (unsigned i = 0; i <= LazyMmuSection::kMaxPendingTables; ++i) tables.push_back(make_table());
  fake().clear_events();
  LazyMmuSection section(root_);
  for (unsigned i = 0; i < LazyMmuSection::kMaxSinglePageFlushes + 5; ++i) section.invalidate(user_page(i));
  for (Pfn t : tables) EXPECT_EQ(error_of(section.release_table(t, Level::L1)), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::FlushAll), 1u);
  section.invalidate(user_page(1));
  EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::FlushAll), 1u) << "the full flush was already done";
  EXPECT_EQ(fake().count(Ev::FlushOne), 1u);
}

TEST_F(LazyMmuSectionTest, FinishReportsAFailedLazyFlushAndStillLeaves) {
  const auto saved = g_mmu.flush_lazy_mmu;
  g_mmu.flush_lazy_mmu = []() -> ErrorOr<void> { return Errno::EIO; };
  LazyMmuSection section(root_);
  // A table to release: the queue is sent first, staying lazy.
  ASSERT_EQ(error_of(section.release_table(make_table(Level::L1), Level::L1)), Errno::Ok);
  const Errno e = error_of(section.finish());
  g_mmu.flush_lazy_mmu = saved;
  EXPECT_EQ(e, Errno::EIO);
  EXPECT_EQ(fake().lazy_depth(), 0) << "leave_lazy_mmu runs even when the flush failed";
}

// If release_pt_page fails during an early drain, drain() returns with the
// pending list untouched, so the tables it had already retired and freed
// are retired and freed again by the next drain (finish()), which then
// stops at the double free and never frees the rest. See the report.
TEST_F(LazyMmuSectionTest, AFailedReleaseNeverRetiresATableTwice) {
  const unsigned n = LazyMmuSection::kMaxPendingTables + 1;
  std::vector<Pfn> tables;
  for (unsigned i = 0; i < n; ++i) tables.push_back(make_table());
  const uint64_t free_before = frames().free_count();
  const Pfn failing = tables[1];
  int failures = 0;
  std::map<uint64_t, int> attempts;  // release_pt_page calls per table
  fake().fault = [&](const MmuEvent& e) {
    if (e.kind != Ev::RetireTable) return Errno::Ok;
    ++attempts[raw(e.table)];
    return e.table == failing && failures++ == 0 ? Errno::EIO : Errno::Ok;
  };
  {
    LazyMmuSection section(root_);
    for (unsigned i = 0; i + 1 < n; ++i) EXPECT_EQ(error_of(section.release_table(tables[i], Level::L1)), Errno::Ok);
    EXPECT_EQ(error_of(section.release_table(tables[n - 1], Level::L1)), Errno::EIO);
    (void)section.finish();
  }
  fake().fault = nullptr;
  size_t twice = 0, not_freed = 0;
  for (const auto& [pfn, times] : attempts) twice += pfn != raw(failing) && times > 1;
  // Every table but the one whose release failed is back in the allocator.
  for (Pfn t : tables) not_freed += t != failing && !frames().is_free(t);
  EXPECT_EQ(twice, 0u) << "tables retired more than once";
  EXPECT_EQ(not_freed, 0u) << "tables (of " << n - 1 << ") never freed";
  EXPECT_GE(frames().free_count(), free_before + n - 1);
}

}  // namespace
}  // namespace pvk::test
