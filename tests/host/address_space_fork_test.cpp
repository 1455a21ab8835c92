// Address spaces (mm/address_space.{h,cpp}) over the fake MMU, by topic;
// the fixture and how accesses are played: address_space_fixture.h.
// fork's copy-on-write bookkeeping (frame reference counts) and the TLB
// invalidation of the loaded space.
#include "address_space_fixture.h"

namespace pvk {
namespace test {
namespace {

// =====================================================================
// fork and copy-on-write bookkeeping
// =====================================================================

TEST_P(AddressSpaceTest, ForkWriteProtectsBothSidesAndSharesEveryFrame) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(6), kRw);
  for (unsigned i = 0; i < 4; ++i) fill(parent, a + pg(i), 0x61 + i);
  EXPECT_EQ(read(parent, a + pg(4)), 0);  // the zero page; page 5 never touched
  const uint64_t free_before = frames().free_count();
  fake().clear_events();

  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(vmas(child), vmas(parent));
  EXPECT_EQ(free_before - frames().free_count(), fake().count(Ev::PrepareTable)) << "no frame is copied";
  EXPECT_EQ(prepared(Level::L4), 1u) << "the child's root";
  for (unsigned i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    const Pte pe = entry(parent, a + pg(i)), ce = entry(child, a + pg(i));
    EXPECT_TRUE(has(pe, pte_bit::Present | pte_bit::User | pte_bit::Cow));
    EXPECT_TRUE(lacks(pe, pte_bit::Write));
    EXPECT_EQ(ce, pe) << "the child maps the same frame with the same rights";
    if (i < 4) {
      EXPECT_EQ(refs(entry_pfn(pe)), 2u);
    }
  }
  EXPECT_EQ(refs(zero_page_), 1u);
  EXPECT_TRUE(entry(parent, a + pg(5)).none());
  EXPECT_TRUE(entry(child, a + pg(5)).none());
  const uint64_t faults = g_mm_stats.page_faults;
  for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(read(child, a + pg(i) + 99), 0x61 + i);
  EXPECT_EQ(g_mm_stats.page_faults, faults) << "reads need no fault";
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);
  // Under Xen's batched semantics the parent's write-protection is queued
  // like every other L1 store of the section.
  if (GetParam().defer) {
    for (const MmuEvent& e : fake().events(Ev::Store)) {
      if (e.level == Level::L1) {
        EXPECT_TRUE(e.deferred);
      }
    }
  }
}

TEST_P(AddressSpaceTest, ForkOfALargeSparseVmaCopiesExactlyTheMappedPages) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  // Five pages below an L1-table boundary, 1600 pages: five L1 stretches,
  // the third of which the parent never touches (no table to copy from).
  const uint64_t a = mmap_fixed(parent, kBase + 2 * kMiB - pg(5), pg(1600), kRw);
  const unsigned touched[] = {0, 4, 5, 1099, 1599};
  for (unsigned i : touched) fill(parent, a + pg(i), static_cast<uint8_t>(i));
  fake().clear_events();
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(prepared(Level::L1), 4u) << "a child L1 table per stretch with something in it";
  unsigned mapped = 0;
  for (unsigned i = 0; i < 1600; ++i) {
    const Pte ce = entry(child, a + pg(i));
    if (ce.none()) continue;
    ++mapped;
    EXPECT_EQ(ce, entry(parent, a + pg(i))) << i;
    EXPECT_TRUE(has(ce, pte_bit::Cow)) << i;
    EXPECT_EQ(read(child, a + pg(i) + 1), static_cast<uint8_t>(i)) << i;
  }
  EXPECT_EQ(mapped, std::size(touched));
}

TEST_P(AddressSpaceTest, PrivateVmasSharingATableAreForkedIntoOneTablePublishedOnce) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  // In one 2 MiB table: three private VMAs (a gap page between each keeps
  // them apart), then a shared one; a private page in the next table.
  const uint64_t t = kBase + 4 * kMiB;
  struct Range {
    uint64_t first, pages;
    bool shared;
  };
  const Range ranges[] = {{0, 3, false}, {4, 2, false}, {8, 1, false}, {10, 2, true}, {512, 1, false}};
  for (const Range& r : ranges) {
    ASSERT_EQ(mmap_fixed(parent, t + pg(r.first), pg(r.pages), kRw, r.shared ? vm::Shared : 0), t + pg(r.first));
    for (uint64_t i = r.first; i < r.first + r.pages; ++i) fill(parent, t + pg(i), static_cast<uint8_t>(0x40 + i));
  }
  ASSERT_EQ(vmas(parent).size(), std::size(ranges));
  fake().clear_events();

  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  // The three private VMAs are one walk: the child's first table is filled
  // as private memory for all of them and published once; the shared VMA
  // after them writes its two leaves into that (now live) table, and the
  // page in the next table gets a table of its own.
  EXPECT_EQ(prepared(Level::L1), 2u);
  size_t l1_stores = 0;
  for (const MmuEvent& e : fake().events(Ev::Store)) l1_stores += e.level == Level::L1;
  EXPECT_EQ(l1_stores, 9u) << "the 7 private leaves' write-protects in the parent and the shared VMA's 2 child "
                              "leaves, no store of a private leaf into a published child table";
  for (const Range& r : ranges) {
    for (uint64_t i = r.first; i < r.first + r.pages; ++i) {
      SCOPED_TRACE(i);
      const Pte pe = entry(parent, t + pg(i)), ce = entry(child, t + pg(i));
      EXPECT_EQ(ce, pe);
      EXPECT_EQ(has(pe, pte_bit::Cow), !r.shared);
      EXPECT_EQ(read(child, t + pg(i) + 7), static_cast<uint8_t>(0x40 + i));
    }
  }
  for (uint64_t gap : {3, 6, 7, 9}) EXPECT_TRUE(entry(child, t + pg(gap)).none()) << gap;
}

TEST_P(AddressSpaceTest, FirstWriterCopiesAndTheLastSharerTakesTheFrameOver) {
  for (bool child_writes_first : {true, false}) {
    SCOPED_TRACE(child_writes_first ? "child writes first" : "parent writes first");
    g_mm_stats = {};
    AddressSpace* parent = create();
    ASSERT_NE(parent, nullptr);
    const uint64_t a = mmap(parent, pg(1), kRw);
    fill(parent, a, 0x51);
    const Pfn shared = frame_at(parent, a);
    AddressSpace* child = fork(parent);
    ASSERT_NE(child, nullptr);
    AddressSpace* first = child_writes_first ? child : parent;
    AddressSpace* second = child_writes_first ? parent : child;

    write(first, a + 1, 0x52);
    EXPECT_EQ(g_mm_stats.cow_copies, 1u);
    const Pfn copy = frame_at(first, a);
    EXPECT_NE(copy, shared);
    EXPECT_EQ(refs(copy), 1u);
    EXPECT_EQ(refs(shared), 1u);
    EXPECT_TRUE(has(entry(first, a), pte_bit::Write));
    EXPECT_TRUE(lacks(entry(first, a), pte_bit::Cow));
    EXPECT_EQ(bytes(copy)[0], 0x51) << "the copy has the old content";
    EXPECT_EQ(bytes(copy)[1], 0x52);
    EXPECT_TRUE(page_is(shared, 0x51)) << "the other side's content is intact";
    EXPECT_EQ(read(second, a + 1), 0x51);

    write(second, a + 2, 0x53);
    EXPECT_EQ(g_mm_stats.cow_copies, 1u) << "the last sharer takes the frame over";
    EXPECT_EQ(frame_at(second, a), shared);
    EXPECT_TRUE(has(entry(second, a), pte_bit::Write));
    EXPECT_TRUE(lacks(entry(second, a), pte_bit::Cow));
    EXPECT_EQ(bytes(copy)[2], 0x51);
    destroy(child);
    destroy(parent);
  }
}

TEST_P(AddressSpaceTest, ForkedZeroPageMappingsCopyOnWrite) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(1), kRw);
  EXPECT_EQ(read(parent, a), 0);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(frame_at(child, a), zero_page_);
  EXPECT_EQ(refs(zero_page_), 1u);
  write(child, a, 9);
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  EXPECT_EQ(refs(zero_page_), 1u);
  EXPECT_EQ(read(parent, a), 0);
  write(parent, a, 8);
  EXPECT_EQ(g_mm_stats.cow_copies, 2u) << "the zero page is never taken over";
  EXPECT_EQ(refs(zero_page_), 1u);
  EXPECT_EQ(read(child, a), 9);
}

TEST_P(AddressSpaceTest, SharedMappingsStayWritableAndSharedInTheChild) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t s = mmap(parent, pg(3), kRw, vm::Shared);
  for (unsigned i = 0; i < 3; ++i) {
    const Pte e = entry(parent, s + pg(i));
    EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Write | pte_bit::User)) << "populated at mmap";
    EXPECT_EQ(refs(entry_pfn(e)), 1u);
    EXPECT_TRUE(page_is(entry_pfn(e), 0));
  }
  write(parent, s, 0x81);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  for (unsigned i = 0; i < 3; ++i) {
    const Pte pe = entry(parent, s + pg(i)), ce = entry(child, s + pg(i));
    EXPECT_EQ(ce, pe) << i;
    EXPECT_TRUE(has(pe, pte_bit::Present | pte_bit::Write)) << i;
    EXPECT_TRUE(lacks(pe, pte_bit::Cow)) << i;
    EXPECT_EQ(refs(entry_pfn(pe)), 2u) << i;
  }
  const uint64_t faults = g_mm_stats.page_faults;
  EXPECT_EQ(read(child, s), 0x81);
  write(child, s + pg(1), 0x82);
  EXPECT_EQ(read(parent, s + pg(1)), 0x82) << "one frame, two spaces";
  write(parent, s + pg(2), 0x83);
  EXPECT_EQ(read(child, s + pg(2)), 0x83);
  EXPECT_EQ(g_mm_stats.page_faults, faults);
  EXPECT_EQ(g_mm_stats.cow_copies, 0u);

  const Pfn f = frame_at(parent, s);
  destroy(child);
  EXPECT_EQ(refs(f), 1u);
  EXPECT_EQ(read(parent, s + pg(2)), 0x83);
}

TEST_P(AddressSpaceTest, DestroyingEveryForkReturnsEveryFrame) {
  for (bool parent_first : {true, false}) {
    SCOPED_TRACE(parent_first ? "parent destroyed first" : "children destroyed first");
    AddressSpace* parent = create();
    ASSERT_NE(parent, nullptr);
    const uint64_t a = mmap(parent, pg(4), kRw);
    for (unsigned i = 0; i < 3; ++i) fill(parent, a + pg(i), i + 1);
    read(parent, a + pg(3));
    const uint64_t s = mmap(parent, pg(2), kRw, vm::Shared);
    write(parent, s, 1);
    const uint64_t n = mmap(parent, pg(2), kRw);
    fill(parent, n, 7);
    ASSERT_EQ(error_of(parent->mprotect(VirtAddr{n}, pg(2), kNone)), Errno::Ok);
    const uint64_t far = mmap_fixed(parent, kBase + 300 * kGiB, pg(1), kRw);  // another L3 entry
    fill(parent, far, 3);
    const uint64_t high = mmap_fixed(parent, 2 * 512 * kGiB, pg(1), kRw);  // another L4 entry
    fill(parent, high, 4);

    AddressSpace* child = fork(parent);
    ASSERT_NE(child, nullptr);
    write(child, a, 0x10);
    write(child, a + pg(3), 0x11);
    AddressSpace* grandchild = fork(child);
    ASSERT_NE(grandchild, nullptr);
    write(grandchild, a + pg(1), 0x12);
    write(parent, a + pg(2), 0x13);

    if (parent_first) {
      destroy(parent);
      destroy(grandchild);
      destroy(child);
    } else {
      destroy(grandchild);
      destroy(child);
      destroy(parent);
    }
    EXPECT_EQ(error_of(drain_root_cache()), Errno::Ok);
    EXPECT_EQ(frames().free_count(), baseline_);
    EXPECT_EQ(fake().table_count(), baseline_tables_);
    EXPECT_EQ(refs(zero_page_), 1u);
  }
}

TEST_P(AddressSpaceTest, ForkKeepsProtNonePages) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(2), kRw);
  fill(parent, a, 0x61);
  fill(parent, a + pg(1), 0x62);
  const Pfn f0 = frame_at(parent, a);
  ASSERT_EQ(error_of(parent->mprotect(VirtAddr{a}, pg(2), kNone)), Errno::Ok);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_THAT(vmas(child), ElementsAre(V{a, a + pg(2), kNone}));
  for (unsigned i = 0; i < 2; ++i) {
    const Pte ce = entry(child, a + pg(i));
    EXPECT_TRUE(has(ce, pte_bit::ProtNone)) << i;
    EXPECT_TRUE(lacks(ce, pte_bit::Present | pte_bit::Write)) << i;
    EXPECT_EQ(entry_pfn(ce), frame_at(parent, a + pg(i))) << i;
    EXPECT_EQ(refs(entry_pfn(ce)), 2u) << i;
    EXPECT_EQ(try_read(child, a + pg(i)), FaultOutcome::BadAccess);
    EXPECT_EQ(try_write(parent, a + pg(i), 1), FaultOutcome::BadAccess);
  }
  // The parent gets its memory back as it was.
  destroy(child);
  EXPECT_EQ(refs(f0), 1u);
  ASSERT_EQ(error_of(parent->mprotect(VirtAddr{a}, pg(2), kRw)), Errno::Ok);
  EXPECT_EQ(read(parent, a + 5), 0x61);
  EXPECT_EQ(read(parent, a + pg(1)), 0x62);
}

// fork_range marks a private leaf copy-on-write only if it is writable at
// the time. A private page that was written and then made read-only or
// PROT_NONE is shared with the child as it is: same frame (count 2), no Cow
// marker. A later mprotect(PROT_READ|PROT_WRITE) makes it writable in both
// (protect only refuses Write to Cow leaves), so the two processes write to
// one frame: each sees the other's writes. Linux write-protects every
// private leaf at fork. See the report.
TEST_P(AddressSpaceTest, PagesForkedWhileReadOnlyOrProtNoneStayCopyOnWrite) {
  for (uint32_t prot_at_fork : {kRo, kNone}) {
    SCOPED_TRACE(prot_at_fork == kRo ? "read-only at fork" : "PROT_NONE at fork");
    AddressSpace* parent = create();
    ASSERT_NE(parent, nullptr);
    const uint64_t a = mmap(parent, pg(1), kRw);
    fill(parent, a, 0x61);
    ASSERT_EQ(error_of(parent->mprotect(VirtAddr{a}, pg(1), prot_at_fork)), Errno::Ok);
    AddressSpace* child = fork(parent);
    ASSERT_NE(child, nullptr);
    EXPECT_TRUE(has(entry(child, a), pte_bit::Cow)) << "a shared private frame is copy-on-write";

    ASSERT_EQ(error_of(child->mprotect(VirtAddr{a}, pg(1), kRw)), Errno::Ok);
    ASSERT_EQ(error_of(parent->mprotect(VirtAddr{a}, pg(1), kRw)), Errno::Ok);
    write(child, a, 0x99);
    EXPECT_EQ(read(parent, a), 0x61) << "the child's write reached the parent";
    write(parent, a + 1, 0x98);
    EXPECT_EQ(read(child, a + 1), 0x61) << "the parent's write reached the child";
    destroy(child);
    destroy(parent);
  }
}

TEST_P(AddressSpaceTest, AFailedForkLeavesTheParentWholeAndLeaksNothing) {
  // The child needs its root, then L3, L2 and L1 tables for the first VMA and
  // another L2 and L1 for the second (a different L3 entry): six frames.
  for (uint64_t budget = 0; budget <= 6; ++budget) {
    SCOPED_TRACE(testing::Message() << "frames left " << budget);
    g_mm_stats = {};
    AddressSpace* parent = create();
    ASSERT_NE(parent, nullptr);
    const uint64_t a = mmap(parent, pg(3), kRw);
    const uint64_t b = mmap_fixed(parent, kBase + 2 * kGiB, pg(2), kRw);
    for (unsigned i = 0; i < 3; ++i) fill(parent, a + pg(i), 0x31 + i);
    for (unsigned i = 0; i < 2; ++i) fill(parent, b + pg(i), 0x41 + i);
    ASSERT_EQ(error_of(drain_root_cache()), Errno::Ok);
    const uint64_t free_before = frames().free_count();

    hoard(budget);
    auto r = try_fork(parent);
    release_hoard();
    EXPECT_EQ(error_of(r), budget < 6 ? Errno::ENOMEM : Errno::Ok);
    if (!r.is_error()) destroy(r.value());
    EXPECT_EQ(error_of(drain_root_cache()), Errno::Ok);
    EXPECT_EQ(frames().free_count(), free_before) << "the child's frames all came back";
    // Whatever the fork got to, the parent owns its frames alone again and
    // writes to them without copying.
    for (uint64_t va : {a, a + pg(1), a + pg(2), b, b + pg(1)}) EXPECT_EQ(refs(frame_at(parent, va)), 1u);
    for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(read(parent, a + pg(i)), 0x31 + i);
    for (unsigned i = 0; i < 2; ++i) EXPECT_EQ(read(parent, b + pg(i)), 0x41 + i);
    for (unsigned i = 0; i < 3; ++i) write(parent, a + pg(i), 0);
    for (unsigned i = 0; i < 2; ++i) write(parent, b + pg(i), 0);
    EXPECT_EQ(g_mm_stats.cow_copies, 0u);
    destroy(parent);
  }
}

// =====================================================================
// TLB invalidation of the loaded space
// =====================================================================

TEST_P(AddressSpaceTest, ForkOfTheLoadedSpaceFlushesTheWriteProtectedPages) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  const uint64_t a = mmap(parent, pg(3), kRw);
  for (unsigned i = 0; i < 3; ++i) fill(parent, a + pg(i), 1);
  ASSERT_EQ(error_of(switch_mm(parent)), Errno::Ok);
  fake().clear_events();
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);

  // Each write-protected page flushed (or the whole TLB), before the
  // section ends.
  const auto& ev = fake().events();
  std::set<uint64_t> flushed;
  bool all = false;
  size_t last_flush = 0, last_leave = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == Ev::FlushOne) flushed.insert(raw(ev[i].va));
    if (ev[i].kind == Ev::FlushAll) all = true;
    if (ev[i].kind == Ev::FlushOne || ev[i].kind == Ev::FlushAll) last_flush = i;
    if (ev[i].kind == Ev::LazyLeave) last_leave = i;
  }
  EXPECT_TRUE(all || !flushed.empty());
  if (!all) {
    for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(flushed.count(a + pg(i)), 1u) << i;
  }
  EXPECT_LT(last_flush, last_leave);

  // A COW fault replaces a present translation: flushed. A first touch
  // replaces nothing: no flush.
  fake().clear_events();
  write(parent, a, 2);
  EXPECT_EQ(fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll), 1u);
  const uint64_t b = mmap(parent, pg(1), kRw);
  fake().clear_events();
  write(parent, b, 2);
  EXPECT_EQ(fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll), 0u);
  // The child is not loaded: its faults flush nothing.
  fake().clear_events();
  write(child, a + pg(1), 2);
  EXPECT_EQ(fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll), 0u);
  // This CPU alone runs the space: nothing went to another CPU.
  EXPECT_EQ(fake().count(Ev::FlushMulti), 0u);
  EXPECT_EQ(g_mmu_counters.shootdowns, 0u);
  EXPECT_EQ(g_mmu_counters.shootdown_cpus, 0u);
  EXPECT_EQ(g_mmu_counters.ipis_sent, 0u);
  EXPECT_EQ(g_mmu_counters.tlb_flush_multi, 0u);
  ASSERT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok);
  g_current_root = Pfn{0};
}

}  // namespace
}  // namespace test
}  // namespace pvk
