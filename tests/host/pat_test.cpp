// Cache attributes (memory types): the two PAT layouts pvk runs on
// (pvops/pte_attrs.h), pte_attrs/make_pte_attrs both ways, pte_flags and
// pte_attrs against the raw bits for every flag combination, and
// set_memory_type (mm/cpa.h) through the shared walk on the fake MMU.
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "base/layout.h"
#include "kernel_space_host.h"
#include "mm/cpa.h"
#include "mmu_fixture.h"
#include "pvops/pte_attrs.h"

namespace pvk::test {
namespace {

struct Layout {
  const char* name;
  uint64_t pat;
};
const Layout kLayouts[] = {{"pvk", kNativePatMsr}, {"xen", kXenPatMsr}};

// The leaf bits each layout must give each type, written out from the
// layouts themselves rather than computed. pvk's (Linux's): WB 0, WC PWT,
// UC- PCD, UC PCD|PWT, WP PAT|PWT, WT PAT|PCD|PWT. Xen's (its _PAGE_* cache
// macros, xen/arch/x86/include/asm/page.h): WB 0, WT PWT, UC- PCD, UC
// PCD|PWT, WC PAT, WP PAT|PWT.
uint64_t expected_bits(const std::string& layout, CacheAttr a) {
  using namespace pte_bit;
  const bool xen = layout == "xen";
  switch (a) {
    case CacheAttr::WriteBack: return 0;
    case CacheAttr::WriteThrough: return xen ? Pwt : Pat | Pcd | Pwt;
    case CacheAttr::UncachedMinus: return Pcd;
    case CacheAttr::Uncached: return Pcd | Pwt;
    case CacheAttr::WriteCombining: return xen ? Pat : Pwt;
    case CacheAttr::WriteProtect: return Pat | Pwt;
  }
  return ~uint64_t{0};
}

TEST(PatLayout, Values) {
  // Xen's XEN_MSR_PAT (an ABI with PV guests; RELEASE-4.17.0
  // xen/arch/x86/include/asm/processor.h).
  EXPECT_EQ(kXenPatMsr, 0x0000050100070406ull);
  // pvk's native layout: WB WC UC- UC | WB WP UC- WT.
  EXPECT_EQ(kNativePatMsr, 0x0407050600070106ull);
  EXPECT_TRUE(pat_has_every_type(kNativePatMsr));
  EXPECT_TRUE(pat_has_every_type(kXenPatMsr));
  // The power-on layout, which pvk replaces natively, has no WC and no WP.
  EXPECT_FALSE(pat_has_every_type(pat_value(kPowerOnPat)));
  EXPECT_EQ(pat_slot_for(pat_value(kPowerOnPat), CacheAttr::WriteCombining), -1);
  EXPECT_EQ(pat_slot_for(pat_value(kPowerOnPat), CacheAttr::WriteProtect), -1);
  // Both keep WB in slot 0, so mappings made before the native PAT write
  // (no cache bits) mean the same after it.
  EXPECT_EQ(kNativePatMsr & 0xff, uint64_t(PatType::WB));
  EXPECT_EQ(pat_value(kPowerOnPat) & 0xff, uint64_t(PatType::WB));
}

class PatRoundTrip : public testing::TestWithParam<Layout> {};

// Every logical type encodes to the expected bits and decodes back to itself,
// whatever else the leaf holds.
TEST_P(PatRoundTrip, EveryLogicalType) {
  const Layout& l = GetParam();
  for (CacheAttr a : kEveryCacheAttr) {
    SCOPED_TRACE(cache_attr_name(a));
    const PteFlags bits = cache_flags_for(l.pat, a);
    EXPECT_EQ(bits.bits, expected_bits(l.name, a));
    EXPECT_EQ(bits.bits & ~pte_bit::CacheMask, 0u) << "only PWT/PCD/PAT";
    EXPECT_EQ(cache_attr_for(l.pat, Pte{bits.bits}), a);
    for (uint64_t other : {pte_bit::Present, pte_bit::Present | pte_bit::Write | pte_bit::Nx,
                           pte_bit::FrameMask | pte_bit::Accessed | pte_bit::Dirty | pte_bit::Global | pte_bit::User,
                           ~pte_bit::CacheMask})
      EXPECT_EQ(cache_attr_for(l.pat, Pte{other | bits.bits}), a) << std::hex << other;
  }
}

// Every slot decodes to the layout's type, and encoding that type gives the
// lowest slot holding it (which decodes the same).
TEST_P(PatRoundTrip, EverySlot) {
  const Layout& l = GetParam();
  for (unsigned slot = 0; slot < 8; ++slot) {
    SCOPED_TRACE(slot);
    const Pte leaf{pte_bit::Present | pat_slot_flags(slot).bits};
    EXPECT_EQ(pat_slot_of(leaf), slot);
    const CacheAttr a = cache_attr_for(l.pat, leaf);
    EXPECT_EQ(a, cache_attr_of(uint8_t(l.pat >> (8 * slot))));
    const int lowest = pat_slot_for(l.pat, a);
    ASSERT_GE(lowest, 0);
    EXPECT_LE(unsigned(lowest), slot);
    EXPECT_EQ(cache_attr_for(l.pat, Pte{cache_flags_for(l.pat, a).bits}), a);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PatRoundTrip, testing::ValuesIn(kLayouts),
                         [](const testing::TestParamInfo<Layout>& info) { return std::string(info.param.name); });

TEST(PatLayout, WriteProtectIsNotUncached) {
  // Before memory types were real, WP decoded as Uncached; it is its own type now.
  EXPECT_EQ(cache_attr_for(kXenPatMsr, Pte{pte_bit::Pat | pte_bit::Pwt}), CacheAttr::WriteProtect);
  EXPECT_EQ(cache_attr_for(kNativePatMsr, Pte{pte_bit::Pat | pte_bit::Pwt}), CacheAttr::WriteProtect);
  // Xen's two reserved slots are programmed UC.
  EXPECT_EQ(cache_attr_for(kXenPatMsr, Pte{pte_bit::Pat | pte_bit::Pcd}), CacheAttr::Uncached);
  EXPECT_EQ(cache_attr_for(kXenPatMsr, Pte{pte_bit::Pat | pte_bit::Pcd | pte_bit::Pwt}), CacheAttr::Uncached);
}

// ---- the pvops verbs (the fake backend: native layout), both pte= modes ----

class PteVerbs : public FakeMmuTest, public testing::WithParamInterface<PteAccess> {
 protected:
  void SetUp() override { start({256, GetParam(), false}); }
};

TEST_P(PteVerbs, MakePteAttrsRoundTrip) {
  for (CacheAttr a : kEveryCacheAttr) {
    SCOPED_TRACE(cache_attr_name(a));
    const PteFlags bits = g_mmu.make_pte_attrs(a);
    EXPECT_EQ(bits.bits, expected_bits("pvk", a));
    const Pte e = g_mmu.make_pte(Pfn{0x42}, pte_flags::KernelRw.with(bits.bits));
    EXPECT_EQ(g_mmu.pte_attrs(e), a);
    EXPECT_EQ(g_mmu.pte_flags(e).bits & pte_bit::CacheMask, bits.bits);
    EXPECT_EQ(g_mmu.pte_pfn(e), Pfn{0x42});
  }
}

// pte_flags is the raw flag bits and pte_attrs the type of the slot the raw
// PWT/PCD/PAT bits select, for every combination of the low twelve flag
// bits, with and without NX and high software bits.
TEST_P(PteVerbs, FlagsAndAttrsAgreeWithRawBitsForEveryCombination) {
  unsigned bad = 0;
  for (uint64_t low = 0; low < (1u << 12) && bad < 5; ++low) {
    for (uint64_t high : {uint64_t{0}, pte_bit::Nx, pte_bit::Nx | (uint64_t{0x7f} << 52)}) {
      const PteFlags flags{low | high};
      const Pte e = g_mmu.make_pte(Pfn{0x1234}, flags);
      const unsigned slot = ((low >> 7) & 1) << 2 | ((low >> 4) & 1) << 1 | ((low >> 3) & 1);
      const CacheAttr want = cache_attr_of(uint8_t(kNativePatMsr >> (8 * slot)));
      if (g_mmu.pte_flags(e) != flags || g_mmu.pte_attrs(e) != want || g_mmu.pte_pfn(e) != Pfn{0x1234}) {
        ADD_FAILURE() << "flags 0x" << std::hex << flags.bits << ": pte_flags 0x" << g_mmu.pte_flags(e).bits
                      << ", pte_attrs " << cache_attr_name(g_mmu.pte_attrs(e)) << " (want " << cache_attr_name(want)
                      << ")";
        ++bad;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PteVerbs, testing::Values(PteAccess::Attrs, PteAccess::Flags),
                         [](const testing::TestParamInfo<PteAccess>& info) {
                           return std::string(info.param == PteAccess::Flags ? "PteFlags" : "PteAttrs");
                         });

// ---- set_memory_type through the walk ----

constexpr uint64_t kGiB = uint64_t{1} << 30;
// 3 pages below a 1 GiB boundary of the kernel's scratch area: crosses L1,
// L2 and L3 tables.
constexpr VirtAddr kBase{PVK_SCRATCH_BASE + kGiB - 3 * kPageSize};
constexpr uint64_t kPages = 600;
constexpr Pfn kLeafPfn{0x40000};

class SetMemoryType : public WalkTest {
 protected:
  void SetUp() override {
    WalkTest::SetUp();
    set_kernel_root(root_);
    ASSERT_EQ(error_of(map(kBase, kPages, FrameSource{nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
    fake().clear_events();
  }
  void TearDown() override {
    EXPECT_EQ(error_of(unmap(kBase, kPages)), Errno::Ok);
    set_kernel_root(Pfn{});
    WalkTest::TearDown();
  }
  // Pages [first, first + n) hold KernelRw and exactly `type`'s bits.
  void expect_type(uint64_t first, uint64_t n, CacheAttr type) {
    unsigned bad = 0;
    for (uint64_t i = first; i < first + n && bad < 5; ++i) {
      auto e = lookup(kBase + i * kPageSize);
      if (e.is_error()) {
        ADD_FAILURE() << "page " << i << ": no leaf";
        ++bad;
        continue;
      }
      const Pte v = e.value();
      if ((v.raw & pte_bit::FlagMask) != (pte_flags::KernelRw.bits | expected_bits("pvk", type)) ||
          g_mmu.pte_attrs(v) != type || g_mmu.pte_pfn(v) != kLeafPfn + i) {
        ADD_FAILURE() << "page " << i << ": leaf 0x" << std::hex << v.raw << ", want type " << cache_attr_name(type);
        ++bad;
      }
    }
  }
};

TEST_P(SetMemoryType, WcThenWbChangesOnlyTheCacheBitsOfTheRange) {
  ASSERT_EQ(error_of(set_memory_wc(kBase + 2 * kPageSize, 513)), Errno::Ok);
  expect_type(0, 2, CacheAttr::WriteBack);
  expect_type(2, 513, CacheAttr::WriteCombining);
  expect_type(515, kPages - 515, CacheAttr::WriteBack);
  // The old translations are invalidated: more than the section's
  // single-page limit, so one full flush.
  EXPECT_GE(fake().count(Ev::FlushAll), 1u);
  ASSERT_EQ(error_of(set_memory_wb(kBase, kPages)), Errno::Ok);
  expect_type(0, kPages, CacheAttr::WriteBack);
}

TEST_P(SetMemoryType, EveryTypeAndBack) {
  for (CacheAttr a : kEveryCacheAttr) {
    SCOPED_TRACE(cache_attr_name(a));
    ASSERT_EQ(error_of(set_memory_type(kBase + kPageSize, 4, a)), Errno::Ok);
    expect_type(0, 1, CacheAttr::WriteBack);
    expect_type(1, 4, a);
    expect_type(5, 1, CacheAttr::WriteBack);
    // One type straight to another: no bit of the old one stays.
    for (CacheAttr b : kEveryCacheAttr) {
      ASSERT_EQ(error_of(set_memory_type(kBase + kPageSize, 4, b)), Errno::Ok);
      expect_type(1, 4, b);
      ASSERT_EQ(error_of(set_memory_type(kBase + kPageSize, 4, a)), Errno::Ok);
    }
    ASSERT_EQ(error_of(set_memory_wb(kBase + kPageSize, 4)), Errno::Ok);
    expect_type(0, 6, CacheAttr::WriteBack);
  }
  // Few pages: invalidated one by one.
  EXPECT_GE(fake().count(Ev::FlushOne), 4u);
}

TEST_P(SetMemoryType, SkipsPagesWithoutALeaf) {
  ASSERT_EQ(error_of(unmap(kBase + 10 * kPageSize, 5)), Errno::Ok);
  ASSERT_EQ(error_of(set_memory_uc(kBase, 20)), Errno::Ok);
  expect_type(0, 10, CacheAttr::UncachedMinus);
  for (uint64_t i = 10; i < 15; ++i) EXPECT_EQ(error_of(lookup(kBase + i * kPageSize)), Errno::ENOENT) << i;
  expect_type(15, 5, CacheAttr::UncachedMinus);
  ASSERT_EQ(error_of(set_memory_wb(kBase, 20)), Errno::Ok);
  expect_type(0, 10, CacheAttr::WriteBack);
  expect_type(15, 5, CacheAttr::WriteBack);
}

TEST_P(SetMemoryType, RefusesBadRanges) {
  EXPECT_EQ(error_of(set_memory_wc(kBase + 8, 1)), Errno::EINVAL) << "misaligned";
  EXPECT_EQ(error_of(set_memory_wc(kBase, 0)), Errno::EINVAL) << "empty";
  EXPECT_EQ(error_of(set_memory_wc(VirtAddr{0x400000}, 1)), Errno::EINVAL) << "user half";
  EXPECT_EQ(error_of(set_memory_wc(VirtAddr{~uint64_t{0} - kPageSize + 1}, 2)), Errno::EINVAL) << "wraps";
  EXPECT_EQ(fake().count(Ev::Store), 0u) << "a refused range changes nothing";
  expect_type(0, kPages, CacheAttr::WriteBack);
}

INSTANTIATE_TEST_SUITE_P(Modes, SetMemoryType, testing::ValuesIn(kAllWalkModes), walk_mode_name);

}  // namespace
}  // namespace pvk::test
