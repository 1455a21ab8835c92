// Address spaces (mm/address_space.{h,cpp}) over the fake MMU, by topic;
// the fixture and how accesses are played: address_space_fixture.h.
// Fault decisions: zero page, fresh frames, COW copy, last-sharer takeover,
// PROT_NONE, running out of frames.
#include "address_space_fixture.h"

namespace pvk {
namespace test {
namespace {

// =====================================================================
// Fault decisions
// =====================================================================

TEST_P(AddressSpaceTest, ReadFaultMapsTheZeroPageReadOnlyAndCow) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(2), kRw);
  const uint64_t free_before = frames().free_count();
  fake().clear_events();

  EXPECT_EQ(read(as, a), 0);
  EXPECT_EQ(read(as, a + pg(1) + 5), 0);
  for (uint64_t va : {a, a + pg(1)}) {
    const Pte e = entry(as, va);
    EXPECT_EQ(entry_pfn(e), zero_page_);
    EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::User | pte_bit::Cow | pte_bit::Nx));
    EXPECT_TRUE(lacks(e, pte_bit::Write | pte_bit::ProtNone));
  }
  EXPECT_EQ(refs(zero_page_), 1u);
  EXPECT_EQ(g_mm_stats.zero_page_maps, 2u);
  EXPECT_EQ(g_mm_stats.page_faults, 2u);
  EXPECT_EQ(free_before - frames().free_count(), fake().count(Ev::PrepareTable)) << "page tables only, no frames";
  EXPECT_TRUE(page_is(zero_page_, 0));
}

TEST_P(AddressSpaceTest, ReadFaultWithoutTheZeroPageMapsAZeroedFrame) {
  set_mm_policy({.zero_page = false, .pgd_cache = true});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(1), kRw);
  dirty_free_frames();
  EXPECT_EQ(read(as, a + 9), 0);
  const Pte e = entry(as, a);
  EXPECT_NE(entry_pfn(e), zero_page_);
  EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::User | pte_bit::Write | pte_bit::Nx)) << "the VMA's full rights";
  EXPECT_TRUE(lacks(e, pte_bit::Cow));
  EXPECT_EQ(refs(entry_pfn(e)), 1u);
  EXPECT_TRUE(page_is(entry_pfn(e), 0));
  EXPECT_EQ(g_mm_stats.zero_page_maps, 0u);
  EXPECT_EQ(refs(zero_page_), 1u);
  // Writing needs no second fault.
  const uint64_t faults = g_mm_stats.page_faults;
  write(as, a, 1);
  EXPECT_EQ(g_mm_stats.page_faults, faults);
}

TEST_P(AddressSpaceTest, WriteFaultMapsAFreshWritableFrame) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(1), kRw);
  dirty_free_frames();
  write(as, a + 10, 0x5a);
  const Pte e = entry(as, a);
  const Pfn f = entry_pfn(e);
  EXPECT_NE(f, zero_page_);
  EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::User | pte_bit::Write | pte_bit::Nx));
  EXPECT_TRUE(lacks(e, pte_bit::Cow | pte_bit::ProtNone));
  EXPECT_EQ(refs(f), 1u);
  EXPECT_EQ(g_mm_stats.page_faults, 1u);
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);
  EXPECT_EQ(g_mm_stats.zero_page_maps, 0u);
  bytes(f)[10] = 0;
  EXPECT_TRUE(page_is(f, 0)) << "zeroed but for the byte written";
}

TEST_P(AddressSpaceTest, LeafRightsFollowTheVma) {
  set_mm_policy({.zero_page = false, .pgd_cache = true});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t ro = mmap(as, pg(1), kRo);
  const uint64_t rx = mmap(as, pg(1), kRx);
  const uint64_t rw = mmap(as, pg(1), kRw);
  read(as, ro);
  read(as, rx);
  read(as, rw);
  EXPECT_EQ(entry(as, ro).raw & pte_bit::FlagMask, pte_flags::UserRo.bits);
  EXPECT_EQ(entry(as, rx).raw & pte_bit::FlagMask, pte_flags::UserRx.bits);
  EXPECT_EQ(entry(as, rw).raw & pte_bit::FlagMask, pte_flags::UserRw.bits);
}

TEST_P(AddressSpaceTest, WriteAfterAZeroPageReadCopiesIntoAPrivateZeroedFrame) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(1), kRw);
  EXPECT_EQ(read(as, a), 0);
  ASSERT_EQ(entry_pfn(entry(as, a)), zero_page_);
  EXPECT_EQ(refs(zero_page_), 1u);
  dirty_free_frames();

  write(as, a + 7, 0x77);
  const Pte e = entry(as, a);
  const Pfn f = entry_pfn(e);
  EXPECT_NE(f, zero_page_);
  EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Write | pte_bit::User));
  EXPECT_TRUE(lacks(e, pte_bit::Cow));
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  EXPECT_EQ(refs(f), 1u);
  EXPECT_EQ(refs(zero_page_), 1u) << "the zero page's reference is given back";
  bytes(f)[7] = 0;
  EXPECT_TRUE(page_is(f, 0));
  EXPECT_TRUE(page_is(zero_page_, 0)) << "the write did not reach the zero page";
}

TEST_P(AddressSpaceTest, WriteToACowPageWithOneReferenceTakesItOverWithoutCopying) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(1), kRw);
  fill(parent, a, 0x11);
  const Pfn p = frame_at(parent, a);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  destroy(child);  // the parent is the last sharer now
  EXPECT_EQ(refs(p), 1u);
  const Pte before = entry(parent, a);
  EXPECT_TRUE(has(before, pte_bit::Cow));
  EXPECT_TRUE(lacks(before, pte_bit::Write));

  const uint64_t free_before = frames().free_count();
  write(parent, a, 0x33);
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);
  EXPECT_EQ(frames().free_count(), free_before);
  const Pte e = entry(parent, a);
  EXPECT_EQ(entry_pfn(e), p);
  EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Write));
  EXPECT_TRUE(lacks(e, pte_bit::Cow));
  EXPECT_EQ(bytes(p)[0], 0x33);
  EXPECT_EQ(bytes(p)[1], 0x11);
}

TEST_P(AddressSpaceTest, WriteToAReadOnlyVmaIsBadAccess) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(1), kRo);
  const uint64_t free_before = frames().free_count();
  EXPECT_EQ(try_write(as, a, 1), FaultOutcome::BadAccess);
  EXPECT_TRUE(entry(as, a).none()) << "nothing mapped";
  EXPECT_EQ(frames().free_count(), free_before);
  EXPECT_EQ(read(as, a), 0);
  EXPECT_EQ(try_write(as, a, 1), FaultOutcome::BadAccess);
  EXPECT_EQ(entry_pfn(entry(as, a)), zero_page_);
  EXPECT_TRUE(lacks(entry(as, a), pte_bit::Write));
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);
}

TEST_P(AddressSpaceTest, AccessOutsideEveryVmaIsBadAccess) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(2), kRw);
  mmap_fixed(as, a + pg(3), pg(1), kRw);
  const uint64_t free_before = frames().free_count();
  fake().clear_events();
  for (uint64_t va : {uint64_t{0}, abi::kUserBase, a - 1, a + pg(2), a + pg(2) + 100, a + pg(4), abi::kUserTop - 1,
                      abi::kUserTop, uint64_t{PVK_PHYSMAP_BASE}, uint64_t{PVK_KERNEL_VMA}}) {
    EXPECT_EQ(as->handle_fault(VirtAddr{va}, Access::Read), FaultOutcome::BadAccess) << std::hex << va;
    EXPECT_EQ(as->handle_fault(VirtAddr{va}, Access::Write), FaultOutcome::BadAccess) << std::hex << va;
  }
  EXPECT_EQ(frames().free_count(), free_before);
  EXPECT_EQ(fake().count(Ev::Store), 0u);
  EXPECT_EQ(refs(zero_page_), 1u);
}

TEST_P(AddressSpaceTest, ProtNoneIsBadAccessAndKeepsTheFramesForLater) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(3), kRw);
  fill(as, a, 0x41);
  fill(as, a + pg(1), 0x42);
  EXPECT_EQ(read(as, a + pg(2)), 0);  // the zero page
  const Pfn f[3] = {frame_at(as, a), frame_at(as, a + pg(1)), frame_at(as, a + pg(2))};
  ASSERT_EQ(f[2], zero_page_);

  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(3), kNone)), Errno::Ok);
  EXPECT_THAT(vmas(as), ElementsAre(V{a, a + pg(3), kNone}));
  for (unsigned i = 0; i < 3; ++i) {
    const Pte e = entry(as, a + pg(i));
    EXPECT_TRUE(lacks(e, pte_bit::Present | pte_bit::Write)) << i;
    EXPECT_TRUE(has(e, pte_bit::ProtNone)) << i;
    EXPECT_EQ(entry_pfn(e), f[i]) << i;
    EXPECT_EQ(try_read(as, a + pg(i)), FaultOutcome::BadAccess) << i;
    EXPECT_EQ(try_write(as, a + pg(i), 1), FaultOutcome::BadAccess) << i;
    EXPECT_EQ(entry(as, a + pg(i)), e) << "a refused fault changes nothing";
  }
  EXPECT_EQ(refs(f[0]), 1u);
  EXPECT_EQ(refs(zero_page_), 1u);

  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(3), kRw)), Errno::Ok);
  for (unsigned i = 0; i < 2; ++i) {
    const Pte e = entry(as, a + pg(i));
    EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Write)) << i;
    EXPECT_TRUE(lacks(e, pte_bit::ProtNone)) << i;
    EXPECT_EQ(entry_pfn(e), f[i]);
    EXPECT_TRUE(page_is(f[i], 0x41 + i)) << "content kept";
  }
  const Pte z = entry(as, a + pg(2));
  EXPECT_TRUE(has(z, pte_bit::Present | pte_bit::Cow)) << "the zero page stays copy-on-write";
  EXPECT_TRUE(lacks(z, pte_bit::Write | pte_bit::ProtNone));
  write(as, a + pg(2), 0x43);
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  EXPECT_TRUE(page_is(zero_page_, 0));

  // A PROT_NONE mapping from the start: nothing is ever mapped.
  const uint64_t b = mmap(as, pg(1), kNone);
  EXPECT_EQ(try_read(as, b), FaultOutcome::BadAccess);
  EXPECT_EQ(try_write(as, b, 1), FaultOutcome::BadAccess);
  EXPECT_TRUE(entry(as, b).none());
}

TEST_P(AddressSpaceTest, MunmapFreesProtNoneFrames) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(4), kRw);
  for (unsigned i = 0; i < 4; ++i) fill(as, a + pg(i), 1);
  const uint64_t free_before = frames().free_count();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(4), kNone)), Errno::Ok);
  ASSERT_EQ(error_of(as->munmap(VirtAddr{a}, pg(4))), Errno::Ok);
  // Four frames and the page tables that held them.
  EXPECT_EQ(frames().free_count(), free_before + 4 + fake().count(Ev::RetireTable));
  EXPECT_EQ(as->vma_count(), 0u);
}

TEST_P(AddressSpaceTest, OutOfFramesIsOutOfMemoryAndTheFaultCanBeRetried) {
  set_mm_policy({.zero_page = false, .pgd_cache = true});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap(as, pg(2), kRw);
  fill(as, a, 1);  // the page tables exist now
  hoard(0);
  EXPECT_EQ(as->handle_fault(VirtAddr{a + pg(1)}, Access::Write), FaultOutcome::OutOfMemory);
  EXPECT_EQ(as->handle_fault(VirtAddr{a + pg(1)}, Access::Read), FaultOutcome::OutOfMemory);
  EXPECT_TRUE(entry(as, a + pg(1)).none());
  EXPECT_EQ(frames().free_count(), 0u);
  release_hoard();
  write(as, a + pg(1), 2);
  EXPECT_EQ(read(as, a + pg(1)), 2);
}

TEST_P(AddressSpaceTest, CowCopyWithoutFramesIsOutOfMemoryAndKeepsTheSharedFrame) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(1), kRw);
  fill(parent, a, 0x21);
  const Pfn p = frame_at(parent, a);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  hoard(0);
  EXPECT_EQ(child->handle_fault(VirtAddr{a}, Access::Write), FaultOutcome::OutOfMemory);
  const Pte e = entry(child, a);
  EXPECT_EQ(entry_pfn(e), p);
  EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Cow));
  EXPECT_TRUE(lacks(e, pte_bit::Write));
  EXPECT_EQ(refs(p), 2u);
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);
  release_hoard();
  write(child, a, 0x22);
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  EXPECT_TRUE(page_is(p, 0x21));
}

// The hypervisor refusing a fault's mapping: the fault says OutOfMemory
// (the process is killed), the frame it took for the copy goes back, and
// the shared frame keeps both its entry and its count — read back from the
// tables, whatever the refused request had been queued with.
TEST_P(AddressSpaceTest, ARefusedCowMappingGivesTheCopyBackAndKeepsTheSharedFrame) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(1), kRw);
  fill(parent, a, 0x31);
  const Pfn p = frame_at(parent, a);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  const uint64_t free_before = frames().free_count();
  bool refused = false;
  fake().fault = [&](const MmuEvent& ev) {
    if (refused || ev.kind != Ev::Store || ev.level != Level::L1) return Errno::Ok;
    refused = true;
    return Errno::EINVAL;
  };
  EXPECT_EQ(child->handle_fault(VirtAddr{a}, Access::Write), FaultOutcome::OutOfMemory);
  fake().fault = nullptr;
  EXPECT_TRUE(refused);
  EXPECT_EQ(frames().free_count(), free_before);
  EXPECT_EQ(entry_pfn(entry(child, a)), p);
  EXPECT_EQ(refs(p), 2u);
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);
  write(child, a, 0x32);
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  EXPECT_TRUE(page_is(p, 0x31));
  EXPECT_EQ(refs(p), 1u);
}

// A fault in a stretch with no page tables yet: with too few frames for the
// new frame *and* the tables, remap() fails after the fault handler took
// what it needed, and the handler returns OutOfMemory without giving it
// back: the new frame (reference count 1, mapped nowhere) is lost for good,
// and a zero-page mapping leaves a reference to the zero page behind (each
// such failure brings its 16-bit count closer to overflowing). Partly built
// page tables are fine (reclaimed when the space goes). See the report.
TEST_P(AddressSpaceTest, FaultsThatRunOutOfFramesForPageTablesLeakNothing) {
  struct Case {
    bool zero_page, write;
  };
  for (const Case c : {Case{false, true}, Case{false, false}, Case{true, false}}) {
    // Three tables are missing (L3, L2, L1): budgets below that fail.
    for (uint64_t budget = 0; budget <= 3; ++budget) {
      SCOPED_TRACE(testing::Message() << "zero_page " << c.zero_page << (c.write ? ", write" : ", read")
                                      << ", frames left " << budget);
      set_mm_policy({.zero_page = c.zero_page, .pgd_cache = false});
      const uint64_t free_start = frames().free_count();
      AddressSpace* as = create();
      ASSERT_NE(as, nullptr);
      const uint64_t a = mmap(as, pg(1), kRw);
      hoard(budget);
      const FaultOutcome o = as->handle_fault(VirtAddr{a}, c.write ? Access::Write : Access::Read);
      release_hoard();
      const bool enough = budget >= (c.zero_page && !c.write ? 3u : 4u);
      EXPECT_EQ(o, enough ? FaultOutcome::Handled : FaultOutcome::OutOfMemory);
      destroy(as);
      EXPECT_EQ(frames().free_count(), free_start) << "frames leaked";
      EXPECT_EQ(refs(zero_page_), 1u) << "zero page references leaked";
    }
  }
}

// The zero page's reference count is 16 bits and every zero-page mapping
// takes a reference, so the 65,535th mapping of it (one process reading
// 256 MiB of fresh anonymous memory, or a few forks of smaller ones) makes
// inc() panic ("reference count overflow"); on the host the panic, raised
// inside a live LazyMmuSection, ends the process. The zero page is never freed, so
// it needs no count at all (Linux does not count it). See the report.
TEST_P(AddressSpaceTest, TheZeroPageCanBeMappedMoreThan65535Times) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  constexpr uint64_t kPages = 65536;
  const uint64_t a = mmap(as, pg(kPages), kRo);
  for (uint64_t i = 0; i < kPages; ++i) {
    ASSERT_EQ(as->handle_fault(VirtAddr{a + pg(i)}, Access::Read), FaultOutcome::Handled) << i;
    if (i % 4096 == 0) fake().clear_events();
  }
  EXPECT_EQ(g_mm_stats.zero_page_maps, kPages);
}

}  // namespace
}  // namespace test
}  // namespace pvk
