// File-backed VMAs (mm/page_source.h, mm/source_fault.cpp) over the fake
// MMU: a fake file (a vector of frames, each filled with its page number,
// with holes) is the page source. Faults map its frames read-only and
// copy-on-write with the aligned window around them, writes copy, holes and
// pages past the end read as zeros; VMA splits, merges, fork and munmap keep
// the page offsets and the file's holds right; running out of frames leaks
// nothing. The fixture's consistency check counts the file's own reference
// of each frame (outside_refs).
#include "address_space_fixture.h"

namespace pvk {
namespace test {
namespace {

class FileVmaTest : public AddressSpaceTest {
 protected:
  static constexpr uint64_t kFilePages = 64;
  static constexpr uint64_t kHole = 37;  // a page the file has no frame for

  void SetUp() override {
    AddressSpaceTest::SetUp();
    set_mm_policy({.zero_page = true, .pgd_cache = true, .file_demand = true, .fault_around = 16});
    for (uint64_t i = 0; i < kFilePages; ++i) {
      if (i == kHole) {
        pages_.push_back(Pfn{0});
        continue;
      }
      const Pfn f = frames().must_alloc();
      memset(phys_to_virt<void>(f), pattern(i), kPageSize);
      frame_refs().set(f, 1);  // the file's own reference
      pages_.push_back(f);
    }
  }

  void TearDown() override {
    if (!HasFailure()) expect_consistent("before the file goes");
    while (!live_.empty()) destroy(live_.back());
    EXPECT_EQ(holds_, 0) << "a VMA still holds the file after every space is gone";
    for (Pfn f : pages_)
      if (raw(f) && frame_refs().dec(f) == 0) frames().must_free(f);
    pages_.clear();
    AddressSpaceTest::TearDown();
  }

  uint16_t outside_refs(Pfn f) const override {
    return std::find(pages_.begin(), pages_.end(), f) != pages_.end() && raw(f) ? 1 : 0;
  }

  static uint8_t pattern(uint64_t page) { return static_cast<uint8_t>(page + 1); }

  static unsigned take(void* self, uint64_t index, unsigned count, Pfn* out) {
    auto* t = static_cast<FileVmaTest*>(self);
    ++t->takes_;
    unsigned n = 0;
    for (; n < count && index + n < t->pages_.size() && raw(t->pages_[index + n]); ++n) {
      frame_refs().inc(t->pages_[index + n]);
      out[n] = t->pages_[index + n];
    }
    return n;
  }
  static void hold(void* self) { ++static_cast<FileVmaTest*>(self)->holds_; }
  static void drop(void* self) {
    auto* t = static_cast<FileVmaTest*>(self);
    EXPECT_GT(t->holds_, 0) << "the file dropped more often than held";
    --t->holds_;
  }
  static constexpr PageSourceOps kOps{.take_pages = &take, .hold = &hold, .drop = &drop};

  PageSource source(uint64_t first_page = 0) { return PageSource{&kOps, this, first_page}; }

  uint64_t map_file(AddressSpace* as, uint64_t len, uint32_t prot, uint64_t first_page = 0) {
    auto r = as->mmap(VirtAddr{0}, len, prot, 0, false, source(first_page));
    EXPECT_EQ(error_of(r), Errno::Ok);
    return r.is_error() ? 0 : raw(r.value());
  }

  bool mapped(const AddressSpace* as, uint64_t va) { return !entry(as, va).none(); }

  std::vector<Pfn> pages_;
  int holds_ = 0;
  uint64_t takes_ = 0;
};

TEST_P(FileVmaTest, MmapMapsNothingUntilAFault) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(kFilePages), kRx);
  EXPECT_EQ(holds_, 1);
  for (uint64_t i = 0; i < kFilePages; ++i) EXPECT_FALSE(mapped(as, a + pg(i))) << "page " << i;
  EXPECT_EQ(takes_, 0u);
}

TEST_P(FileVmaTest, ReadFaultMapsTheFilesFrameAndItsWindow) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(kFilePages), kRx);
  ASSERT_EQ(a % pg(16), 0u) << "the test assumes an aligned mapping";
  EXPECT_EQ(read(as, a + pg(21) + 7), pattern(21));
  const Pte e = entry(as, a + pg(21));
  EXPECT_EQ(entry_pfn(e), pages_[21]) << "the file's own frame, not a copy";
  EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::User | pte_bit::Cow));
  EXPECT_TRUE(lacks(e, pte_bit::Write | pte_bit::Nx));
  // The aligned window of 16 around it: pages 16..31, all the file's frames.
  for (uint64_t i = 0; i < kFilePages; ++i) {
    const bool in_window = i >= 16 && i < 32;
    EXPECT_EQ(mapped(as, a + pg(i)), in_window) << "page " << i;
    if (in_window) {
      EXPECT_EQ(frame_at(as, a + pg(i)), pages_[i]) << "page " << i;
    }
  }
  EXPECT_EQ(g_mm_stats.page_faults, 1u);
  EXPECT_EQ(g_mm_stats.file_faults, 1u);
  EXPECT_EQ(g_mm_stats.cow_frames_mapped, 16u);
  EXPECT_EQ(refs(pages_[21]), 2u) << "the file's reference and the mapping's";
  // The neighbours read without another fault.
  EXPECT_EQ(read(as, a + pg(16)), pattern(16));
  EXPECT_EQ(read(as, a + pg(31) + 4095), pattern(31));
  EXPECT_EQ(g_mm_stats.page_faults, 1u);
}

TEST_P(FileVmaTest, FaultAroundStopsAtTheVmaAndSkipsHolesAndMappedPages) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  // Pages 35..40 of the file (37 a hole), at a VMA of six pages.
  const uint64_t a = map_file(as, pg(6), kRo, 35);
  EXPECT_EQ(read(as, a), pattern(35));
  EXPECT_EQ(read(as, a + pg(2)), 0) << "a hole reads as zeros";
  EXPECT_EQ(frame_at(as, a + pg(2)), zero_page_);
  EXPECT_EQ(read(as, a + pg(5)), pattern(40));
  EXPECT_EQ(g_mm_stats.file_faults, 1u) << "the first fault mapped every page the file has";
  EXPECT_EQ(g_mm_stats.cow_frames_mapped, 5u);
}

TEST_P(FileVmaTest, WriteFaultCopiesThePageAndLeavesTheFileAlone) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(kFilePages), kRw);
  write(as, a + pg(3) + 1, 0xab);
  const Pfn own = frame_at(as, a + pg(3));
  EXPECT_NE(own, pages_[3]);
  EXPECT_TRUE(writable(as, a + pg(3)));
  EXPECT_EQ(bytes(own)[0], pattern(3));
  EXPECT_EQ(bytes(own)[1], 0xab);
  EXPECT_EQ(bytes(own)[4095], pattern(3));
  EXPECT_TRUE(page_is(pages_[3], pattern(3))) << "the file's frame is never written through a mapping";
  EXPECT_EQ(refs(pages_[3]), 1u);
  EXPECT_EQ(g_mm_stats.page_faults, 1u) << "one fault for a write, not a read-only map and a copy after it";
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  // A read-mapped page written later is copied by the COW path.
  EXPECT_EQ(read(as, a + pg(10)), pattern(10));
  write(as, a + pg(10), 0xcd);
  EXPECT_NE(frame_at(as, a + pg(10)), pages_[10]);
  EXPECT_TRUE(page_is(pages_[10], pattern(10)));
  EXPECT_EQ(refs(pages_[10]), 1u);
}

TEST_P(FileVmaTest, PagesPastTheEndAreZeros) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(8), kRw, kFilePages - 4);
  EXPECT_EQ(read(as, a + pg(3)), pattern(kFilePages - 1));
  EXPECT_EQ(read(as, a + pg(4)), 0);
  EXPECT_EQ(frame_at(as, a + pg(4)), zero_page_);
  write(as, a + pg(6), 9);
  EXPECT_EQ(read(as, a + pg(6)), 9);
}

TEST_P(FileVmaTest, SplitsKeepEachPiecesPageOffsetAndMergesJoinThemAgain) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(48), kRo);
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a + pg(10)}, pg(20), kRw)), Errno::Ok);
  EXPECT_THAT(vmas(as), ElementsAre(V{a, a + pg(10), kRo}, V{a + pg(10), a + pg(30), kRw}, V{a + pg(30), a + pg(48), kRo}));
  EXPECT_EQ(holds_, 3);
  EXPECT_EQ(read(as, a + pg(44)), pattern(44)) << "the third piece starts at the file's page 30";
  write(as, a + pg(12), 1);
  EXPECT_EQ(bytes(frame_at(as, a + pg(12)))[4], pattern(12));
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a + pg(10)}, pg(20), kRo)), Errno::Ok);
  EXPECT_THAT(vmas(as), ElementsAre(V{a, a + pg(48), kRo}));
  EXPECT_EQ(holds_, 1);
  ASSERT_EQ(error_of(as->munmap(VirtAddr{a + pg(20)}, pg(4))), Errno::Ok);
  EXPECT_EQ(holds_, 2);
  EXPECT_EQ(read(as, a + pg(47)), pattern(47));
  ASSERT_EQ(error_of(as->munmap(VirtAddr{a}, pg(48))), Errno::Ok);
  EXPECT_EQ(holds_, 0);
  EXPECT_EQ(refs(pages_[44]), 1u) << "munmap gave the mappings' references back";
}

TEST_P(FileVmaTest, NeitherAnonymousMemoryNorAnotherPartOfTheFileJoinsAFileVma) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap_fixed(as, kBase, pg(4), kRo);
  ASSERT_EQ(error_of(as->mmap(VirtAddr{a + pg(4)}, pg(4), kRo, 0, true, source(0))), Errno::Ok);
  ASSERT_EQ(error_of(as->mmap(VirtAddr{a + pg(8)}, pg(4), kRo, 0, true, source(8))), Errno::Ok);   // a gap in the file
  ASSERT_EQ(error_of(as->mmap(VirtAddr{a + pg(12)}, pg(4), kRo, 0, true, source(12))), Errno::Ok);  // continues it
  EXPECT_THAT(vmas(as), ElementsAre(V{a, a + pg(4), kRo}, V{a + pg(4), a + pg(8), kRo}, V{a + pg(8), a + pg(16), kRo}));
  EXPECT_EQ(holds_, 2);
  EXPECT_EQ(read(as, a + pg(13)), pattern(13));
  EXPECT_EQ(read(as, a + pg(9)), pattern(9));
  EXPECT_EQ(read(as, a + pg(5)), pattern(1));
  EXPECT_EQ(read(as, a), 0);
  EXPECT_EQ(error_of(as->mmap(VirtAddr{a}, pg(1), kRo, vm::Shared, true, source(0))), Errno::EINVAL)
      << "shared file mappings do not exist";
}

TEST_P(FileVmaTest, ForkHoldsTheFileAndTheChildFaultsInWhatTheParentNeverTouched) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = map_file(parent, pg(kFilePages), kRw);
  EXPECT_EQ(read(parent, a + pg(2)), pattern(2));
  write(parent, a + pg(50), 0x77);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(holds_, 2);
  EXPECT_EQ(read(child, a + pg(50)), 0x77) << "the parent's copy, shared copy-on-write";
  EXPECT_EQ(read(child, a + pg(40)), pattern(40)) << "faulted in from the file";
  EXPECT_EQ(frame_at(child, a + pg(40)), pages_[40]);
  EXPECT_FALSE(mapped(parent, a + pg(40)));
  write(child, a + pg(2), 3);
  EXPECT_EQ(read(parent, a + pg(2)), pattern(2));
  destroy(parent);
  EXPECT_EQ(holds_, 1);
  EXPECT_EQ(read(child, a + pg(60)), pattern(60));
}

TEST_P(FileVmaTest, RunningOutOfFramesLeavesTheFileAndTheSpaceAsTheyWere) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(kFilePages), kRw);
  EXPECT_EQ(read(as, a + pg(60)), pattern(60));  // its page tables exist now
  hoard(0);
  EXPECT_EQ(try_write(as, a + pg(62), 1), FaultOutcome::OutOfMemory) << "the copy needs a frame";
  EXPECT_EQ(refs(pages_[62]), 2u) << "still mapped read-only by the first fault's window";
  EXPECT_EQ(try_write(as, a + pg(1), 1), FaultOutcome::OutOfMemory) << "the copy needs a frame";
  EXPECT_FALSE(mapped(as, a + pg(1)));
  EXPECT_EQ(refs(pages_[1]), 1u) << "the taken reference went back";
  release_hoard();
  write(as, a + pg(1), 5);
  EXPECT_EQ(read(as, a + pg(1)), 5);
}

TEST_P(FileVmaTest, EagerMappingMapsEveryPageTheFileHasAtOnce) {
  set_mm_policy({.zero_page = true, .pgd_cache = true, .file_demand = false});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = map_file(as, pg(kFilePages + 4), kRx);
  for (uint64_t i = 0; i < kFilePages + 4; ++i) {
    const bool has_frame = i < kFilePages && i != kHole;
    EXPECT_EQ(mapped(as, a + pg(i)), has_frame) << "page " << i;
    if (has_frame) {
      EXPECT_EQ(frame_at(as, a + pg(i)), pages_[i]) << "page " << i;
      EXPECT_TRUE(lacks(entry(as, a + pg(i)), pte_bit::Write));
    }
  }
  EXPECT_EQ(g_mm_stats.cow_frames_mapped, kFilePages - 1);
  EXPECT_EQ(read(as, a + pg(40)), pattern(40));
  EXPECT_EQ(read(as, a + pg(kHole)), 0) << "a hole faults in zeros";
  EXPECT_EQ(read(as, a + pg(kFilePages + 1)), 0);
  EXPECT_EQ(g_mm_stats.page_faults, 2u) << "only the pages the file has no frame for fault";
  EXPECT_EQ(g_mm_stats.file_faults, 0u);
}

TEST_P(FileVmaTest, EagerMappingOutOfFramesIsAnErrorAndLeavesNothing) {
  set_mm_policy({.zero_page = true, .pgd_cache = true, .file_demand = false});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  hoard(0);  // not even a page table
  EXPECT_EQ(error_of(as->mmap(VirtAddr{0}, pg(8), kRo, 0, false, source())), Errno::ENOMEM);
  EXPECT_THAT(vmas(as), IsEmpty());
  EXPECT_EQ(holds_, 0);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(refs(pages_[i]), 1u) << "page " << i;
}

INSTANTIATE_TEST_SUITE_P(Modes, FileVmaTest, testing::ValuesIn(kAllWalkModes), walk_mode_name);

}  // namespace
}  // namespace test
}  // namespace pvk
