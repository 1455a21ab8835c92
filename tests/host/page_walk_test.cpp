// The shared page walk (pvops/walk/) through the fake backend, in both
// pte= modes and with L1 stores immediate or deferred to the lazy flush.
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "base/layout.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "mmu_fixture.h"

namespace pvk::test {
namespace {

using testing::ElementsAreArray;
using testing::IsEmpty;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;
// 5 pages below a 1 GiB boundary in the user half: the first pages cross an
// L1, an L2 and an L3 table boundary.
constexpr VirtAddr kUserBase{7 * kGiB - 5 * kPageSize};
// The same in the kernel half (where the selftest works).
constexpr VirtAddr kKernelBase{PVK_SCRATCH_BASE + kGiB - 5 * kPageSize};
// 5 pages below a 512 GiB boundary: also crosses an L4 entry.
constexpr VirtAddr kL4Base{512 * kGiB - 5 * kPageSize};
constexpr uint64_t kPages = 4096;
// Leaf frames need not exist for the walk (it never touches them).
constexpr Pfn kLeafPfn{0x40000};

VirtAddr page(VirtAddr base, uint64_t i) { return base + i * kPageSize; }
bool is_write(Pte e) { return e.raw & pte_bit::Write; }

class PageWalkTest : public WalkTest {
 protected:
  // Stores the walk made at `level`, from the log.
  size_t stores_at(Level level) {
    size_t n = 0;
    for (const MmuEvent& e : fake().events(Ev::Store)) n += e.level == level;
    return n;
  }
  size_t prepared_at(Level level) {
    size_t n = 0;
    for (const MmuEvent& e : fake().events(Ev::PrepareTable)) n += e.level == level;
    return n;
  }
  std::set<uint64_t> frames_of(Ev kind, Level level) {
    std::set<uint64_t> s;
    for (const MmuEvent& e : fake().events(kind))
      if (e.level == level) s.insert(raw(e.table));
    return s;
  }
  size_t flushes() { return fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll); }
  std::set<uint64_t> flushed_vas() {
    std::set<uint64_t> s;
    for (const MmuEvent& e : fake().events(Ev::FlushOne)) s.insert(raw(e.va));
    return s;
  }
  // Every page of [base, base+n) maps src.at(i) with exactly `flags`.
  void expect_mapped(VirtAddr base, uint64_t n, FrameSource src, PteFlags flags) {
    unsigned bad = 0;
    for (uint64_t i = 0; i < n && bad < 5; ++i) {
      auto e = lookup(page(base, i));
      if (e.is_error()) {
        ADD_FAILURE() << "page " << i << ": lookup failed with " << errno_name(e.error());
        ++bad;
        continue;
      }
      const Pte v = e.value();
      if (g_mmu.pte_pfn(v) != src.at(i) || entry_frame_field(v) != raw(src.at(i)) + kMfnOffset ||
          (v.raw & pte_bit::FlagMask) != flags.bits) {
        ADD_FAILURE() << "page " << i << ": entry 0x" << std::hex << v.raw << ", expected pfn 0x" << raw(src.at(i))
                      << " (frame field 0x" << raw(src.at(i)) + kMfnOffset << ") flags 0x" << flags.bits;
        ++bad;
      }
    }
  }
  void expect_unmapped(VirtAddr va) { EXPECT_EQ(error_of(lookup(va)), Errno::ENOENT) << std::hex << raw(va); }
};

// ---- map and lookup ----

TEST_P(PageWalkTest, MapThenLookupAcrossTableBoundaries) {
  for (VirtAddr base : {kUserBase, kKernelBase, kL4Base}) {
    SCOPED_TRACE(testing::Message() << "base 0x" << std::hex << raw(base));
    start(config());
    const FrameSource src{nullptr, kLeafPfn};
    ASSERT_EQ(error_of(map(base, kPages, src, pte_flags::KernelRw)), Errno::Ok);
    expect_mapped(base, kPages, src, pte_flags::KernelRw);
    expect_unmapped(VirtAddr{raw(base) - kPageSize});
    expect_unmapped(page(base, kPages));

    // One new table per L1/L2/L3 region the range touches (the root exists).
    EXPECT_EQ(prepared_at(Level::L1), tables_spanned(base, kPages, Level::L1));
    EXPECT_EQ(prepared_at(Level::L2), tables_spanned(base, kPages, Level::L2));
    EXPECT_EQ(prepared_at(Level::L3), tables_spanned(base, kPages, Level::L3));
    EXPECT_EQ(prepared_at(Level::L4), 0u);
    // Each table hooked by one store one level up; one store per leaf.
    EXPECT_EQ(stores_at(Level::L2), prepared_at(Level::L1));
    EXPECT_EQ(stores_at(Level::L3), prepared_at(Level::L2));
    EXPECT_EQ(stores_at(Level::L4), prepared_at(Level::L3));
    EXPECT_EQ(stores_at(Level::L1), kPages);
    EXPECT_EQ(frames().free_count(), baseline_ - fake().count(Ev::PrepareTable));
    // Entries that were not present cannot be cached: no TLB work at all.
    EXPECT_EQ(flushes(), 0u);
    EXPECT_THAT(fake().violations(), IsEmpty());
  }
}

TEST_P(PageWalkTest, MapFromAnArrayOfFrames) {
  std::vector<Pfn> pfns(700);
  std::mt19937_64 rng(42);
  for (auto& p : pfns) p = Pfn{0x1000 + (rng() % 0xfffff)};
  const FrameSource src{pfns.data(), {}};
  const PteFlags flags{pte_bit::Present | pte_bit::User};
  ASSERT_EQ(error_of(map(kUserBase, pfns.size(), src, flags)), Errno::Ok);
  expect_mapped(kUserBase, pfns.size(), src, flags);
}

TEST_P(PageWalkTest, UpperEntriesHoldTheBackendsFrameNumbers) {
  ASSERT_EQ(error_of(map(kUserBase, 600, {nullptr, kLeafPfn}, pte_flags::KernelRo)), Errno::Ok);
  const auto prepared = fake().events(Ev::PrepareTable);
  std::set<uint64_t> expected_frames;
  for (const MmuEvent& e : prepared) expected_frames.insert(raw(e.table) + kMfnOffset);
  std::set<uint64_t> hooked;
  for (const MmuEvent& e : fake().events(Ev::Store)) {
    if (e.level == Level::L1) continue;
    hooked.insert(entry_frame_field(Pte{e.value}));
    EXPECT_EQ(e.value, FakePolicy::make_table(entry_pfn(Pte{e.value})).raw) << "built by make_table()";
    EXPECT_TRUE(PteFlags{e.value}.has(pte_flags::Table.bits)) << "intermediate entries grant everything";
  }
  EXPECT_EQ(hooked, expected_frames);
  // And the independent walk finds the leaves through them.
  Pte* leaf = fake().slot(root_, page(kUserBase, 599), Level::L1);
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(entry_pfn(*leaf), kLeafPfn + 599);
}

TEST_P(PageWalkTest, MapOverAnExistingEntryFailsWithEexistAndKeepsIt) {
  const VirtAddr base = kUserBase;
  ASSERT_EQ(error_of(map(base, 10, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  std::vector<Pte> before;
  for (uint64_t i = 0; i < 10; ++i) before.push_back(*fake().slot(root_, page(base, i), Level::L1));

  // The same page again: refused before any store.
  fake().clear_events();
  EXPECT_EQ(error_of(map(page(base, 3), 1, {nullptr, Pfn{0x777}}, pte_flags::KernelRo)), Errno::EEXIST);
  EXPECT_EQ(fake().count(Ev::Store), 0u);

  // A range running into the mapping from below: the pages before it are
  // mapped (documented), the existing ones are untouched.
  const VirtAddr low{raw(base) - 5 * kPageSize};
  fake().clear_events();
  EXPECT_EQ(error_of(map(low, 10, {nullptr, Pfn{0x900}}, pte_flags::KernelRo)), Errno::EEXIST);
  for (uint64_t i = 0; i < 5; ++i) {
    auto e = lookup(page(low, i));
    ASSERT_FALSE(e.is_error()) << i;
    EXPECT_EQ(g_mmu.pte_pfn(e.value()), Pfn{0x900 + i});
  }
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(*fake().slot(root_, page(base, i), Level::L1), before[i]) << i;
  std::set<const Pte*> existing;
  for (uint64_t i = 0; i < 10; ++i) existing.insert(fake().slot(root_, page(base, i), Level::L1));
  for (const MmuEvent& e : fake().events(Ev::Store))
    EXPECT_EQ(existing.count(fake().table(e.table) + e.index), 0u) << "stored into an existing entry";
}

TEST_P(PageWalkTest, MapStoresOnlyThroughThePolicyEncoding) {
  // A leaf's entry is P::make(pfn, flags): frame field pfn + offset, flags verbatim.
  const PteFlags flags{pte_bit::Present | pte_bit::Write | pte_bit::User | pte_bit::Pcd | pte_bit::Nx | pte_bit::Soft0};
  ASSERT_EQ(error_of(map(kUserBase, 3, {nullptr, Pfn{0x4242}}, flags)), Errno::Ok);
  auto stores = fake().events(Ev::Store);
  std::vector<uint64_t> leaf_values;
  for (const MmuEvent& e : stores)
    if (e.level == Level::L1) leaf_values.push_back(e.value);
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < 3; ++i) expected.push_back(FakePolicy::make(Pfn{0x4242 + i}, flags).raw);
  EXPECT_THAT(leaf_values, ElementsAreArray(expected));
}

// ---- pte=flags vs pte=attrs ----

TEST_P(PageWalkTest, PteAccessModeDecidesWhoReadsFlags) {
  ASSERT_EQ(error_of(map(kUserBase, 40, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  ASSERT_FALSE(lookup(kUserBase).is_error());
  if (GetParam().access == PteAccess::Flags)
    EXPECT_GE(fake().pte_flags_calls(), 40u) << "pte=flags: every presence test goes through pvops pte_flags";
  else
    EXPECT_EQ(fake().pte_flags_calls(), 0u) << "pte=attrs: flags are read inline";

  // A pte_flags that claims nothing is present changes what the walk sees
  // under pte=flags only.
  const auto saved = g_mmu.pte_flags;
  g_mmu.pte_flags = [](Pte) { return PteFlags{}; };
  const Errno e = error_of(lookup(page(kUserBase, 3)));
  g_mmu.pte_flags = saved;
  EXPECT_EQ(e, GetParam().access == PteAccess::Flags ? Errno::ENOENT : Errno::Ok);
}

// ---- protect ----

TEST_P(PageWalkTest, ProtectClearsWriteAndKeepsAccessedDirty) {
  const VirtAddr base = kUserBase;
  const FrameSource src{nullptr, kLeafPfn};
  ASSERT_EQ(error_of(map(base, kPages, src, pte_flags::KernelRw)), Errno::Ok);
  // The hardware sets A on use and D on write; pretend every other page was written.
  for (uint64_t i = 0; i < kPages; ++i)
    fake().slot(root_, page(base, i), Level::L1)->raw |= pte_bit::Accessed | (i % 2 ? pte_bit::Dirty : 0);

  fake().clear_events();
  ASSERT_EQ(error_of(protect(base, kPages, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::ProtStart), kPages);
  EXPECT_EQ(stores_at(Level::L1), kPages);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 0u);
  const PteFlags ro = pte_flags::KernelRw.without(pte_bit::Write);
  for (uint64_t i = 0; i < kPages; ++i) {
    const Pte e = *fake().slot(root_, page(base, i), Level::L1);
    const uint64_t ad = pte_bit::Accessed | (i % 2 ? pte_bit::Dirty : 0);
    ASSERT_EQ(e.raw & pte_bit::FlagMask, ro.bits | ad) << "page " << i;
    ASSERT_EQ(entry_pfn(e), src.at(i)) << "page " << i;
  }

  // And back: Write set, A/D still kept.
  ASSERT_EQ(error_of(protect(base, kPages, PteFlags{pte_bit::Write}, {})), Errno::Ok);
  for (uint64_t i = 0; i < kPages; ++i) {
    const Pte e = *fake().slot(root_, page(base, i), Level::L1);
    ASSERT_TRUE(is_write(e)) << "page " << i;
    ASSERT_TRUE(e.raw & pte_bit::Accessed) << "page " << i;
    ASSERT_EQ(bool(e.raw & pte_bit::Dirty), i % 2 == 1) << "page " << i;
  }
}

TEST_P(PageWalkTest, ProtectSetsThenClears) {
  ASSERT_EQ(error_of(map(kUserBase, 4, {nullptr, kLeafPfn}, pte_flags::KernelRo)), Errno::Ok);
  // Both set and cleared: cleared wins; set-only bits appear.
  ASSERT_EQ(error_of(protect(kUserBase, 4, PteFlags{pte_bit::Write | pte_bit::User}, PteFlags{pte_bit::Write | pte_bit::Nx})),
            Errno::Ok);
  for (uint64_t i = 0; i < 4; ++i) {
    const Pte e = lookup(page(kUserBase, i)).value();
    EXPECT_EQ(e.raw & pte_bit::FlagMask, pte_bit::Present | pte_bit::User) << i;
  }
}

TEST_P(PageWalkTest, ProtectOfASparseRangeSkipsHoles) {
  const VirtAddr a = kUserBase;
  const VirtAddr b = a + 3 * kMiB;                  // another L1 table
  const VirtAddr c = a + 2 * kGiB + 7 * kPageSize;  // another L2 table, a missing one between
  ASSERT_EQ(error_of(map(a, 3, {nullptr, Pfn{0x100}}, pte_flags::KernelRw)), Errno::Ok);
  ASSERT_EQ(error_of(map(b, 2, {nullptr, Pfn{0x200}}, pte_flags::KernelRw)), Errno::Ok);
  ASSERT_EQ(error_of(map(c, 4, {nullptr, Pfn{0x300}}, pte_flags::KernelRw)), Errno::Ok);
  const size_t tables = fake().table_count();
  const uint64_t span = (raw(c) - raw(a)) / kPageSize + 4 + 100;

  fake().clear_events();
  ASSERT_EQ(error_of(protect(a, span, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::ProtStart), 9u) << "only present leaves are touched";
  EXPECT_EQ(stores_at(Level::L1), 9u);
  EXPECT_EQ(fake().count(Ev::Store), 9u) << "no table hooked";
  EXPECT_EQ(fake().count(Ev::PrepareTable), 0u) << "protect must not allocate tables";
  EXPECT_EQ(fake().table_count(), tables);
  for (auto [va, n] : {std::pair{a, 3}, std::pair{b, 2}, std::pair{c, 4}})
    for (int i = 0; i < n; ++i) EXPECT_FALSE(is_write(lookup(page(va, i)).value()));
  expect_unmapped(page(a, 3));
  expect_unmapped(page(b, 2));
  EXPECT_EQ(fake().slot(root_, a + kGiB, Level::L1), nullptr) << "the hole's tables were not created";
}

// ---- TLB invalidation ----

TEST_P(PageWalkTest, ProtectFlushesOnlyTheLoadedRootOrTheKernelHalf) {
  const uint64_t n = 8;
  struct Case {
    const char* what;
    VirtAddr base;
    bool load;
    bool flush;
  } cases[] = {{"user half, root not loaded", kUserBase, false, false},
               {"user half, root loaded", kUserBase, true, true},
               {"kernel half, root not loaded", kKernelBase, false, true},
               {"kernel half, root loaded", kKernelBase, true, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    start(config());
    if (c.load) {
      ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
    }
    ASSERT_EQ(error_of(map(c.base, n, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
    EXPECT_EQ(flushes(), 0u) << "map of empty entries";
    fake().clear_events();
    ASSERT_EQ(error_of(protect(c.base, n, {}, PteFlags{pte_bit::Write})), Errno::Ok);
    EXPECT_EQ(fake().count(Ev::FlushAll), 0u);
    std::set<uint64_t> expected;
    if (c.flush)
      for (uint64_t i = 0; i < n; ++i) expected.insert(raw(page(c.base, i)));
    EXPECT_EQ(flushed_vas(), expected);
    EXPECT_EQ(fake().count(Ev::FlushOne), expected.size()) << "each page flushed once";
  }
}

TEST_P(PageWalkTest, ManyPagesFlushTheWholeTlbOnce) {
  for (uint64_t n : {uint64_t{1}, uint64_t{LazyMmuSection::kMaxSinglePageFlushes},
                     uint64_t{LazyMmuSection::kMaxSinglePageFlushes + 1}, uint64_t{600}}) {
    SCOPED_TRACE(n);
    start(config());
    ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
    ASSERT_EQ(error_of(map(kUserBase, n, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
    fake().clear_events();
    ASSERT_EQ(error_of(protect(kUserBase, n, {}, PteFlags{pte_bit::Write})), Errno::Ok);
    if (n <= LazyMmuSection::kMaxSinglePageFlushes) {
      EXPECT_EQ(fake().count(Ev::FlushOne), n);
      EXPECT_EQ(fake().count(Ev::FlushAll), 0u);
    } else {
      EXPECT_EQ(fake().count(Ev::FlushOne), 0u);
      EXPECT_EQ(fake().count(Ev::FlushAll), 1u);
    }
  }
}

// ---- unmap ----

struct Visits {
  std::map<uint64_t, unsigned> count;  // va -> times visited
  std::map<uint64_t, uint64_t> pfn;    // va -> pfn of the old entry
  bool free_frames = false;
  static void fn(void* ctx, VirtAddr va, Pte old) {
    auto* v = static_cast<Visits*>(ctx);
    ++v->count[raw(va)];
    v->pfn[raw(va)] = raw(g_mmu.pte_pfn(old));
    if (v->free_frames) frames().must_free(g_mmu.pte_pfn(old));
  }
  UnmapVisitor visitor() { return {&fn, this}; }
};

TEST_P(PageWalkTest, UnmapVisitsReleasesTablesAndReturnsToBaseline) {
  for (VirtAddr base : {kUserBase, kKernelBase, kL4Base}) {
    SCOPED_TRACE(testing::Message() << "base 0x" << std::hex << raw(base));
    start(config(8192));
    ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
    // Real frames for the leaves, freed by the visitor from the entries.
    std::vector<Pfn> leaves(kPages);
    for (auto& p : leaves) p = frames().must_alloc();
    ASSERT_EQ(error_of(map(base, kPages, {leaves.data(), {}}, pte_flags::KernelRw)), Errno::Ok);
    const auto l1_tables = frames_of(Ev::PrepareTable, Level::L1);
    const auto l2_tables = frames_of(Ev::PrepareTable, Level::L2);
    const auto l3_tables = frames_of(Ev::PrepareTable, Level::L3);
    ASSERT_EQ(l1_tables.size(), tables_spanned(base, kPages, Level::L1));

    fake().clear_events();
    Visits v;
    v.free_frames = true;
    ASSERT_EQ(error_of(unmap(base, kPages, v.visitor())), Errno::Ok);

    ASSERT_EQ(v.count.size(), kPages) << "every present page visited";
    for (uint64_t i = 0; i < kPages; ++i) {
      const uint64_t va = raw(page(base, i));
      ASSERT_EQ(v.count[va], 1u) << "page " << i;
      ASSERT_EQ(v.pfn[va], raw(leaves[i])) << "page " << i;
      ASSERT_EQ(error_of(lookup(page(base, i))), Errno::ENOENT) << "page " << i;
    }
    // Every L1 and L2 table the map made is retired; L3/L4 never are.
    EXPECT_EQ(frames_of(Ev::RetireTable, Level::L1), l1_tables);
    EXPECT_EQ(frames_of(Ev::RetireTable, Level::L2), l2_tables);
    EXPECT_EQ(fake().count(Ev::RetireTable), l1_tables.size() + l2_tables.size()) << "each retired once";
    for (uint64_t t : l3_tables) EXPECT_TRUE(fake().is_table(Pfn{t})) << "L3 tables live as long as the root";
    EXPECT_TRUE(fake().is_table(root_));
    for (uint64_t t : l1_tables) EXPECT_TRUE(frames().is_free(Pfn{t}));
    for (uint64_t t : l2_tables) EXPECT_TRUE(frames().is_free(Pfn{t}));
    // The L3 entries that pointed at the freed L2 tables are gone; L4 entries stay.
    for (VirtAddr va : {base, page(base, kPages - 1)}) {
      Pte* l3_slot = fake().slot(root_, va, Level::L3);
      ASSERT_NE(l3_slot, nullptr);
      EXPECT_TRUE(l3_slot->none());
    }
    EXPECT_EQ(frames().free_count(), baseline_ - l3_tables.size()) << "only the L3 tables stay allocated";

    // TLB flush, then the lazy flush, then the tables go back.
    const auto& ev = fake().events();
    auto first = [&](Ev k) { return std::find_if(ev.begin(), ev.end(), [k](const MmuEvent& e) { return e.kind == k; }); };
    auto last_flush = std::find_if(ev.rbegin(), ev.rend(), [](const MmuEvent& e) {
                        return e.kind == Ev::FlushAll || e.kind == Ev::FlushOne;
                      }).base();
    ASSERT_NE(first(Ev::FlushAll), ev.end());
    ASSERT_NE(first(Ev::RetireTable), ev.end());
    EXPECT_LE(last_flush, first(Ev::RetireTable));
    EXPECT_LT(std::find_if(last_flush, ev.end(), [](const MmuEvent& e) { return e.kind == Ev::LazyFlush; }),
              first(Ev::RetireTable));
    EXPECT_THAT(fake().violations(), IsEmpty());
  }
}

TEST_P(PageWalkTest, PartialUnmapKeepsTheTable) {
  const VirtAddr base{4 * kGiB + 100 * kPageSize};  // inside one L1 table
  ASSERT_EQ(error_of(map(base, 10, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  const Pfn l1 = entry_pfn(*fake().slot(root_, base, Level::L2));
  fake().clear_events();
  ASSERT_EQ(error_of(unmap(base, 5)), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::RetireTable), 0u);
  EXPECT_TRUE(fake().is_table(l1));
  for (uint64_t i = 0; i < 5; ++i) expect_unmapped(page(base, i));
  expect_mapped(page(base, 5), 5, {nullptr, kLeafPfn + 5}, pte_flags::KernelRw);

  // The rest: now the table, and the L2 table above it, are empty.
  ASSERT_EQ(error_of(unmap(page(base, 5), 5)), Errno::Ok);
  EXPECT_EQ(frames_of(Ev::RetireTable, Level::L1), std::set<uint64_t>{raw(l1)});
  EXPECT_EQ(frames_of(Ev::RetireTable, Level::L2).size(), 1u);
  EXPECT_EQ(frames().free_count(), baseline_ - 1) << "only the L3 table remains";
}

TEST_P(PageWalkTest, PartialUnmapAcrossTwoTablesReleasesOnlyTheEmptiedOne) {
  const VirtAddr base{4 * kGiB + 2 * kMiB - 10 * kPageSize};  // 10 pages each side of an L1 boundary
  ASSERT_EQ(error_of(map(base, 20, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  const Pfn first = entry_pfn(*fake().slot(root_, base, Level::L2));
  const Pfn second = entry_pfn(*fake().slot(root_, page(base, 10), Level::L2));
  ASSERT_NE(first, second);
  fake().clear_events();
  Visits v;
  ASSERT_EQ(error_of(unmap(page(base, 5), 10, v.visitor())), Errno::Ok);  // 5 from each
  EXPECT_EQ(v.count.size(), 10u);
  EXPECT_EQ(fake().count(Ev::RetireTable), 0u);

  ASSERT_EQ(error_of(unmap(base, 5, v.visitor())), Errno::Ok);  // first table now empty
  EXPECT_EQ(frames_of(Ev::RetireTable, Level::L1), std::set<uint64_t>{raw(first)});
  EXPECT_EQ(frames_of(Ev::RetireTable, Level::L2), std::set<uint64_t>{}) << "the L2 table still holds the second";
  EXPECT_TRUE(fake().is_table(second));
  expect_mapped(page(base, 15), 5, {nullptr, kLeafPfn + 15}, pte_flags::KernelRw);
  EXPECT_EQ(v.count.size(), 15u);
}

TEST_P(PageWalkTest, UnmapOfANeverMappedRangeIsANoOp) {
  // No tables at all.
  ASSERT_EQ(error_of(unmap(kUserBase, kPages)), Errno::Ok);
  for (const MmuEvent& e : fake().events())
    EXPECT_TRUE(e.kind == Ev::LazyEnter || e.kind == Ev::LazyFlush || e.kind == Ev::LazyLeave) << ev_name(e.kind);
  EXPECT_EQ(frames().free_count(), baseline_);

  // Holes inside a live table: nothing stored, the table stays.
  const VirtAddr base{4 * kGiB};
  ASSERT_EQ(error_of(map(base, 4, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  ASSERT_EQ(error_of(map(page(base, 8), 4, {nullptr, kLeafPfn + 8}, pte_flags::KernelRw)), Errno::Ok);
  fake().clear_events();
  Visits v;
  ASSERT_EQ(error_of(unmap(page(base, 4), 4, v.visitor())), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::Store), 0u);
  EXPECT_EQ(fake().count(Ev::RetireTable), 0u);
  EXPECT_TRUE(v.count.empty());
  expect_mapped(base, 4, {nullptr, kLeafPfn}, pte_flags::KernelRw);
  expect_mapped(page(base, 8), 4, {nullptr, kLeafPfn + 8}, pte_flags::KernelRw);
}

TEST_P(PageWalkTest, UnmapOfManyTablesDrainsTheBatchEarly) {
  // More emptied L1 tables than one LazyMmuSection holds: it must push the queued
  // clears and free tables mid-way (the fake checks each is empty by then).
  const uint64_t tables = LazyMmuSection::kMaxPendingTables + 6;
  const uint64_t pages = tables * kEntriesPerTable;
  const VirtAddr base{8 * kGiB};
  ASSERT_EQ(error_of(map(base, pages, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  fake().clear_events();
  ASSERT_EQ(error_of(unmap(base, pages)), Errno::Ok);
  EXPECT_EQ(frames_of(Ev::RetireTable, Level::L1).size(), tables);
  EXPECT_GE(fake().count(Ev::LazyFlush), 2u) << "an early drain and the final one";
  EXPECT_EQ(frames().free_count(), baseline_ - 1);
}

TEST_P(PageWalkTest, MapUnmapCyclesDoNotLeak) {
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(error_of(map(kUserBase, 1500, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
    ASSERT_EQ(error_of(protect(kUserBase, 1500, {}, PteFlags{pte_bit::Write})), Errno::Ok);
    ASSERT_EQ(error_of(unmap(kUserBase, 1500)), Errno::Ok);
    // Only the L3 table the first map created stays.
    EXPECT_EQ(frames().free_count(), baseline_ - 1) << "round " << round;
    EXPECT_EQ(fake().table_count(), 2u) << "root and one L3";
  }
}

// ---- populate ----

TEST_P(PageWalkTest, PopulateCreatesEachTableOnce) {
  const VirtAddr va = kKernelBase;
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, va, Level::L3)), Errno::Ok);
  EXPECT_EQ(prepared_at(Level::L3), 1u);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 1u);
  EXPECT_EQ(stores_at(Level::L4), 1u);
  ASSERT_NE(fake().slot(root_, va, Level::L3), nullptr);

  // Again, and for another address under the same L4 entry: nothing new.
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, va, Level::L3)), Errno::Ok);
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, va + 100 * kGiB, Level::L3)), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 1u);
  EXPECT_EQ(fake().count(Ev::Store), 1u);

  // Down to L1: one L2 and one L1 table, then a map needs nothing more.
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, va, Level::L1)), Errno::Ok);
  EXPECT_EQ(prepared_at(Level::L2), 1u);
  EXPECT_EQ(prepared_at(Level::L1), 1u);
  fake().clear_events();
  ASSERT_EQ(error_of(map(va, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 0u);
  EXPECT_EQ(frames().free_count(), baseline_ - 3);
}

// ---- ENOMEM and failing hooks ----

// Takes every free frame (or all but `leave`), gives them back on destruction.
class Hoard {
 public:
  explicit Hoard(uint64_t leave = 0) {
    while (frames().free_count() > leave) taken_.push_back(frames().must_alloc());
  }
  ~Hoard() { release(); }
  void release() {
    for (Pfn p : taken_) frames().must_free(p);
    taken_.clear();
  }
  size_t size() const { return taken_.size(); }

 private:
  std::vector<Pfn> taken_;
};

TEST_P(PageWalkTest, MapWithoutFramesFailsWithEnomemAndLeaksNothing) {
  Hoard hoard;
  EXPECT_EQ(hoard.size(), baseline_);
  EXPECT_EQ(frames().free_count(), 0u);
  EXPECT_EQ(error_of(map(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::ENOMEM);
  EXPECT_EQ(fake().count(Ev::Store), 0u);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 0u);
  hoard.release();
  EXPECT_EQ(frames().free_count(), baseline_);
  EXPECT_EQ(fake().table_count(), 1u) << "only the root";
}

TEST_P(PageWalkTest, EnomemPartWayKeepsTheTreeUsable) {
  // A fresh 512 GiB region needs L3, L2 and L1 tables; with only one or two
  // frames the map fails after hooking what it could allocate.
  for (uint64_t leave : {uint64_t{1}, uint64_t{2}}) {
    SCOPED_TRACE(leave);
    start(config());
    {
      Hoard hoard(leave);
      EXPECT_EQ(error_of(map(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::ENOMEM);
      EXPECT_EQ(fake().count(Ev::PrepareTable), leave);
      EXPECT_EQ(stores_at(Level::L1), 0u);
      EXPECT_EQ(fake().table_count(), 1 + leave) << "tables allocated before the failure stay hooked";
    }
    EXPECT_EQ(frames().free_count(), baseline_ - leave);
    // Once memory is back the same map completes, reusing those tables.
    fake().clear_events();
    ASSERT_EQ(error_of(map(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
    EXPECT_EQ(fake().count(Ev::PrepareTable), 3 - leave);
    expect_mapped(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw);
  }
}

TEST_P(PageWalkTest, EnomemInTheSecondTableKeepsTheFirstAndUnmapCleansUp) {
  const VirtAddr base{12 * kGiB};  // L1-table aligned
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, base, Level::L2)), Errno::Ok);  // L3 + L2
  {
    Hoard hoard(1);  // one L1 table's worth
    EXPECT_EQ(error_of(map(base, 2 * kEntriesPerTable, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::ENOMEM);
  }
  // Documented: entries mapped before the failure stay mapped.
  expect_mapped(base, kEntriesPerTable, {nullptr, kLeafPfn}, pte_flags::KernelRw);
  expect_unmapped(page(base, kEntriesPerTable));
  ASSERT_EQ(error_of(unmap(base, 2 * kEntriesPerTable)), Errno::Ok);
  EXPECT_EQ(fake().table_count(), 2u) << "root and L3 left";
  EXPECT_EQ(frames().free_count(), baseline_ - 1);
}

// A failed map leaves the empty intermediate tables it managed to allocate
// hooked in; unmap of the same range only considers tables reached through
// a present L2 entry, so an empty L2 table left this way is never freed
// (until the address space goes, which does not exist yet) and the
// free-frame count never returns to its baseline. See the report.
TEST_P(PageWalkTest, UnmapReclaimsAnEmptyL2TableLeftByAFailedMap) {
  const VirtAddr base{12 * kGiB};
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, base, Level::L3)), Errno::Ok);
  const uint64_t with_l3 = frames().free_count();
  {
    Hoard hoard(1);  // the L2 table fits, the L1 table does not
    EXPECT_EQ(error_of(map(base, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::ENOMEM);
  }
  ASSERT_EQ(error_of(unmap(base, 1)), Errno::Ok);
  EXPECT_EQ(frames().free_count(), with_l3) << "the empty L2 table is still allocated";
}

TEST_P(PageWalkTest, FailedHookRetiresAndFreesTheNewTable) {
  const VirtAddr base{12 * kGiB};
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, base, Level::L2)), Errno::Ok);
  const uint64_t before = frames().free_count();
  fake().clear_events();
  fake().fault = [](const MmuEvent& e) { return e.kind == Ev::Store && e.level == Level::L2 ? Errno::EIO : Errno::Ok; };
  EXPECT_EQ(error_of(map(base, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::EIO);
  fake().fault = nullptr;
  const auto prepared = fake().events(Ev::PrepareTable);
  const auto retired = fake().events(Ev::RetireTable);
  ASSERT_EQ(prepared.size(), 1u);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_EQ(retired[0].table, prepared[0].table);
  EXPECT_EQ(retired[0].level, Level::L1);
  EXPECT_TRUE(frames().is_free(prepared[0].table));
  EXPECT_EQ(frames().free_count(), before);
  EXPECT_TRUE(fake().slot(root_, base, Level::L2)->none());
}

TEST_P(PageWalkTest, FailedPrepareFreesTheFrameAndHooksNothing) {
  fake().fault = [](const MmuEvent& e) { return e.kind == Ev::PrepareTable ? Errno::EIO : Errno::Ok; };
  EXPECT_EQ(error_of(map(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::EIO);
  fake().fault = nullptr;
  EXPECT_EQ(fake().count(Ev::Store), 0u);
  EXPECT_EQ(fake().count(Ev::RetireTable), 0u) << "nothing to retire: it was never prepared";
  EXPECT_EQ(frames().free_count(), baseline_);
}

TEST_P(PageWalkTest, FailedLeafStoreStopsTheMap) {
  int leaf_stores = 0;
  fake().fault = [&](const MmuEvent& e) {
    return e.kind == Ev::Store && e.level == Level::L1 && ++leaf_stores == 3 ? Errno::EIO : Errno::Ok;
  };
  EXPECT_EQ(error_of(map(kUserBase, 10, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::EIO);
  fake().fault = nullptr;
  expect_mapped(kUserBase, 2, {nullptr, kLeafPfn}, pte_flags::KernelRw);
  for (uint64_t i = 2; i < 10; ++i) expect_unmapped(page(kUserBase, i));
}

// ---- remap, fork_range, release_user_tables (address spaces' range ops) ----

TEST_P(PageWalkTest, RemapCreatesTablesAndInvalidatesOnlyAReplacedEntry) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  const PteFlags flags = pte_flags::UserRw;
  {
    LazyMmuSection section(root_);
    EXPECT_EQ(error_of(g_mmu.range.remap(root_, kUserBase, Pfn{0x4100}, flags, section)), Errno::Ok);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(prepared_at(Level::L1), 1u);
  EXPECT_EQ(flushes(), 0u) << "nothing was there to be cached";
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    EXPECT_EQ(error_of(g_mmu.range.remap(root_, kUserBase, Pfn{0x4200}, pte_flags::UserRo, section)), Errno::Ok);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_THAT(flushed_vas(), ElementsAreArray({raw(kUserBase)}));
  expect_mapped(kUserBase, 1, {nullptr, Pfn{0x4200}}, pte_flags::UserRo);
  EXPECT_EQ(fake().count(Ev::ProtStart), 0u) << "a plain store, not a protection change";
}

TEST_P(PageWalkTest, ForkRangeCopiesMappedLeavesAndTakesFrameReferences) {
  // Leaves need real frames here: fork_range counts references to them.
  std::vector<Pfn> pfns;
  for (int i = 0; i < 6; ++i) pfns.push_back(frames().must_alloc());
  const VirtAddr base = kUserBase;  // crosses an L1 table after 5 pages
  const PteFlags rw = pte_flags::UserRw, ro = pte_flags::UserRo, none{pte_bit::User | pte_bit::ProtNone};
  ASSERT_EQ(error_of(map(base, 2, {pfns.data(), {}}, rw)), Errno::Ok);
  ASSERT_EQ(error_of(map(page(base, 2), 1, {&pfns[2], {}}, ro)), Errno::Ok);
  ASSERT_EQ(error_of(map(page(base, 3), 1, {&pfns[3], {}}, none)), Errno::Ok);
  ASSERT_EQ(error_of(map(page(base, 6), 2, {&pfns[4], {}}, rw)), Errno::Ok);  // pages 4, 5 left empty
  for (ForkMode mode : {ForkMode::CopyOnWrite, ForkMode::Share}) {
    SCOPED_TRACE(mode == ForkMode::CopyOnWrite ? "CopyOnWrite" : "Share");
    const Pfn child = fake().new_root();
    std::vector<Pte> before;
    for (uint64_t i = 0; i < 8; ++i) before.push_back(*fake().slot(root_, page(base, i), Level::L1));
    for (Pfn p : pfns) frame_refs().set(p, 1);
    {
      LazyMmuSection section(root_);
      EXPECT_EQ(error_of(g_mmu.range.fork_range(root_, child, base, 8, mode, section)), Errno::Ok);
      EXPECT_EQ(error_of(section.finish()), Errno::Ok);
    }
    for (uint64_t i = 0; i < 8; ++i) {
      SCOPED_TRACE(i);
      const Pte parent_e = *fake().slot(root_, page(base, i), Level::L1);
      Pte* child_slot = fake().slot(child, page(base, i), Level::L1);
      if (i == 4 || i == 5) {
        EXPECT_TRUE(parent_e.none());
        EXPECT_TRUE(!child_slot || child_slot->none());
        continue;
      }
      ASSERT_NE(child_slot, nullptr);
      EXPECT_EQ(*child_slot, parent_e);
      EXPECT_EQ(frame_refs().get(entry_pfn(parent_e)), 2u);
      // Every private leaf becomes copy-on-write, read-only and PROT_NONE
      // ones included: a later mprotect must not make the shared frame
      // writable in both spaces.
      if (mode == ForkMode::CopyOnWrite)
        EXPECT_EQ(parent_e.raw, (before[i].raw & ~pte_bit::Write) | pte_bit::Cow);
      else
        EXPECT_EQ(parent_e, before[i]);
    }
    // Tear the child down by hand (no frames to free: the test owns them).
    {
      LazyMmuSection section(child);
      EXPECT_EQ(error_of(g_mmu.range.unmap(child, base, 8, {}, section)), Errno::Ok);
      EXPECT_EQ(error_of(g_mmu.range.release_user_tables(child, section)), Errno::Ok);
      EXPECT_EQ(error_of(section.finish()), Errno::Ok);
    }
    EXPECT_EQ(error_of(g_mmu.release_pt_page(child, Level::L4)), Errno::Ok);
    frames().must_free(child);
    // Back to writable for the next mode.
    ASSERT_EQ(error_of(protect(base, 8, {}, PteFlags{pte_bit::Cow})), Errno::Ok);
    ASSERT_EQ(error_of(protect(base, 2, rw, {})), Errno::Ok);
    ASSERT_EQ(error_of(protect(page(base, 6), 2, rw, {})), Errno::Ok);
  }
  ASSERT_EQ(error_of(unmap(base, 8)), Errno::Ok);
  for (Pfn p : pfns) frames().must_free(p);
}

TEST_P(PageWalkTest, ReleaseUserTablesFreesTheUserHalfOnlyOnceItIsEmpty) {
  // A kernel-half table, which must survive.
  ASSERT_EQ(error_of(g_mmu.range.populate(root_, kKernelBase, Level::L3)), Errno::Ok);
  const VirtAddr far{600 * kGiB};  // another L4 entry
  ASSERT_EQ(error_of(map(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::UserRw)), Errno::Ok);
  ASSERT_EQ(error_of(map(far, 1, {nullptr, kLeafPfn}, pte_flags::UserRw)), Errno::Ok);
  const size_t tables = fake().table_count();
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    EXPECT_EQ(error_of(g_mmu.range.release_user_tables(root_, section)), Errno::EBUSY) << "a leaf is still mapped";
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(fake().table_count(), tables);
  expect_mapped(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::UserRw);

  ASSERT_EQ(error_of(unmap(kUserBase, 1)), Errno::Ok);
  ASSERT_EQ(error_of(unmap(far, 1)), Errno::Ok);
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    EXPECT_EQ(error_of(g_mmu.range.release_user_tables(root_, section)), Errno::Ok);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(frames_of(Ev::RetireTable, Level::L3).size(), 2u);
  EXPECT_EQ(fake().count(Ev::RetireTable), 2u);
  const Pte* l4 = fake().table(root_);
  for (unsigned i = 0; i < kEntriesPerTable / 2; ++i) EXPECT_TRUE(l4[i].none()) << i;
  EXPECT_TRUE(l4[index_at(kKernelBase, Level::L4)].present()) << "the kernel half is not the user's";
  EXPECT_EQ(fake().table_count(Level::L3), 1u);
}

// ---- the fake itself: deferral must really defer, or the deferred modes prove nothing ----

TEST_P(PageWalkTest, DeferredModeQueuesL1StoresUntilTheSectionFlushes) {
  Pte* slot = nullptr;
  {
    // No ASSERT while the section is open: leaving without finish() panics.
    LazyMmuSection section(root_);
    EXPECT_EQ(error_of(g_mmu.range.map(root_, kUserBase, 3, {nullptr, kLeafPfn}, pte_flags::KernelRw)),
              Errno::Ok);
    slot = fake().slot(root_, kUserBase, Level::L1);
    EXPECT_NE(slot, nullptr) << "upper levels are immediate";
    if (slot) {
      EXPECT_EQ(fake().pending(), GetParam().defer ? 3u : 0u);
      EXPECT_EQ(slot->none(), GetParam().defer);
    }
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(fake().pending(), 0u);
  EXPECT_EQ(entry_pfn(*slot), kLeafPfn);
}

// An L1 table may have several parents (ptshare=on); the fake counts them
// from the upper-level stores and refuses leaf stores into a shared table
// and the retirement of a table still hooked somewhere.
TEST_P(PageWalkTest, TheFakeCountsTheParentsOfATableAndFlagsStoresIntoASharedL1) {
  ASSERT_EQ(error_of(map(kUserBase, 1, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  Pte* l2_slot = fake().slot(root_, kUserBase, Level::L2);
  ASSERT_NE(l2_slot, nullptr);
  const Pfn l1 = entry_pfn(*l2_slot);
  const Pfn l2 = virt_to_pfn(l2_slot);
  EXPECT_EQ(fake().uppers(l1), 1u);
  EXPECT_EQ(fake().uppers(l2), 1u);
  EXPECT_EQ(fake().uppers(root_), 0u);
  Pte* l1_table = fake().table(l1);
  const unsigned leaf = index_at(kUserBase, Level::L1);

  // Closing the gate (same table, RW cleared) keeps one parent.
  const Pte gate{FakePolicy::make_table(l1).raw & ~pte_bit::Write};
  ASSERT_EQ(error_of(FakePolicy::store(l2_slot, gate, Level::L2)), Errno::Ok);
  EXPECT_EQ(fake().uppers(l1), 1u);
  EXPECT_EQ(error_of(FakePolicy::store(&l1_table[leaf], Pte{}, Level::L1)), Errno::Ok);
  EXPECT_THAT(fake().violations(), IsEmpty()) << "a store into a table with one parent is fine";

  // A second parent: the L2 entry before it (another 2 MiB of the same L2 table).
  Pte* other = l2_slot - 1;
  ASSERT_TRUE(other->none());
  ASSERT_EQ(error_of(FakePolicy::store(other, gate, Level::L2)), Errno::Ok);
  EXPECT_EQ(fake().uppers(l1), 2u);
  EXPECT_EQ(error_of(FakePolicy::store(&l1_table[leaf], FakePolicy::make(kLeafPfn, pte_flags::KernelRw), Level::L1)),
            Errno::Ok);
  EXPECT_EQ(fake().violations().size(), 1u) << "a store into a shared table";
  const Pte old = FakePolicy::modify_prot_start(&l1_table[leaf]);
  EXPECT_EQ(error_of(FakePolicy::modify_prot_commit(&l1_table[leaf], old, old)), Errno::Ok);
  EXPECT_EQ(fake().violations().size(), 3u) << "a protect of a leaf of a shared table (start and commit)";
  {
    LazyMmuSection section(root_);
    EXPECT_EQ(error_of(FakePolicy::store(&l1_table[leaf], Pte{}, Level::L1)), Errno::Ok);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(fake().violations().size(), GetParam().defer ? 5u : 4u) << "queued, and again when applied";
  fake().violations().clear();

  // Back to one parent; a table cannot go while that one still hooks it.
  ASSERT_EQ(error_of(FakePolicy::store(other, Pte{}, Level::L2)), Errno::Ok);
  EXPECT_EQ(fake().uppers(l1), 1u);
  EXPECT_EQ(error_of(FakePolicy::store(&l1_table[leaf], Pte{}, Level::L1)), Errno::Ok);
  EXPECT_THAT(fake().violations(), IsEmpty());
  EXPECT_EQ(error_of(FakePolicy::retire_table(l1, Level::L1)), Errno::Ok);
  ASSERT_EQ(fake().violations().size(), 1u);
  EXPECT_THAT(fake().violations()[0], testing::HasSubstr("still referenced"));
  fake().violations().clear();
  // The tree is inconsistent now (the L2 entry hooks a retired table): the
  // next test starts from a fresh fake.
}

// Freeing a page table needs a TLB flush even when no present leaf went
// with it: the CPU's paging-structure caches may hold the L2 entry that
// pointed at it (Linux: mmu_gather's freed_tables). Here the leaves were
// made not-present by an earlier protect (PROT_NONE-like), so unmap
// invalidates nothing, clears the L2 entry and frees the L1 table with no
// flush in between. See the report.
TEST_P(PageWalkTest, FreeingATableOfTheLoadedRootFlushesTheTlb) {
  ASSERT_EQ(error_of(g_mmu.load_root(root_)), Errno::Ok);
  ASSERT_EQ(error_of(map(kUserBase, 4, {nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
  ASSERT_EQ(error_of(protect(kUserBase, 4, {}, PteFlags{pte_bit::Present})), Errno::Ok);
  fake().clear_events();
  ASSERT_EQ(error_of(unmap(kUserBase, 4)), Errno::Ok);
  const auto& ev = fake().events();
  auto clear_l2 = std::find_if(ev.begin(), ev.end(),
                               [](const MmuEvent& e) { return e.kind == Ev::Store && e.level == Level::L2; });
  auto retire = std::find_if(ev.begin(), ev.end(), [](const MmuEvent& e) { return e.kind == Ev::RetireTable; });
  ASSERT_NE(clear_l2, ev.end());
  ASSERT_NE(retire, ev.end());
  const bool flushed = std::any_of(clear_l2, retire, [](const MmuEvent& e) {
    return e.kind == Ev::FlushOne || e.kind == Ev::FlushAll;
  });
  EXPECT_TRUE(flushed) << "an L1 table of the loaded root was freed without any TLB flush after its L2 entry was cleared";
}

INSTANTIATE_TEST_SUITE_P(Modes, PageWalkTest, testing::ValuesIn(kAllWalkModes), walk_mode_name);

}  // namespace
}  // namespace pvk::test
