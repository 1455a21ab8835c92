// PTE encoding and decoding (pvops/pte.h, pvops/pte_attrs.h) and the
// per-entry verbs make_mmu_ops builds from a policy (pvops/ops_builder.h).
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>

#include <vector>

#include "base/frames/physmap.h"
#include "mmu_fixture.h"
#include "pvops/pte.h"
#include "pvops/pte_attrs.h"

namespace pvk::test {
namespace {

constexpr Level kLevels[] = {Level::L1, Level::L2, Level::L3, Level::L4};

// A canonical address from its four table indices and a byte offset.
VirtAddr compose(unsigned i4, unsigned i3, unsigned i2, unsigned i1, uint64_t offset) {
  uint64_t v = (uint64_t{i4} << 39) | (uint64_t{i3} << 30) | (uint64_t{i2} << 21) | (uint64_t{i1} << 12) | offset;
  if (v & (uint64_t{1} << 47)) v |= 0xffff000000000000ull;  // sign-extend into the kernel half
  return VirtAddr{v};
}

TEST(PteIndex, IndexAtExtractsEachLevel) {
  const unsigned samples[] = {0, 1, 2, 255, 256, 300, 510, 511};
  for (unsigned i4 : samples)
    for (unsigned i3 : samples)
      for (unsigned i2 : {0u, 7u, 511u})
        for (unsigned i1 : {0u, 1u, 100u, 511u}) {
          const VirtAddr va = compose(i4, i3, i2, i1, 0xabc);
          SCOPED_TRACE(testing::Message() << std::hex << raw(va));
          EXPECT_EQ(index_at(va, Level::L4), i4);
          EXPECT_EQ(index_at(va, Level::L3), i3);
          EXPECT_EQ(index_at(va, Level::L2), i2);
          EXPECT_EQ(index_at(va, Level::L1), i1);
        }
}

TEST(PteIndex, IndexIgnoresPageOffsetAndSignExtension) {
  const VirtAddr a = compose(300, 4, 5, 6, 0);
  const VirtAddr b = compose(300, 4, 5, 6, kPageSize - 1);
  const VirtAddr unextended{raw(a) & 0x0000ffffffffffffull};
  for (Level l : kLevels) {
    EXPECT_EQ(index_at(a, l), index_at(b, l));
    EXPECT_EQ(index_at(a, l), index_at(unextended, l));
  }
}

TEST(PteIndex, EntrySpanMatchesTheArchitecture) {
  EXPECT_EQ(entry_span(Level::L1), uint64_t{4096});
  EXPECT_EQ(entry_span(Level::L2), uint64_t{2} << 20);
  EXPECT_EQ(entry_span(Level::L3), uint64_t{1} << 30);
  EXPECT_EQ(entry_span(Level::L4), uint64_t{512} << 30);
  for (Level l : {Level::L2, Level::L3, Level::L4}) {
    EXPECT_EQ(entry_span(l), entry_span(below(l)) * kEntriesPerTable);
    EXPECT_EQ(static_cast<unsigned>(below(l)), static_cast<unsigned>(l) - 1);
  }
}

TEST(PteIndex, AddingOneSpanStepsExactlyThatLevel) {
  const VirtAddr va = compose(1, 2, 3, 4, 0);
  for (Level l : kLevels) {
    const VirtAddr next = va + entry_span(l);
    for (Level k : kLevels) {
      if (k == l)
        EXPECT_EQ(index_at(next, k), index_at(va, k) + 1);
      else
        EXPECT_EQ(index_at(next, k), index_at(va, k));
    }
  }
}

TEST(PteFlagsTest, HasWithWithout) {
  const PteFlags none{};
  EXPECT_FALSE(none.has(pte_bit::Present));
  EXPECT_TRUE(none.has(0));  // the empty set is in every set

  const PteFlags rw = none.with(pte_bit::Present).with(pte_bit::Write);
  EXPECT_EQ(rw.bits, pte_bit::Present | pte_bit::Write);
  EXPECT_TRUE(rw.has(pte_bit::Present));
  EXPECT_TRUE(rw.has(pte_bit::Present | pte_bit::Write));
  EXPECT_FALSE(rw.has(pte_bit::Present | pte_bit::User)) << "has() needs every bit asked for";
  EXPECT_FALSE(rw.has(pte_bit::Nx));

  const PteFlags ro = rw.without(pte_bit::Write);
  EXPECT_EQ(ro.bits, pte_bit::Present);
  EXPECT_EQ(rw.bits, pte_bit::Present | pte_bit::Write) << "with/without return copies";
  EXPECT_EQ(ro.without(pte_bit::Write), ro) << "removing an absent bit changes nothing";
  EXPECT_EQ(ro.with(pte_bit::Present), ro);
  EXPECT_NE(ro, rw);

  const PteFlags nx = rw.with(pte_bit::Nx);
  EXPECT_TRUE(nx.has(pte_bit::Nx));
  EXPECT_EQ(nx.without(pte_bit::Nx | pte_bit::Write), ro);
}

TEST(PteFlagsTest, CommonSets) {
  EXPECT_TRUE(pte_flags::KernelRw.has(pte_bit::Present | pte_bit::Write | pte_bit::Nx));
  EXPECT_FALSE(pte_flags::KernelRw.has(pte_bit::User));
  EXPECT_FALSE(pte_flags::KernelRo.has(pte_bit::Write));
  EXPECT_FALSE(pte_flags::KernelRx.has(pte_bit::Nx));
  EXPECT_TRUE(pte_flags::Table.has(pte_bit::Present | pte_bit::Write | pte_bit::User));
  for (PteFlags f : {pte_flags::KernelRw, pte_flags::KernelRo, pte_flags::KernelRx, pte_flags::Table})
    EXPECT_EQ(f.bits & pte_bit::FrameMask, 0u) << "flag sets must not touch the frame field";
}

TEST(PteFlagsTest, MasksPartitionTheEntry) {
  EXPECT_EQ(pte_bit::FrameMask & pte_bit::FlagMask, 0u);
  EXPECT_EQ(pte_bit::FrameMask | pte_bit::FlagMask, ~uint64_t{0});
  // Frame field: bits 12..51.
  EXPECT_EQ(pte_bit::FrameMask, ((uint64_t{1} << 52) - 1) & ~(kPageSize - 1));
  for (uint64_t b : {pte_bit::Present, pte_bit::Write, pte_bit::User, pte_bit::Pwt, pte_bit::Pcd, pte_bit::Accessed,
                     pte_bit::Dirty, pte_bit::Pat, pte_bit::Global, pte_bit::Soft0, pte_bit::Nx})
    EXPECT_EQ(b & pte_bit::FlagMask, b);
}

TEST(PteTest, PresentAndNone) {
  EXPECT_TRUE(Pte{}.none());
  EXPECT_FALSE(Pte{}.present());
  const Pte swapped{0x1234000};  // not present but not empty (a software entry)
  EXPECT_FALSE(swapped.present());
  EXPECT_FALSE(swapped.none());
  EXPECT_TRUE(Pte{pte_bit::Present}.present());
}

// ---- cache attributes ----

// A leaf selecting PAT slot `slot` through PAT (bit 2), PCD (bit 1), PWT (bit 0).
Pte leaf_for_slot(unsigned slot, uint64_t frame_bits = 0) {
  return Pte{frame_bits | pte_bit::Present | ((slot & 4) ? pte_bit::Pat : 0) | ((slot & 2) ? pte_bit::Pcd : 0) |
             ((slot & 1) ? pte_bit::Pwt : 0)};
}

CacheAttr attr_of(uint8_t pat_type) {
  switch (pat_type) {
    case 6: return CacheAttr::WriteBack;
    case 4: return CacheAttr::WriteThrough;
    case 1: return CacheAttr::WriteCombining;
    case 7: return CacheAttr::UncachedMinus;
    case 5: return CacheAttr::WriteProtect;
    default: return CacheAttr::Uncached;  // UC (and the reserved 2, 3)
  }
}

TEST(CacheAttr, PowerOnPatIsTheArchitecturalResetValue) {
  // Intel SDM: IA32_PAT resets to 0x0007040600070406 (WB WT UC- UC, twice).
  EXPECT_EQ(pat_value(kPowerOnPat), 0x0007040600070406ull);
}

TEST(CacheAttr, PowerOnPatAllEightSlots) {
  const uint64_t pat = pat_value(kPowerOnPat);
  const CacheAttr expected[8] = {CacheAttr::WriteBack,     CacheAttr::WriteThrough, CacheAttr::UncachedMinus,
                                 CacheAttr::Uncached,      CacheAttr::WriteBack,    CacheAttr::WriteThrough,
                                 CacheAttr::UncachedMinus, CacheAttr::Uncached};
  for (unsigned slot = 0; slot < 8; ++slot) {
    SCOPED_TRACE(slot);
    EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(slot)), expected[slot]);
    // Frame bits, A/D, NX and the like do not take part.
    EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(slot, pte_bit::FrameMask | pte_bit::Nx | pte_bit::Accessed |
                                                          pte_bit::Dirty | pte_bit::Global | pte_bit::Write)),
              expected[slot]);
  }
}

TEST(CacheAttr, XenPatLayout) {
  // Xen programs IA32_PAT with 0x0000050100070406 (XEN_MSR_PAT):
  // WB WT UC- UC | WC WP UC UC. PV guests must decode against it.
  const PatType xen[8] = {PatType::WB, PatType::WT, PatType::UCMinus, PatType::UC,
                          PatType::WC, PatType::WP, PatType::UC,      PatType::UC};
  const uint64_t pat = pat_value(xen);
  EXPECT_EQ(pat, 0x0000050100070406ull);
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(0)), CacheAttr::WriteBack);
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(1)), CacheAttr::WriteThrough);
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(2)), CacheAttr::UncachedMinus);
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(3)), CacheAttr::Uncached);
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(4)), CacheAttr::WriteCombining) << "PAT bit alone selects WC under Xen";
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(5)), CacheAttr::WriteProtect) << "PAT|PWT is WP under Xen";
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(6)), CacheAttr::Uncached);
  EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(7)), CacheAttr::Uncached);
}

TEST(CacheAttr, EveryTypeInEverySlot) {
  // Each memory type placed in each slot, the rest filled with a different
  // type, must come back from exactly that slot.
  const PatType types[] = {PatType::UC, PatType::WC, PatType::WT, PatType::WP, PatType::WB, PatType::UCMinus};
  for (PatType t : types) {
    for (unsigned slot = 0; slot < 8; ++slot) {
      const PatType filler = t == PatType::WC ? PatType::WB : PatType::WC;
      PatType slots[8];
      for (auto& s : slots) s = filler;
      slots[slot] = t;
      const uint64_t pat = pat_value(slots);
      for (unsigned probe = 0; probe < 8; ++probe)
        EXPECT_EQ(cache_attr_for(pat, leaf_for_slot(probe)), attr_of(uint8_t(probe == slot ? t : filler)))
            << "type " << int(t) << " in slot " << slot << ", probing slot " << probe;
    }
  }
}

// ---- the per-entry verbs of a make_mmu_ops table ----

class OpsBuilderTest : public FakeMmuTest, public testing::WithParamInterface<PteAccess> {
 protected:
  void SetUp() override { start({64, GetParam(), false}); }
};

TEST_P(OpsBuilderTest, MakePteAndBackGoThroughThePolicy) {
  for (uint64_t p : {uint64_t{1}, uint64_t{0x1234}, uint64_t{0xfffff}}) {
    const PteFlags f = pte_flags::KernelRw.with(pte_bit::User | pte_bit::Global);
    const Pte e = g_mmu.make_pte(Pfn{p}, f);
    EXPECT_EQ(entry_frame_field(e), p + kMfnOffset) << "the entry holds the policy's frame number";
    EXPECT_EQ(g_mmu.pte_pfn(e), Pfn{p});
    EXPECT_EQ(g_mmu.pte_flags(e), f);
    EXPECT_EQ(g_mmu.pte_val(e), (p << kPageShift) | f.bits) << "pte_val is pseudo-physical";
  }
}

TEST_P(OpsBuilderTest, SetVerbsStoreAtTheirLevel) {
  // One table of each level, hooked nowhere: the fake only checks the level.
  struct Case {
    ErrorOr<void> (*verb)(Pte*, Pte);
    Level level;
  } cases[] = {{g_mmu.set_pte, Level::L1}, {g_mmu.set_pmd, Level::L2}, {g_mmu.set_pud, Level::L3},
               {g_mmu.set_p4d, Level::L4}};
  for (const Case& c : cases) {
    const Pfn t = frames().must_alloc();
    memset(phys_to_virt(t), 0, kPageSize);
    ASSERT_EQ(error_of(g_mmu.alloc_pt_page(t, c.level)), Errno::Ok);
    fake().clear_events();
    // A leaf value (not present) so the fake does not ask for a hooked table.
    const Pte v{0x5000};
    ASSERT_EQ(error_of(c.verb(&phys_to_virt<Pte>(t)[7], v)), Errno::Ok);
    auto stores = fake().events(Ev::Store);
    ASSERT_EQ(stores.size(), 1u);
    EXPECT_EQ(stores[0].level, c.level);
    EXPECT_EQ(stores[0].table, t);
    EXPECT_EQ(stores[0].index, 7u);
    EXPECT_EQ(phys_to_virt<Pte>(t)[7], v);
    // Leave the table empty so it can be retired cleanly.
    phys_to_virt<Pte>(t)[7] = Pte{};
    ASSERT_EQ(error_of(g_mmu.release_pt_page(t, c.level)), Errno::Ok);
    frames().must_free(t);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, OpsBuilderTest, testing::Values(PteAccess::Attrs, PteAccess::Flags),
                         [](const testing::TestParamInfo<PteAccess>& i) {
                           return std::string(i.param == PteAccess::Flags ? "PteFlags" : "PteAttrs");
                         });

}  // namespace
}  // namespace pvk::test
