// Address spaces (mm/address_space.{h,cpp}) over the fake MMU, by topic;
// the fixture and how accesses are played: address_space_fixture.h.
// The root cache, and mmap(MAP_SHARED) populating failures.
#include "address_space_fixture.h"

namespace pvk {
namespace test {
namespace {

// =====================================================================
// The root cache
// =====================================================================

TEST_P(AddressSpaceTest, NewRootsShareTheKernelHalfAndNothingElse) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const Pte* kernel = fake().table(root_);
  const Pte* l4 = fake().table(as->root());
  ASSERT_TRUE(kernel && l4);
  EXPECT_TRUE(fake().is_table(as->root()));
  EXPECT_EQ(fake().table_level(as->root()), Level::L4);
  unsigned shared = 0;
  for (unsigned i = 0; i < kEntriesPerTable; ++i) {
    if (i < kEntriesPerTable / 2) {
      EXPECT_TRUE(l4[i].none()) << i;
    } else {
      EXPECT_EQ(l4[i], kernel[i]) << i;
      shared += kernel[i].present();
    }
  }
  EXPECT_EQ(shared, 2u);
  EXPECT_TRUE(l4[index_at(VirtAddr{PVK_PHYSMAP_BASE}, Level::L4)].present());
  EXPECT_TRUE(l4[index_at(VirtAddr{PVK_KERNEL_VMA}, Level::L4)].present());
}

TEST_P(AddressSpaceTest, WithThePgdCacheDestroyKeepsTheRootForTheNextSpace) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const Pfn root = as->root();
  fill(as, mmap(as, pg(1), kRw), 1);
  fill(as, mmap_fixed(as, 2 * 512 * kGiB, pg(1), kRw), 1);  // a second L4 entry
  fake().clear_events();
  destroy(as);
  EXPECT_EQ(retired(Level::L4), 0u);
  EXPECT_EQ(retired(Level::L3), 2u) << "the user half's tables all go";
  EXPECT_TRUE(fake().is_table(root));
  EXPECT_FALSE(frames().is_free(root));
  const Pte* l4 = fake().table(root);
  for (unsigned i = 0; i < kEntriesPerTable / 2; ++i) EXPECT_TRUE(l4[i].none()) << i;

  fake().clear_events();
  AddressSpace* next = create();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->root(), root);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 0u) << "alloc_pt_page not called again";
  EXPECT_EQ(fake().count(Ev::Store), 0u) << "the kernel half is already there";
  destroy(next);

  fake().clear_events();
  ASSERT_EQ(error_of(drain_root_cache()), Errno::Ok);
  auto gone = fake().events(Ev::RetireTable);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].table, root);
  EXPECT_EQ(gone[0].level, Level::L4);
  EXPECT_TRUE(frames().is_free(root));
}

TEST_P(AddressSpaceTest, WithoutThePgdCacheRootsAreReleasedAtOnce) {
  set_mm_policy({.zero_page = true, .pgd_cache = false});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const Pfn root = as->root();
  fill(as, mmap(as, pg(1), kRw), 1);
  fake().clear_events();
  destroy(as);
  auto gone = fake().events(Ev::RetireTable);
  ASSERT_FALSE(gone.empty());
  EXPECT_EQ(gone.back().table, root);
  EXPECT_EQ(gone.back().level, Level::L4);
  EXPECT_TRUE(frames().is_free(root));
  EXPECT_EQ(frames().free_count(), baseline_);

  fake().clear_events();
  AddressSpace* next = create();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(prepared(Level::L4), 1u);
}

TEST_P(AddressSpaceTest, TheRootCacheIsBounded) {
  std::vector<AddressSpace*> spaces;
  for (unsigned i = 0; i < 17; ++i) spaces.push_back(create());
  for (AddressSpace* as : spaces) ASSERT_NE(as, nullptr);
  fake().clear_events();
  for (AddressSpace* as : spaces) destroy(as);
  EXPECT_EQ(retired(Level::L4), 1u) << "sixteen kept, one released";
  ASSERT_EQ(error_of(drain_root_cache()), Errno::Ok);
  EXPECT_EQ(retired(Level::L4), 17u);
  EXPECT_EQ(frames().free_count(), baseline_);
}

// =====================================================================
// mmap(MAP_SHARED) populating failures
// =====================================================================

// populate_shared() allocates up to 64 frames, then maps them; when the map
// fails part-way (no frame for a page table), it frees *all* of them,
// including those already mapped, and the undoing munmap() then drops the
// mapped ones again: frame_refs().dec() of a count that map_frames never set
// panics ("reference count underflow"), after the frames were handed back to
// the allocator while still mapped. On the host the panic, inside a live
// LazyMmuSection, ends the process. See the report.
TEST_P(AddressSpaceTest, ASharedMmapThatRunsOutOfFramesUndoesItselfCleanly) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  // An L1 table covers [kBase, kBase + 2 MiB); the mapping starts two pages
  // before its end, so its last two pages need a new L1 table.
  const uint64_t boundary = kBase + 2 * kMiB;
  fill(as, mmap_fixed(as, boundary - pg(8), pg(1), kRw), 1);
  const auto before = vmas(as);
  hoard(4);  // the four frames of the mapping, none for the table
  EXPECT_EQ(error_of(as->mmap(VirtAddr{boundary - pg(2)}, pg(4), kRw, vm::Shared, true)), Errno::ENOMEM);
  EXPECT_EQ(frames().free_count(), 4u);
  release_hoard();
  EXPECT_EQ(vmas(as), before);
  EXPECT_TRUE(entry(as, boundary - pg(2)).none());
  EXPECT_TRUE(entry(as, boundary - pg(1)).none());
}

}  // namespace
}  // namespace test
}  // namespace pvk
