// Address spaces (mm/address_space.{h,cpp}) over the fake MMU, by topic;
// the fixture and how accesses are played: address_space_fixture.h.
// ptshare=on (table sharing): fork shares whole L1 tables behind read-only L2
// entries ("closed gates"), the first write through one copies the table out
// (or just opens the gate when its last sharer is left), any other leaf work
// in a table behind a closed gate makes it private first, and mprotect of
// whole tables changes only the L2 entry. Then a randomized model test of
// fork/write/read/mprotect/munmap/mmap/exit, with ptshare off and on.
//
// The fake MMU counts how many L2 entries hook each L1 table and flags any
// store into one hooked more than once; expect_consistent() (the fixture)
// checks effective rights against the VMAs, share counts and frame
// references after the operations.
#include "address_space_fixture.h"

#include <gtest/gtest-spi.h>
#include <stdio.h>
#include <stdlib.h>

#include <deque>
#include <memory>
#include <random>

namespace pvk {
namespace test {
namespace {

constexpr uint64_t kTable = 2 * kMiB;                  // the span of one L1 table
constexpr unsigned kPagesPerTable = kEntriesPerTable;  // 512
// 2 MiB aligned, away from where mmap places things by itself.
constexpr uint64_t kT = kBase + 64 * kMiB;

// The value a test writes to page i of a dense region.
uint8_t val(unsigned i, uint8_t salt = 0) { return static_cast<uint8_t>(i * 7 + 1 + salt) | 1; }

class PtShareTest : public AddressSpaceTest {
 protected:
  uint64_t fake_frames() const override { return 8192; }
  void SetUp() override {
    AddressSpaceTest::SetUp();
    set_mm_policy({.zero_page = true, .pgd_cache = true, .ptshare = true});
  }

  // `tables` whole L1 tables of private read-write memory at a (2 MiB
  // aligned), every page written with val(i, salt).
  void dense(AddressSpace* as, uint64_t a, unsigned tables, uint8_t salt = 0) {
    mmap_fixed(as, a, tables * kTable, kRw);
    for (unsigned i = 0; i < tables * kPagesPerTable; ++i) fill(as, a + pg(i), val(i, salt));
  }

  static Pte l2_entry(const AddressSpace* as, uint64_t va) {
    Pte* s = fake().slot(as->root(), VirtAddr{va}, Level::L2);
    return s ? *s : Pte{};
  }
  static Pfn l1_of(const AddressSpace* as, uint64_t va) {
    const Pte e = l2_entry(as, va);
    if (!has(e, pte_bit::Present)) {
      ADD_FAILURE() << "no L1 table for 0x" << std::hex << va;
      return Pfn{0};
    }
    return entry_pfn(e);
  }
  static bool gate_open(const AddressSpace* as, uint64_t va) { return has(l2_entry(as, va), pte_bit::Write); }

  // A parent with one dense table at kT (dense(parent, kT, 1)) and a child
  // forked from it that shares that table, t. actor and other are the child
  // and the parent when child_acts, the other way round when not. child is
  // null when create() or fork() failed: callers assert on parent and child.
  struct SharedTable {
    AddressSpace* parent = nullptr;
    AddressSpace* child = nullptr;
    Pfn t{0};
    AddressSpace* actor = nullptr;
    AddressSpace* other = nullptr;
  };
  SharedTable fork_dense(bool child_acts = true) {
    SharedTable s;
    s.parent = create();
    if (s.parent == nullptr) return s;
    dense(s.parent, kT, 1);
    s.t = l1_of(s.parent, kT);
    s.child = fork(s.parent);
    s.actor = child_acts ? s.child : s.parent;
    s.other = child_acts ? s.parent : s.child;
    return s;
  }

  // Leaf stores (Store or ProtStart of an L1 entry, queued or not) into the
  // table frame l1 among the events since the last clear_events().
  static size_t leaf_stores_into(Pfn l1) {
    size_t n = 0;
    for (const MmuEvent& e : fake().events())
      if ((e.kind == Ev::Store || e.kind == Ev::ProtStart || e.kind == Ev::Apply) && e.level == Level::L1 &&
          e.table == l1)
        ++n;
    return n;
  }
  static size_t leaf_stores() {
    size_t n = 0;
    for (const MmuEvent& e : fake().events())
      if ((e.kind == Ev::Store || e.kind == Ev::ProtStart) && e.level == Level::L1) ++n;
    return n;
  }

  // Every page of [a, a + pages) reads back val(i, salt), except the ones in
  // `except` (page index -> expected value of the first byte).
  void expect_values(AddressSpace* as, uint64_t a, unsigned pages, uint8_t salt,
                     const std::map<unsigned, uint8_t>& except = {}) {
    for (unsigned i = 0; i < pages; ++i) {
      auto it = except.find(i);
      const uint8_t want = it == except.end() ? val(i, salt) : it->second;
      // The tests write single bytes near the start of a page: an excepted
      // page is read at its first byte, the others further in.
      const uint8_t got = read(as, a + pg(i) + (it == except.end() ? 2048 + i % 2048 : 0));
      if (got != want) {
        ADD_FAILURE() << "page " << i << " at 0x" << std::hex << a + pg(i) << " reads 0x" << unsigned(got)
                      << ", expected 0x" << unsigned(want);
        return;  // one is enough
      }
    }
  }
};

// =====================================================================
// the checker itself
// =====================================================================

// expect_consistent() must notice a leaf looser than its VMA, or the tests
// below prove nothing: a write bit, a present bit under PROT_NONE and a
// missing NX poked into leaves behind the kernel's back.
TEST_P(PtShareTest, TheCheckerCatchesLeavesLooserThanTheirVma) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  const uint64_t a = mmap_fixed(as, kT, pg(3), kRw);
  for (unsigned i = 0; i < 3; ++i) fill(as, a + pg(i), 0x10 + i);
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(1), kRo)), Errno::Ok);
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a + pg(1)}, pg(1), kNone)), Errno::Ok);
  ASSERT_TRUE(expect_consistent("before"));
  struct Poke {
    uint64_t va;
    uint64_t set, clear;
    const char* says;
  };
  for (const Poke& p : {Poke{a, pte_bit::Write, 0, "effectively writable"},
                        Poke{a + pg(1), pte_bit::Present, pte_bit::ProtNone, "present under a PROT_NONE"},
                        Poke{a + pg(2), 0, pte_bit::Nx, "executable"}}) {
    SCOPED_TRACE(p.says);
    Pte* slot = fake().slot(as->root(), VirtAddr{p.va}, Level::L1);
    ASSERT_NE(slot, nullptr);
    const Pte was = *slot;
    ASSERT_EQ(error_of(FakePolicy::store(slot, Pte{(was.raw | p.set) & ~p.clear}, Level::L1)), Errno::Ok);
    testing::TestPartResultArray results;
    bool ok;
    {
      testing::ScopedFakeTestPartResultReporter reporter(
          testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      ok = expect_consistent("poked");
    }
    EXPECT_FALSE(ok);
    ASSERT_EQ(results.size(), 1);
    EXPECT_THAT(results.GetTestPartResult(0).message(), testing::HasSubstr(p.says));
    ASSERT_EQ(error_of(FakePolicy::store(slot, was, Level::L1)), Errno::Ok);
  }
  // A frame reference too many or too few.
  const Pfn f = frame_at(as, a + pg(2));
  frame_refs().inc(f);
  {
    testing::TestPartResultArray results;
    testing::ScopedFakeTestPartResultReporter reporter(
        testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    expect_consistent("poked");
    EXPECT_EQ(results.size(), 1);
  }
  frame_refs().dec(f);
  EXPECT_TRUE(expect_consistent("after"));
}

// =====================================================================
// fork shares whole tables
// =====================================================================

TEST_P(PtShareTest, ForkSharesDenseTablesBehindReadOnlyL2EntriesWithoutTouchingALeaf) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  dense(parent, kT, 2);
  const Pfn t0 = l1_of(parent, kT), t1 = l1_of(parent, kT + kTable);
  ASSERT_TRUE(gate_open(parent, kT));
  reset_stats();
  fake().clear_events();
  const uint64_t free_before = frames().free_count();

  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(pt_counters().pt_shares, 2u);
  EXPECT_EQ(prepared(Level::L1), 0u) << "no L1 table is built for the child";
  EXPECT_EQ(leaf_stores(), 0u) << "no leaf is written at fork";
  EXPECT_EQ(free_before - frames().free_count(), fake().count(Ev::PrepareTable)) << "only the child's upper tables";
  for (uint64_t va : {kT, kT + kTable}) {
    SCOPED_TRACE(testing::Message() << "table at 0x" << std::hex << va);
    const Pfn t = l1_of(parent, va);
    EXPECT_EQ(l1_of(child, va), t) << "the child hooks the parent's table";
    EXPECT_TRUE(has(l2_entry(parent, va), pte_bit::Present | pte_bit::User));
    EXPECT_TRUE(has(l2_entry(child, va), pte_bit::Present | pte_bit::User));
    EXPECT_FALSE(gate_open(parent, va));
    EXPECT_FALSE(gate_open(child, va));
    EXPECT_EQ(fake().uppers(t), 2u);
    EXPECT_EQ(refs(t), 2u) << "the share count";
  }
  EXPECT_EQ(l1_of(parent, kT), t0);
  EXPECT_EQ(l1_of(parent, kT + kTable), t1);
  for (unsigned i = 0; i < 2 * kPagesPerTable; ++i) {
    EXPECT_EQ(refs(frame_at(parent, kT + pg(i))), 1u) << "no data-frame reference is taken at fork (page " << i << ")";
    if (HasFailure()) break;
  }
  expect_consistent("after fork");

  const uint64_t faults = g_mm_stats.page_faults;
  expect_values(child, kT, 2 * kPagesPerTable, 0);
  expect_values(parent, kT, 2 * kPagesPerTable, 0);
  EXPECT_EQ(g_mm_stats.page_faults, faults) << "reads through a closed gate do not fault";
}

TEST_P(PtShareTest, SharedVmasAndSparseTablesTakeThePerLeafPath) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  // A table holding a shared VMA next to private memory is never shared.
  mmap_fixed(parent, kT, pg(8), kRw, vm::Shared);
  mmap_fixed(parent, kT + pg(8), kTable - pg(8), kRw);
  for (unsigned i = 0; i < kPagesPerTable; ++i) fill(parent, kT + pg(i), val(i));
  // One page in a table of its own: whatever the density threshold, a
  // single leaf is below it.
  mmap_fixed(parent, kT + 4 * kTable, pg(1), kRw);
  fill(parent, kT + 4 * kTable, 0x5a);
  reset_stats();
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(pt_counters().pt_shares, 0u);
  EXPECT_NE(l1_of(child, kT), l1_of(parent, kT));
  EXPECT_NE(l1_of(child, kT + 4 * kTable), l1_of(parent, kT + 4 * kTable));
  EXPECT_TRUE(gate_open(parent, kT));
  EXPECT_TRUE(gate_open(child, kT));
  expect_consistent("after fork");
  write(child, kT, 0x77);
  EXPECT_EQ(read(parent, kT), 0x77) << "the shared VMA stays shared";
  write(child, kT + pg(8), 0x78);
  EXPECT_EQ(read(parent, kT + pg(8)), val(8));
  EXPECT_EQ(read(child, kT + 4 * kTable), 0x5a);
  expect_consistent("after the writes");
}

// =====================================================================
// copy-out and gate opening
// =====================================================================

TEST_P(PtShareTest, TheFirstWriterCopiesTheTableOutAndTheOtherOpensTheGate) {
  for (bool child_writes_first : {true, false}) {
    SCOPED_TRACE(child_writes_first ? "child writes first" : "parent writes first");
    const auto [parent, child, shared, first, second] = fork_dense(child_writes_first);
    ASSERT_NE(parent, nullptr);
    ASSERT_NE(child, nullptr);
    const Pfn f7 = frame_at(parent, kT + pg(7)), f8 = frame_at(parent, kT + pg(8));
    reset_stats();
    fake().clear_events();

    write(first, kT + pg(7) + 1, 0xab);
    EXPECT_EQ(pt_counters().pt_copyouts, 1u);
    EXPECT_EQ(pt_counters().pt_gate_opens, 0u);
    EXPECT_EQ(g_mm_stats.cow_copies, 1u) << "page 7's frame is shared once the table is copied";
    EXPECT_EQ(prepared(Level::L1), 1u);
    const Pfn copy = l1_of(first, kT);
    EXPECT_NE(copy, shared);
    EXPECT_TRUE(gate_open(first, kT));
    EXPECT_EQ(l1_of(second, kT), shared);
    EXPECT_FALSE(gate_open(second, kT)) << "the other side's gate stays closed until it writes";
    EXPECT_EQ(fake().uppers(shared), 1u);
    EXPECT_EQ(refs(shared), 1u) << "the share count dropped";
    EXPECT_EQ(leaf_stores_into(shared), 0u) << "the shared table is never written";
    // The copy: every leaf read-only and Cow, the same frames; page 7 its own.
    for (unsigned i = 0; i < kPagesPerTable; ++i) {
      const Pte e = entry(first, kT + pg(i));
      if (i == 7) {
        EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Write));
        EXPECT_NE(entry_pfn(e), f7);
        continue;
      }
      EXPECT_TRUE(has(e, pte_bit::Present | pte_bit::Cow)) << i;
      EXPECT_TRUE(lacks(e, pte_bit::Write)) << i;
      EXPECT_EQ(entry_pfn(e), frame_at(second, kT + pg(i))) << i;
      EXPECT_EQ(refs(entry_pfn(e)), 2u) << i;
      if (HasFailure()) break;
    }
    EXPECT_EQ(refs(f7), 1u);
    EXPECT_EQ(read(second, kT + pg(7) + 1), val(7)) << "the other side's data is unchanged";
    EXPECT_TRUE(page_is(f7, val(7)));
    EXPECT_EQ(read(first, kT + pg(7) + 1), 0xab);
    EXPECT_EQ(read(first, kT + pg(7)), val(7)) << "the copy has the old content";
    expect_consistent("after the copy-out");

    // The other side is the table's only user now: its first write opens
    // the gate without a copy; leaves whose frames are still shared are
    // copy-on-write, page 7's (no longer shared) is written in place.
    fake().clear_events();
    write(second, kT + pg(8), 0xcd);
    EXPECT_EQ(pt_counters().pt_copyouts, 1u);
    EXPECT_EQ(pt_counters().pt_gate_opens, 1u);
    EXPECT_EQ(prepared(Level::L1), 0u);
    EXPECT_EQ(l1_of(second, kT), shared);
    EXPECT_TRUE(gate_open(second, kT));
    EXPECT_EQ(g_mm_stats.cow_copies, 2u) << "page 8's frame is still shared with the copy";
    EXPECT_NE(frame_at(second, kT + pg(8)), f8);
    EXPECT_EQ(read(first, kT + pg(8)), val(8));
    const uint64_t faults = g_mm_stats.page_faults;
    write(second, kT + pg(7), 0xef);
    EXPECT_EQ(g_mm_stats.page_faults, faults) << "page 7's frame is the other side's alone: no fault";
    EXPECT_EQ(g_mm_stats.cow_copies, 2u);
    EXPECT_EQ(frame_at(second, kT + pg(7)), f7);
    EXPECT_EQ(read(first, kT + pg(7)), val(7));
    EXPECT_EQ(read(first, kT + pg(7) + 1), 0xab);
    expect_consistent("after the gate opened");
    destroy(child);
    destroy(parent);
  }
}

TEST_P(PtShareTest, TheLastSharerOpensTheGateWithoutCopying) {
  for (bool child_survives : {false, true}) {
    SCOPED_TRACE(child_survives ? "the parent goes" : "the child goes");
    const auto [parent, child, t, survivor, goes] = fork_dense(child_survives);
    ASSERT_NE(parent, nullptr);
    ASSERT_NE(child, nullptr);
    fake().clear_events();
    destroy(goes);
    EXPECT_EQ(retired(Level::L1), 0u) << "a shared table is only unhooked";
    EXPECT_EQ(fake().uppers(t), 1u);
    EXPECT_EQ(refs(t), 1u);
    for (unsigned i = 0; i < kPagesPerTable; ++i) {
      EXPECT_EQ(refs(frame_at(survivor, kT + pg(i))), 1u) << i;
      if (HasFailure()) break;
    }
    expect_consistent("after one side exited");

    reset_stats();
    fake().clear_events();
    for (unsigned i = 0; i < kPagesPerTable; ++i) write(survivor, kT + pg(i) + 2, 0x99);
    EXPECT_EQ(g_mm_stats.page_faults, 1u) << "one fault opens the gate for the whole table";
    EXPECT_EQ(pt_counters().pt_gate_opens, 1u);
    EXPECT_EQ(pt_counters().pt_copyouts, 0u);
    EXPECT_EQ(g_mm_stats.cow_copies, 0u) << "no frame is shared any more";
    EXPECT_EQ(prepared(Level::L1), 0u);
    EXPECT_EQ(leaf_stores_into(t), 0u) << "no leaf needs write-protecting";
    EXPECT_EQ(l1_of(survivor, kT), t);
    EXPECT_TRUE(gate_open(survivor, kT));
    expect_values(survivor, kT, kPagesPerTable, 0);  // byte 2 only was written
    expect_consistent("after the writes");
    destroy(survivor);
  }
}

TEST_P(PtShareTest, GrandchildrenShareTheTableAgainAndEveryoneWritesIndependently) {
  struct Order {
    const char* name;
    int writers[3];  // 0 parent, 1 child, 2 grandchild
  };
  for (const Order o : {Order{"parent, child, grandchild", {0, 1, 2}}, Order{"grandchild, parent, child", {2, 0, 1}}}) {
    SCOPED_TRACE(o.name);
    AddressSpace* parent = create();
    ASSERT_NE(parent, nullptr);
    dense(parent, kT, 1);
    const Pfn t = l1_of(parent, kT);
    reset_stats();
    AddressSpace* child = fork(parent);
    ASSERT_NE(child, nullptr);
    AddressSpace* grandchild = fork(child);  // the child still shares
    ASSERT_NE(grandchild, nullptr);
    EXPECT_EQ(pt_counters().pt_shares, 2u);
    EXPECT_EQ(l1_of(grandchild, kT), t);
    EXPECT_EQ(fake().uppers(t), 3u);
    EXPECT_EQ(refs(t), 3u);
    EXPECT_FALSE(gate_open(grandchild, kT));
    expect_consistent("after both forks");

    AddressSpace* who[3] = {parent, child, grandchild};
    for (int w : o.writers) {
      write(who[w], kT, static_cast<uint8_t>(0xa0 + w));
      write(who[w], kT + pg(10 + w), static_cast<uint8_t>(0xb0 + w));
      expect_consistent("after a write");
    }
    EXPECT_EQ(pt_counters().pt_copyouts, 2u) << "the first two writers copy";
    EXPECT_EQ(pt_counters().pt_gate_opens, 1u) << "the last one keeps the table";
    EXPECT_EQ(l1_of(who[o.writers[2]], kT), t);
    for (int w = 0; w < 3; ++w) {
      SCOPED_TRACE(w);
      EXPECT_EQ(read(who[w], kT), 0xa0 + w);
      for (int x = 0; x < 3; ++x) EXPECT_EQ(read(who[w], kT + pg(10 + x)), x == w ? 0xb0 + w : val(10 + x)) << x;
      expect_values(who[w], kT, kPagesPerTable, 0,
                    {{0, static_cast<uint8_t>(0xa0 + w)},
                     {10 + w, static_cast<uint8_t>(0xb0 + w)}});
    }
    // A fork of a space whose table is private again shares it again.
    AddressSpace* great = fork(grandchild);
    ASSERT_NE(great, nullptr);
    EXPECT_EQ(pt_counters().pt_shares, 3u);
    EXPECT_EQ(l1_of(great, kT), l1_of(grandchild, kT));
    write(great, kT + pg(20), 0xcc);
    EXPECT_EQ(read(grandchild, kT + pg(20)), val(20));
    EXPECT_EQ(read(great, kT), 0xa2);
    expect_consistent("after the great-grandchild wrote");
    destroy(child);
    destroy(great);
    destroy(parent);
    destroy(grandchild);
  }
}

// A read fault that maps a new page (the zero page) needs a leaf store: into
// a shared table only after a copy-out, into one whose last holder is left
// behind a closed gate only after a pushdown.
TEST_P(PtShareTest, ReadFaultsInATableBehindAClosedGateMakeItPrivateFirst) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  mmap_fixed(parent, kT, kTable, kRw);
  for (unsigned i = 0; i < 100; ++i) fill(parent, kT + pg(i), val(i));
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  const Pfn t = l1_of(parent, kT);
  ASSERT_EQ(l1_of(child, kT), t) << "100 leaves: shared";
  reset_stats();
  fake().clear_events();

  EXPECT_EQ(read(child, kT + pg(200)), 0);
  EXPECT_EQ(pt_counters().pt_copyouts, 1u);
  EXPECT_NE(l1_of(child, kT), t);
  EXPECT_EQ(l1_of(parent, kT), t);
  EXPECT_TRUE(entry(parent, kT + pg(200)).none());
  EXPECT_EQ(leaf_stores_into(t), 0u);
  expect_consistent("after the child's read fault");

  // The parent holds the table alone now: its leaf store needs no copy. (The
  // design pushes the gate's rights down first; storing a read-only leaf
  // behind the still-closed gate is as safe, so either is accepted.)
  EXPECT_EQ(read(parent, kT + pg(201)), 0);
  EXPECT_EQ(pt_counters().pt_copyouts, 1u);
  EXPECT_EQ(l1_of(parent, kT), t);
  if (pt_counters().pt_pushdowns == 0) {
    EXPECT_FALSE(gate_open(parent, kT)) << "no pushdown, so the gate must still be closed";
  }
  expect_consistent("after the parent's read fault");
  for (unsigned i = 0; i < 100; ++i) {
    EXPECT_FALSE(writable(parent, kT + pg(i))) << "frame shared with the child's copy: " << i;
    if (HasFailure()) break;
  }

  write(parent, kT + pg(50), 0x50);
  EXPECT_EQ(g_mm_stats.cow_copies, 1u);
  write(child, kT + pg(51), 0x51);
  EXPECT_EQ(g_mm_stats.cow_copies, 2u);
  write(parent, kT + pg(51), 0x52);
  EXPECT_EQ(g_mm_stats.cow_copies, 2u) << "the parent is the frame's last holder";
  EXPECT_EQ(read(child, kT + pg(50)), val(50));
  EXPECT_EQ(read(child, kT + pg(51)), 0x51);
  EXPECT_EQ(read(parent, kT + pg(51)), 0x52);
  expect_consistent("after the writes");
}

// =====================================================================
// partial operations on shared tables
// =====================================================================

TEST_P(PtShareTest, PartialMprotectOfASharedTableLeavesTheOtherSharersAlone) {
  for (bool child_acts : {true, false}) {
    SCOPED_TRACE(child_acts ? "the child mprotects" : "the parent mprotects");
    const auto [parent, child, t, actor, other] = fork_dense(child_acts);
    ASSERT_NE(parent, nullptr);
    ASSERT_NE(child, nullptr);
    reset_stats();
    fake().clear_events();

    ASSERT_EQ(error_of(actor->mprotect(VirtAddr{kT + pg(10)}, pg(5), kRo)), Errno::Ok);
    EXPECT_EQ(pt_counters().pt_copyouts, 1u) << "a shared table is copied before leaf work";
    EXPECT_EQ(leaf_stores_into(t), 0u);
    EXPECT_NE(l1_of(actor, kT), t);
    EXPECT_EQ(l1_of(other, kT), t);
    expect_consistent("after the partial mprotect");
    EXPECT_EQ(try_write(actor, kT + pg(10), 1), FaultOutcome::BadAccess);
    EXPECT_EQ(try_write(actor, kT + pg(14), 1), FaultOutcome::BadAccess);
    write(actor, kT + pg(15), 0x15);
    write(actor, kT + pg(9), 0x09);
    write(other, kT + pg(10), 0x10);  // the other side is not affected
    expect_consistent("after the writes");
    EXPECT_EQ(read(actor, kT + pg(10)), val(10));
    EXPECT_EQ(read(other, kT + pg(10)), 0x10);
    EXPECT_EQ(read(other, kT + pg(15)), val(15));
    EXPECT_EQ(read(other, kT + pg(9)), val(9));
    ASSERT_EQ(error_of(actor->mprotect(VirtAddr{kT + pg(10)}, pg(5), kRw)), Errno::Ok);
    write(actor, kT + pg(10), 0x20);
    EXPECT_EQ(read(other, kT + pg(10)), 0x10);
    EXPECT_EQ(read(actor, kT + pg(10)), 0x20);
    expect_consistent("after mprotect back");
    destroy(child);
    destroy(parent);
  }
}

TEST_P(PtShareTest, PartialMunmapOfASharedTableLeavesTheOtherSharersAlone) {
  for (bool child_acts : {true, false}) {
    SCOPED_TRACE(child_acts ? "the child unmaps" : "the parent unmaps");
    const auto [parent, child, t, actor, other] = fork_dense(child_acts);
    ASSERT_NE(parent, nullptr);
    ASSERT_NE(child, nullptr);
    const Pfn f100 = frame_at(parent, kT + pg(100));
    reset_stats();
    fake().clear_events();

    ASSERT_EQ(error_of(actor->munmap(VirtAddr{kT + pg(100)}, pg(3))), Errno::Ok);
    EXPECT_EQ(leaf_stores_into(t), 0u);
    EXPECT_EQ(l1_of(other, kT), t);
    EXPECT_NE(l1_of(actor, kT), t);
    EXPECT_TRUE(entry(actor, kT + pg(100)).none());
    EXPECT_EQ(refs(f100), 1u) << "the other side still holds the frame";
    expect_consistent("after the partial munmap");
    EXPECT_EQ(try_read(actor, kT + pg(100)), FaultOutcome::BadAccess);
    EXPECT_EQ(read(other, kT + pg(100)), val(100));
    EXPECT_EQ(read(other, kT + pg(102)), val(102));
    write(other, kT + pg(101), 0x31);
    EXPECT_EQ(read(actor, kT + pg(99)), val(99));
    EXPECT_EQ(read(actor, kT + pg(103)), val(103));
    // mmap over the hole: fresh zeroed pages for the actor only.
    mmap_fixed(actor, kT + pg(100), pg(3), kRw);
    EXPECT_EQ(read(actor, kT + pg(101)), 0);
    write(actor, kT + pg(101), 0x41);
    EXPECT_EQ(read(other, kT + pg(101)), 0x31);
    expect_consistent("after the writes");
    destroy(child);
    destroy(parent);
  }
}

TEST_P(PtShareTest, MunmapOfAWholeSharedTableOnlyUnhooksItUntilTheLastUser) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  dense(parent, kT, 1);
  mmap_fixed(parent, kT + kTable, pg(1), kRw);  // keeps the L2 table alive in both
  fill(parent, kT + kTable, 0x42);
  const Pfn t = l1_of(parent, kT);
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  const uint64_t free_before = frames().free_count();
  fake().clear_events();

  ASSERT_EQ(error_of(child->munmap(VirtAddr{kT}, kTable)), Errno::Ok);
  EXPECT_EQ(frames().free_count(), free_before) << "no frame is freed while the parent holds the table";
  EXPECT_EQ(retired(Level::L1), 0u);
  EXPECT_EQ(leaf_stores_into(t), 0u);
  EXPECT_EQ(fake().uppers(t), 1u);
  EXPECT_EQ(refs(t), 1u);
  EXPECT_EQ(try_read(child, kT + pg(3)), FaultOutcome::BadAccess);
  expect_values(parent, kT, kPagesPerTable, 0);
  expect_consistent("after the child's munmap");

  ASSERT_EQ(error_of(parent->munmap(VirtAddr{kT}, kTable)), Errno::Ok);
  EXPECT_EQ(retired(Level::L1), 1u) << "the last user frees the table";
  EXPECT_EQ(frames().free_count(), free_before + kPagesPerTable + 1) << "and its frames";
  expect_consistent("after the parent's munmap");
  EXPECT_EQ(read(child, kT + kTable), 0x42);
}

// =====================================================================
// mprotect of whole tables at the L2 entry
// =====================================================================

TEST_P(PtShareTest, WholeTableMprotectChangesOnlyTheL2Entry) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  dense(as, kT, 2);
  const Pfn t0 = l1_of(as, kT), t1 = l1_of(as, kT + kTable);
  reset_stats();
  fake().clear_events();

  ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, 2 * kTable, kRo)), Errno::Ok);
  EXPECT_EQ(pt_counters().l2_protects, 2u);
  EXPECT_EQ(leaf_stores_into(t0) + leaf_stores_into(t1), 0u) << "no leaf is written";
  EXPECT_FALSE(gate_open(as, kT));
  EXPECT_FALSE(gate_open(as, kT + kTable));
  EXPECT_EQ(l1_of(as, kT), t0);
  expect_consistent("after RW -> RO");
  EXPECT_EQ(try_write(as, kT + pg(3), 1), FaultOutcome::BadAccess);
  EXPECT_EQ(try_write(as, kT + kTable + pg(511), 1), FaultOutcome::BadAccess);
  expect_values(as, kT, 2 * kPagesPerTable, 0);

  const uint64_t l2_before = pt_counters().l2_protects;
  fake().clear_events();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, 2 * kTable, kRw)), Errno::Ok);
  EXPECT_EQ(pt_counters().l2_protects, l2_before + 2);
  EXPECT_EQ(pt_counters().pt_copyouts, 0u);
  EXPECT_EQ(leaf_stores_into(t0) + leaf_stores_into(t1), 0u) << "no leaf is written";
  EXPECT_TRUE(gate_open(as, kT));
  EXPECT_TRUE(gate_open(as, kT + kTable));
  expect_consistent("after RO -> RW");
  const uint64_t faults = g_mm_stats.page_faults;
  for (unsigned i = 0; i < 2 * kPagesPerTable; i += 37) write(as, kT + pg(i), 0x77);
  EXPECT_EQ(g_mm_stats.page_faults, faults) << "the leaves kept their write bit";

  // A range over one whole table and part of the next: the whole one at its
  // L2 entry, the rest per leaf.
  reset_stats();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, kTable + pg(10), kRo)), Errno::Ok);
  EXPECT_EQ(pt_counters().l2_protects, 1u);
  expect_consistent("after a mprotect over one and a bit tables");
  EXPECT_EQ(try_write(as, kT + kTable + pg(9), 1), FaultOutcome::BadAccess);
  write(as, kT + kTable + pg(10), 0x55);
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, 2 * kTable, kRw)), Errno::Ok);
  write(as, kT + pg(1), 0x56);
  write(as, kT + kTable + pg(9), 0x57);
  expect_consistent("after mprotect back");
}

// Write taken away at the L2 entry, then given back to part of the table
// only: the leaves of the rest still carry their old write bit, and must not
// become writable when the gate opens for the part that may be written.
TEST_P(PtShareTest, WholeTableReadOnlyThenPartlyWritableAgain) {
  for (bool forked : {false, true}) {
    SCOPED_TRACE(forked ? "with a child sharing the table" : "alone");
    AddressSpace* as = create();
    ASSERT_NE(as, nullptr);
    dense(as, kT, 1);
    AddressSpace* child = forked ? fork(as) : nullptr;
    ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, kTable, kRo)), Errno::Ok);
    expect_consistent("after RO");
    ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, pg(10), kRw)), Errno::Ok);
    expect_consistent("after RW of ten pages");
    write(as, kT + pg(3), 0x33);
    expect_consistent("after a write to them");
    EXPECT_EQ(try_write(as, kT + pg(10), 1), FaultOutcome::BadAccess);
    EXPECT_EQ(try_write(as, kT + pg(300), 1), FaultOutcome::BadAccess);
    EXPECT_EQ(read(as, kT + pg(300)), val(300));
    ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT + pg(400)}, pg(1), kRw)), Errno::Ok);
    write(as, kT + pg(400), 0x40);
    EXPECT_EQ(try_write(as, kT + pg(401), 1), FaultOutcome::BadAccess);
    expect_consistent("after the writes");
    if (child) {
      EXPECT_EQ(read(child, kT + pg(3)), val(3));
      write(child, kT + pg(300), 0x30);
      EXPECT_EQ(read(as, kT + pg(300)), val(300));
      destroy(child);
    }
    destroy(as);
  }
}

// The same with the writable part made by a new mapping, or by a read
// fault, instead of an mprotect.
TEST_P(PtShareTest, WholeTableReadOnlyThenANewWritableMappingInIt) {
  for (bool read_first : {false, true}) {
    SCOPED_TRACE(read_first ? "a read fault first" : "no read fault first");
    AddressSpace* as = create();
    ASSERT_NE(as, nullptr);
    mmap_fixed(as, kT, kTable, kRw);
    for (unsigned i = 0; i < 400; ++i) fill(as, kT + pg(i), val(i));
    ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, kTable, kRo)), Errno::Ok);
    if (read_first) {
      EXPECT_EQ(read(as, kT + pg(450)), 0);
    }
    expect_consistent("after RO");
    mmap_fixed(as, kT + pg(500), pg(4), kRw);
    expect_consistent("after mmap");
    write(as, kT + pg(501), 0x51);
    expect_consistent("after a write to the new mapping");
    EXPECT_EQ(try_write(as, kT + pg(3), 1), FaultOutcome::BadAccess);
    EXPECT_EQ(read(as, kT + pg(3)), val(3));
    EXPECT_EQ(read(as, kT + pg(501)), 0x51);
    destroy(as);
  }
}

TEST_P(PtShareTest, ProtNoneAndExecOfWholeTablesStayPerLeaf) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  dense(as, kT, 1);
  for (uint32_t prot : {kNone, kRx, kRo, kNone, kRw}) {
    SCOPED_TRACE(testing::Message() << "prot " << prot);
    ASSERT_EQ(error_of(as->mprotect(VirtAddr{kT}, kTable, prot)), Errno::Ok);
    expect_consistent("after mprotect");
    EXPECT_EQ(try_read(as, kT + pg(5)), prot ? FaultOutcome::Handled : FaultOutcome::BadAccess);
    EXPECT_EQ(try_write(as, kT + pg(6), val(6)), prot & vm::Write ? FaultOutcome::Handled : FaultOutcome::BadAccess);
  }
  expect_values(as, kT, kPagesPerTable, 0);
}

TEST_P(PtShareTest, WholeTableMprotectOfASharedTable) {
  const auto [parent, child, t, actor, other] = fork_dense();
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(child, nullptr);
  reset_stats();
  fake().clear_events();

  // Removing write from a shared table: its gate is already closed.
  ASSERT_EQ(error_of(child->mprotect(VirtAddr{kT}, kTable, kRo)), Errno::Ok);
  EXPECT_EQ(pt_counters().pt_copyouts, 0u);
  EXPECT_EQ(leaf_stores_into(t), 0u);
  EXPECT_EQ(l1_of(child, kT), t);
  expect_consistent("after RW -> RO in the child");
  EXPECT_EQ(try_write(child, kT, 1), FaultOutcome::BadAccess);

  // Adding it back to a shared table copies it out for the child.
  ASSERT_EQ(error_of(child->mprotect(VirtAddr{kT}, kTable, kRw)), Errno::Ok);
  EXPECT_EQ(leaf_stores_into(t), 0u);
  expect_consistent("after RO -> RW in the child");
  write(child, kT + pg(2), 0x22);
  EXPECT_EQ(pt_counters().pt_copyouts, 1u);
  EXPECT_NE(l1_of(child, kT), t);
  EXPECT_EQ(l1_of(parent, kT), t);
  EXPECT_EQ(read(parent, kT + pg(2)), val(2));
  write(parent, kT + pg(3), 0x33);
  EXPECT_EQ(read(child, kT + pg(3)), val(3));
  EXPECT_EQ(read(child, kT + pg(2)), 0x22);
  expect_consistent("after the writes");
}

// A table whose write right was taken away at its L2 entry, and that fork
// cannot share (it holds a shared VMA): the child's copy of the leaves must
// not be writable where the VMA is not (the model test found this in a
// draft of the kernel side).
TEST_P(PtShareTest, ForkOfATableReadOnlyAtItsL2EntryKeepsItReadOnlyInTheChild) {
  AddressSpace* parent = create();
  ASSERT_NE(parent, nullptr);
  mmap_fixed(parent, kT, pg(4), kRw, vm::Shared);
  mmap_fixed(parent, kT + pg(4), kTable - pg(4), kRw);
  for (unsigned i = 0; i < kPagesPerTable; ++i) fill(parent, kT + pg(i), val(i));
  reset_stats();
  ASSERT_EQ(error_of(parent->mprotect(VirtAddr{kT}, kTable, kRo)), Errno::Ok);
  expect_consistent("after mprotect");
  AddressSpace* child = fork(parent);
  ASSERT_NE(child, nullptr);
  expect_consistent("after fork");
  for (uint64_t va : {kT, kT + pg(3), kT + pg(4), kT + pg(300)}) {
    EXPECT_EQ(try_write(child, va, 1), FaultOutcome::BadAccess) << std::hex << va;
    EXPECT_EQ(try_write(parent, va, 1), FaultOutcome::BadAccess) << std::hex << va;
  }
  EXPECT_EQ(read(parent, kT + 1), val(0));
  EXPECT_EQ(read(parent, kT + pg(300) + 1), val(300));
  ASSERT_EQ(error_of(child->mprotect(VirtAddr{kT}, kTable, kRw)), Errno::Ok);
  write(child, kT, 0x21);
  write(child, kT + pg(300), 0x22);
  EXPECT_EQ(read(parent, kT), 0x21) << "the shared VMA is shared";
  EXPECT_EQ(read(parent, kT + pg(300)), val(300));
  expect_consistent("after the writes");
}

// =====================================================================
// running out in the middle of a copy-out
// =====================================================================

TEST_P(PtShareTest, ACopyOutWithoutFramesFailsCleanlyAndCanBeRetried) {
  // A copy-out needs one frame for the table and then one for the copy of
  // the written page.
  for (uint64_t budget = 0; budget <= 2; ++budget) {
    SCOPED_TRACE(testing::Message() << "frames left " << budget);
    set_mm_policy({.zero_page = true, .pgd_cache = false, .ptshare = true});
    const uint64_t free_start = frames().free_count();
    const auto [parent, child, t, actor, other] = fork_dense();
    ASSERT_NE(parent, nullptr);
    ASSERT_NE(child, nullptr);
    reset_stats();

    hoard(budget);
    const FaultOutcome o = child->handle_fault(VirtAddr{kT + pg(5)}, Access::Write);
    release_hoard();
    EXPECT_EQ(o, budget >= 2 ? FaultOutcome::Handled : FaultOutcome::OutOfMemory);
    expect_consistent("after the fault");
    EXPECT_EQ(l1_of(parent, kT), t);
    expect_values(parent, kT, kPagesPerTable, 0);
    expect_values(child, kT, kPagesPerTable, 0);
    write(child, kT + pg(5), 0x55);  // with frames to spare it works
    EXPECT_EQ(read(parent, kT + pg(5)), val(5));
    write(parent, kT + pg(6), 0x66);
    EXPECT_EQ(read(child, kT + pg(6)), val(6));
    expect_consistent("after the writes");
    destroy(child);
    destroy(parent);
    EXPECT_EQ(frames().free_count(), free_start) << "frames leaked";
  }
}

// The hypervisor refusing a store or a table pin at any point of a
// copy-out (or of a gate opening): the fault fails, nothing leaks, both
// sides stay whole, and the write works when tried again.
TEST_P(PtShareTest, ARefusalAtAnyStepOfACopyOutLeaksNothing) {
  set_mm_policy({.zero_page = true, .pgd_cache = false, .ptshare = true});
  for (unsigned n = 0;; ++n) {
    SCOPED_TRACE(testing::Message() << "refusing MMU event " << n << " of the fault");
    const uint64_t free_start = frames().free_count();
    const auto [parent, child, t, actor, other] = fork_dense();
    ASSERT_NE(parent, nullptr);
    ASSERT_NE(child, nullptr);
    unsigned seen = 0;
    bool refused = false;
    fake().fault = [&](const MmuEvent& ev) {
      if (ev.kind != Ev::Store && ev.kind != Ev::PrepareTable) return Errno::Ok;
      if (seen++ != n) return Errno::Ok;
      refused = true;
      return Errno::EINVAL;
    };
    const FaultOutcome o = child->handle_fault(VirtAddr{kT + pg(5)}, Access::Write);
    fake().fault = nullptr;
    if (refused) {
      EXPECT_EQ(o, FaultOutcome::OutOfMemory);
    } else {
      EXPECT_EQ(o, FaultOutcome::Handled);
    }
    expect_consistent("after the fault");
    expect_values(parent, kT, kPagesPerTable, 0);
    expect_values(child, kT, kPagesPerTable, 0);
    write(child, kT + pg(5), 0x55);
    write(parent, kT + pg(6), 0x66);
    EXPECT_EQ(read(parent, kT + pg(5)), val(5));
    EXPECT_EQ(read(child, kT + pg(6)), val(6));
    expect_consistent("after the writes");
    destroy(child);
    destroy(parent);
    EXPECT_EQ(frames().free_count(), free_start) << "frames leaked";
    if (!refused || HasFailure() || n > 64) break;
  }
}

TEST_P(PtShareTest, PartialOperationsOnASharedTableWithoutFramesLeaveItConsistent) {
  struct Case {
    const char* name;
    std::function<Errno(AddressSpace*)> op;
  };
  const Case cases[] = {
      {"mprotect RO", [](AddressSpace* as) { return error_of(as->mprotect(VirtAddr{kT + pg(10)}, pg(5), kRo)); }},
      {"mprotect NONE", [](AddressSpace* as) { return error_of(as->mprotect(VirtAddr{kT + pg(10)}, pg(5), kNone)); }},
      {"munmap", [](AddressSpace* as) { return error_of(as->munmap(VirtAddr{kT + pg(10)}, pg(5))); }},
      {"mmap fixed", [](AddressSpace* as) { return error_of(as->mmap(VirtAddr{kT + pg(10)}, pg(5), kRw, 0, true)); }},
  };
  for (const Case& c : cases) {
    for (uint64_t budget = 0; budget <= 1; ++budget) {
      SCOPED_TRACE(testing::Message() << c.name << ", frames left " << budget);
      set_mm_policy({.zero_page = true, .pgd_cache = false, .ptshare = true});
      const uint64_t free_start = frames().free_count();
      const auto [parent, child, t, actor, other] = fork_dense();
      ASSERT_NE(parent, nullptr);
      ASSERT_NE(child, nullptr);
      hoard(budget);
      const Errno e = c.op(child);
      release_hoard();
      EXPECT_TRUE(e == Errno::Ok || e == Errno::ENOMEM) << errno_name(e);
      if (budget >= 1) {
        EXPECT_EQ(e, Errno::Ok) << "one frame is enough for the copy";
      }
      expect_consistent("after the operation");
      expect_values(parent, kT, kPagesPerTable, 0);
      write(parent, kT + pg(11), 0x11);
      write(child, kT + pg(20), 0x20);
      EXPECT_EQ(read(parent, kT + pg(20)), val(20));
      expect_consistent("after the writes");
      destroy(child);
      destroy(parent);
      EXPECT_EQ(frames().free_count(), free_start) << "frames leaked";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PtShareTest, testing::ValuesIn(kAllWalkModes), walk_mode_name);

// =====================================================================
// the randomized model test
// =====================================================================
//
// Several processes over three 2 MiB regions (two in one L2 table, the third
// across a 1 GiB boundary in the next), random fork / write / fill / read /
// mprotect / munmap / mmap / exit. The reference model is a std::map per
// process from page to {prot, shared?, value cell}: private pages get their
// own cell at fork, shared ones keep the cell. A page's contents are a byte
// pattern derived from its value (0: never written, all zeros). After every
// step every process's VMAs, the bytes of every mapped page and its
// effective rights are compared with the model, and expect_consistent()
// runs. PVK_MODEL_SEED=<n> reruns one seed, PVK_MODEL_STEPS=<n> sets the
// length; the seed is in every failure message.

constexpr uint64_t kModelBase = kBase + 8 * kGiB - 2 * kTable;  // the third region starts at a 1 GiB boundary
constexpr unsigned kModelTables = 3;
constexpr unsigned kModelPages = kModelTables * kPagesPerTable;
constexpr unsigned kModelMaxProcs = 5;

uint8_t pattern(uint8_t v, unsigned off) { return v ? static_cast<uint8_t>(v + off * 13 + (off >> 8)) : 0; }

struct ModelPage {
  uint32_t prot;
  bool shared;
  std::shared_ptr<uint8_t> cell;  // the value; one cell per frame the page would have
};

struct ModelProc {
  AddressSpace* as;
  std::map<unsigned, ModelPage> pages;  // page index -> page
  int id;
};

class PtShareModelTest : public AddressSpaceTest {
 public:
  // What the model drives.
  using AddressSpaceTest::access;
  using AddressSpaceTest::create;
  using AddressSpaceTest::destroy;
  using AddressSpaceTest::Effective;
  using AddressSpaceTest::effective;
  using AddressSpaceTest::expect_consistent;
  using AddressSpaceTest::fork;
  using AddressSpaceTest::frame_at;
  using AddressSpaceTest::bytes;
  using AddressSpaceTest::try_write;
  using AddressSpaceTest::try_fork;
  using AddressSpaceTest::hoard;
  using AddressSpaceTest::release_hoard;
  using AddressSpaceTest::vmas;
  using AddressSpaceTest::writable;
  using AddressSpaceTest::refaults_;
  using AddressSpaceTest::baseline_;
  using AddressSpaceTest::baseline_tables_;

 protected:
  // Five processes of three tables each, all written, plus tables.
  uint64_t fake_frames() const override { return 12288; }
};

uint64_t env_or(const char* name, uint64_t dflt) {
  const char* s = getenv(name);
  return s && *s ? strtoull(s, nullptr, 0) : dflt;
}

class Model {
 public:
  Model(PtShareModelTest* t, uint64_t seed) : t_(t), rng_(seed) {
    for (unsigned v = 0; v < 256; ++v)
      for (unsigned o = 0; o < kPageSize; ++o) patterns_[v][o] = pattern(static_cast<uint8_t>(v), o);
  }
  std::deque<std::string> log;  // the last steps, for the failure message
  std::vector<ModelProc> procs;
  int next_id = 0;
  uint64_t scarce_failures = 0;  // operations that failed for want of frames, as allowed

  static uint64_t va(unsigned page) { return kModelBase + pg(page); }

  uint64_t rnd(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool chance(unsigned percent) { return rnd(100) < percent; }

  // A range of pages in the regions: whole tables, or a random stretch.
  std::pair<unsigned, unsigned> range() {
    if (chance(40)) {
      const unsigned first = static_cast<unsigned>(rnd(kModelTables));
      const unsigned n = static_cast<unsigned>(1 + rnd(kModelTables - first));
      return {first * kPagesPerTable, n * kPagesPerTable};
    }
    const unsigned start = static_cast<unsigned>(rnd(kModelPages));
    const unsigned max = kModelPages - start;
    const unsigned n = static_cast<unsigned>(1 + rnd(chance(70) ? std::min(max, 24u) : max));
    return {start, n};
  }
  uint32_t random_prot() {
    const uint64_t r = rnd(100);
    return r < 45 ? kRw : r < 75 ? kRo : r < 92 ? kNone : kRx;
  }
  // A page of the process: usually a mapped one.
  unsigned some_page(const ModelProc& p) {
    if (!p.pages.empty() && chance(90)) {
      auto it = p.pages.begin();
      std::advance(it, rnd(p.pages.size()));
      return it->first;
    }
    return static_cast<unsigned>(rnd(kModelPages));
  }

  // The VMAs the model implies: maximal runs of equal rights and kind.
  static std::vector<V> vmas_of(const ModelProc& p) {
    std::vector<V> out;
    for (const auto& [i, pg_] : p.pages) {
      const uint32_t flags = pg_.shared ? vm::Shared : 0;
      if (!out.empty() && out.back().end == va(i) && out.back().prot == pg_.prot && out.back().flags == flags)
        out.back().end += kPageSize;
      else
        out.push_back({va(i), va(i) + kPageSize, pg_.prot, flags});
    }
    return out;
  }

  // ---- the operations ----

  // With `scarce`, only a few frames are left free for the operation: it
  // may fail for want of memory (ENOMEM, OutOfMemory), and must then leave
  // everything as it was.
  void fork(size_t pi, bool scarce = false) {
    if (scarce) t_->hoard(rnd(6));
    auto r = t_->try_fork(procs[pi].as);
    if (scarce) t_->release_hoard();
    if (r.is_error()) {
      EXPECT_TRUE(scarce && r.error() == Errno::ENOMEM) << "fork: " << errno_name(r.error());
      ++scarce_failures;
      return;
    }
    ModelProc child{r.value(), {}, next_id++};
    for (const auto& [i, pg_] : procs[pi].pages)
      child.pages[i] = {pg_.prot, pg_.shared, pg_.shared ? pg_.cell : std::make_shared<uint8_t>(*pg_.cell)};
    procs.push_back(std::move(child));
  }
  void exit(size_t pi) {
    t_->destroy(procs[pi].as);
    procs.erase(procs.begin() + static_cast<long>(pi));
  }
  void write(ModelProc& p, unsigned i, uint8_t v, bool scarce = false) {
    auto it = p.pages.find(i);
    const bool allowed = it != p.pages.end() && (it->second.prot & vm::Write);
    if (scarce) t_->hoard(rnd(3));
    const FaultOutcome o = t_->try_write(p.as, va(i), patterns_[v][0]);
    if (scarce) t_->release_hoard();
    if (!allowed) {
      EXPECT_EQ(o, FaultOutcome::BadAccess) << "write to page " << i << " of process " << p.id;
      return;
    }
    if (scarce && o == FaultOutcome::OutOfMemory) {  // nothing written
      ++scarce_failures;
      return;
    }
    EXPECT_EQ(o, FaultOutcome::Handled) << "write to page " << i << " of process " << p.id;
    if (o != FaultOutcome::Handled) return;
    // The rest of the page, as the CPU would store it through the
    // (effectively writable) translation.
    if (!PtShareModelTest::writable(p.as, va(i))) {
      ADD_FAILURE() << "page " << i << " of process " << p.id << " not writable after a handled write";
      return;
    }
    memcpy(PtShareModelTest::bytes(PtShareModelTest::frame_at(p.as, va(i))), patterns_[v], kPageSize);
    *it->second.cell = v;
  }
  void read(ModelProc& p, unsigned i) {
    auto it = p.pages.find(i);
    const bool allowed = it != p.pages.end() && it->second.prot != kNone;
    const unsigned off = static_cast<unsigned>(rnd(kPageSize));
    uint8_t got = 0;
    const FaultOutcome o = t_->access(p.as, va(i) + off, false, &got);
    if (!allowed) {
      EXPECT_EQ(o, FaultOutcome::BadAccess) << "read of page " << i << " of process " << p.id;
      return;
    }
    EXPECT_EQ(o, FaultOutcome::Handled) << "read of page " << i << " of process " << p.id;
    EXPECT_EQ(got, pattern(*it->second.cell, off)) << "read of page " << i << " of process " << p.id;
  }
  bool all_mapped(const ModelProc& p, unsigned start, unsigned n) {
    for (unsigned i = start; i < start + n; ++i)
      if (!p.pages.count(i)) return false;
    return true;
  }
  // With scarce frames (ptshare: a copy-out may be needed first) they may
  // fail with ENOMEM, having changed nothing.
  void mprotect(ModelProc& p, unsigned start, unsigned n, uint32_t prot, bool scarce = false) {
    if (scarce) t_->hoard(rnd(2));
    const Errno e = error_of(p.as->mprotect(VirtAddr{va(start)}, pg(n), prot));
    if (scarce) t_->release_hoard();
    if (!all_mapped(p, start, n)) {
      EXPECT_EQ(e, Errno::ENOMEM) << "mprotect over a hole";
      return;
    }
    if (scarce && e == Errno::ENOMEM) {
      ++scarce_failures;
      return;
    }
    EXPECT_EQ(e, Errno::Ok) << "mprotect";
    if (e != Errno::Ok) return;
    for (unsigned i = start; i < start + n; ++i) p.pages[i].prot = prot;
  }
  void munmap(ModelProc& p, unsigned start, unsigned n, bool scarce = false) {
    if (scarce) t_->hoard(rnd(2));
    const Errno e = error_of(p.as->munmap(VirtAddr{va(start)}, pg(n)));
    if (scarce) t_->release_hoard();
    if (scarce && e == Errno::ENOMEM) {
      ++scarce_failures;
      return;
    }
    EXPECT_EQ(e, Errno::Ok) << "munmap";
    if (e != Errno::Ok) return;
    for (unsigned i = start; i < start + n; ++i) p.pages.erase(i);
  }
  void mmap(ModelProc& p, unsigned start, unsigned n, uint32_t prot, bool shared) {
    const Errno e = error_of(p.as->mmap(VirtAddr{va(start)}, pg(n), prot, shared ? vm::Shared : 0, true));
    EXPECT_EQ(e, Errno::Ok) << "mmap";
    if (e != Errno::Ok) return;
    for (unsigned i = start; i < start + n; ++i) p.pages[i] = {prot, shared, std::make_shared<uint8_t>(0)};
  }

  // One random step; returns its description.
  std::string step() {
    char buf[160];
    if (procs.empty()) {
      ModelProc p{t_->create(), {}, next_id++};
      if (!p.as) return "create failed";
      procs.push_back(std::move(p));
      snprintf(buf, sizeof buf, "create process %d", procs.back().id);
      return buf;
    }
    const size_t pi = rnd(procs.size());
    ModelProc& p = procs[pi];
    const uint64_t r = rnd(100);
    // The kernel's VMA table is finite (AddressSpace::kMaxVmas): keep clear
    // of it, as the model does not say what a full table refuses.
    const bool crowded = vmas_of(p).size() + 4 > AddressSpace::kMaxVmas;
    if (r < 7) {
      if (procs.size() < kModelMaxProcs) {
        const int id = p.id;
        const size_t before = procs.size();
        const bool scarce = chance(10);
        fork(pi, scarce);
        if (procs.size() > before)
          snprintf(buf, sizeof buf, "fork %d -> %d%s", id, procs.back().id, scarce ? " (scarce frames)" : "");
        else
          snprintf(buf, sizeof buf, "fork %d failed (scarce frames)", id);
      } else {
        snprintf(buf, sizeof buf, "exit %d", p.id);
        exit(pi);
      }
    } else if (r < 12) {
      snprintf(buf, sizeof buf, "exit %d", p.id);
      exit(pi);
    } else if (r < 40) {
      const unsigned i = some_page(p);
      const uint8_t v = static_cast<uint8_t>(1 + rnd(255));
      const bool scarce = chance(8);
      snprintf(buf, sizeof buf, "write %d page %u = %u%s", p.id, i, v, scarce ? " (scarce frames)" : "");
      write(p, i, v, scarce);
    } else if (r < 50) {
      auto [start, n] = range();
      if (chance(50)) n = std::min(kModelPages - start, kPagesPerTable);
      const uint8_t v = static_cast<uint8_t>(1 + rnd(255));
      snprintf(buf, sizeof buf, "fill %d pages [%u, %u) from %u", p.id, start, start + n, v);
      for (unsigned i = start; i < start + n; ++i) {
        const auto it = p.pages.find(i);
        if (it == p.pages.end() || !(it->second.prot & vm::Write)) continue;
        write(p, i, static_cast<uint8_t>(v + i) ? static_cast<uint8_t>(v + i) : 1);
        if (testing::Test::HasFailure()) break;
      }
    } else if (r < 66) {
      const unsigned i = some_page(p);
      snprintf(buf, sizeof buf, "read %d page %u", p.id, i);
      read(p, i);
    } else if (r < 80) {
      const auto [start, n] = range();
      const uint32_t prot = random_prot();
      const bool scarce = chance(8);
      snprintf(buf, sizeof buf, "mprotect %d pages [%u, %u) prot %u%s%s", p.id, start, start + n, prot,
               scarce ? " (scarce frames)" : "", crowded ? " (skipped: crowded)" : "");
      if (!crowded) mprotect(p, start, n, prot, scarce);
    } else if (r < 88) {
      const auto [start, n] = range();
      const bool scarce = chance(8);
      snprintf(buf, sizeof buf, "munmap %d pages [%u, %u)%s%s", p.id, start, start + n,
               scarce ? " (scarce frames)" : "", crowded ? " (skipped: crowded)" : "");
      if (!crowded) munmap(p, start, n, scarce);
    } else {
      const auto [start, n] = range();
      const uint32_t prot = chance(80) ? kRw : random_prot();
      const bool shared = n <= 16 && chance(20);
      snprintf(buf, sizeof buf, "mmap %d pages [%u, %u) prot %u%s%s", p.id, start, start + n, prot,
               shared ? " shared" : "", crowded ? " (skipped: crowded)" : "");
      if (!crowded) mmap(p, start, n, prot, shared);
    }
    return buf;
  }

  // Every process against the model: VMAs, bytes of every mapped page
  // (a few offsets, or all of them when `full`), effective rights.
  void verify(bool full) {
    for (const ModelProc& p : procs) {
      EXPECT_EQ(PtShareModelTest::vmas(p.as), vmas_of(p)) << "the VMAs of process " << p.id;
      auto it = p.pages.begin();
      for (unsigned i = 0; i < kModelPages; ++i) {
        while (it != p.pages.end() && it->first < i) ++it;
        const PtShareModelTest::Effective eff = PtShareModelTest::effective(p.as, va(i));
        const bool mapped = !lacks(eff.leaf, pte_bit::Present | pte_bit::ProtNone);
        if (it == p.pages.end() || it->first != i) {
          EXPECT_FALSE(mapped) << "page " << i << " of process " << p.id << " is mapped outside the model's VMAs";
          continue;
        }
        const ModelPage& m = it->second;
        if (m.prot == kNone) {
          EXPECT_FALSE(eff.present) << "PROT_NONE page " << i << " of process " << p.id << " is present";
        }
        if (!(m.prot & vm::Write)) {
          EXPECT_FALSE(eff.present && eff.write) << "read-only page " << i << " of process " << p.id
                                                 << " is writable";
        }
        if (eff.present) {
          EXPECT_EQ(eff.nx, !(m.prot & vm::Exec)) << "page " << i << " of process " << p.id;
        }
        if (!mapped) {
          EXPECT_EQ(*m.cell, 0) << "page " << i << " of process " << p.id << " was written but is not mapped";
          continue;
        }
        const uint8_t* b = PtShareModelTest::bytes(entry_pfn(eff.leaf));
        if (full) {
          if (memcmp(b, patterns_[*m.cell], kPageSize) != 0)
            ADD_FAILURE() << "page " << i << " of process " << p.id << " does not hold value " << unsigned(*m.cell);
        } else {
          for (unsigned off : {0u, 1u, 2048u, 4095u}) {
            if (b[off] != pattern(*m.cell, off)) {
              ADD_FAILURE() << "page " << i << " of process " << p.id << " byte " << off << " is " << unsigned(b[off])
                            << ", the model says " << unsigned(pattern(*m.cell, off)) << " (value "
                            << unsigned(*m.cell) << ")";
              break;
            }
          }
        }
        if (testing::Test::HasFailure()) return;
      }
    }
  }

 private:
  PtShareModelTest* t_;
  std::mt19937_64 rng_;
  uint8_t patterns_[256][kPageSize];
};

void run_model(PtShareModelTest* t, bool ptshare) {
  set_mm_policy({.zero_page = true, .pgd_cache = true, .ptshare = ptshare});
  const uint64_t seed = env_or("PVK_MODEL_SEED", 20261201);
  const uint64_t steps = env_or("PVK_MODEL_STEPS", 2000);
  SCOPED_TRACE(testing::Message() << "seed " << seed << " (rerun: PVK_MODEL_SEED=" << seed
                                  << " pvk_host_tests --gtest_filter='" << testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()
                                  << "." << testing::UnitTest::GetInstance()->current_test_info()->name() << "')");
  auto model = std::make_unique<Model>(t, seed);
  uint64_t shares_seen = 0;
  for (uint64_t s = 0; s < steps; ++s) {
    fake().clear_events();
    std::string what = model->step();
    model->log.push_back("step " + std::to_string(s) + ": " + what);
    if (model->log.size() > 24) model->log.pop_front();
    if (!testing::Test::HasFailure()) model->verify(s % 97 == 0);
    if (!testing::Test::HasFailure()) t->expect_consistent(what.c_str());
    shares_seen = pt_counters().pt_shares;
    if (testing::Test::HasFailure()) {
      std::string trail;
      for (const std::string& l : model->log) trail += "  " + l + "\n";
      ADD_FAILURE() << "stopped at step " << s << " of seed " << seed << "; the last steps:\n" << trail;
      return;
    }
  }
  model->verify(true);
  // Everyone exits; TearDown checks the frames are back to the baseline.
  while (!model->procs.empty()) model->exit(model->procs.size() - 1);
  EXPECT_EQ(error_of(drain_root_cache()), Errno::Ok);
  EXPECT_EQ(frames().free_count(), t->baseline_) << "frames leaked (or freed twice) by seed " << seed;
  EXPECT_EQ(fake().table_count(), t->baseline_tables_) << "page tables left behind by seed " << seed;
  if (ptshare) {
    EXPECT_GT(shares_seen, 0u) << "the run never shared a table";
    EXPECT_GT(pt_counters().pt_copyouts + pt_counters().pt_gate_opens, 0u);
  } else {
    EXPECT_EQ(shares_seen, 0u);
  }
  printf("[ model    ] seed %lu, %lu steps, ptshare=%s: faults %lu, cow copies %lu, shares %lu, copy-outs %lu, "
         "gate opens %lu, pushdowns %lu, l2 protects %lu, second faults %lu, failures for want of frames %lu\n",
         static_cast<unsigned long>(seed), static_cast<unsigned long>(steps), ptshare ? "on" : "off",
         static_cast<unsigned long>(g_mm_stats.page_faults), static_cast<unsigned long>(g_mm_stats.cow_copies),
         static_cast<unsigned long>(pt_counters().pt_shares), static_cast<unsigned long>(pt_counters().pt_copyouts),
         static_cast<unsigned long>(pt_counters().pt_gate_opens), static_cast<unsigned long>(pt_counters().pt_pushdowns),
         static_cast<unsigned long>(pt_counters().l2_protects), static_cast<unsigned long>(t->refaults_), static_cast<unsigned long>(model->scarce_failures));
}

TEST_P(PtShareModelTest, RandomProcessesMatchTheModelWithPtshareOff) { run_model(this, false); }
TEST_P(PtShareModelTest, RandomProcessesMatchTheModelWithPtshareOn) { run_model(this, true); }

INSTANTIATE_TEST_SUITE_P(Modes, PtShareModelTest, testing::ValuesIn(kAllWalkModes), walk_mode_name);

}  // namespace
}  // namespace test
}  // namespace pvk
