// pte=flags and pte=attrs differ only in who reads a PTE's flags: through
// the pvops pte_flags, or as an inline mask. One workload over every mm path
// that reads flags (faults on the zero page and COW, fork's copy and
// write-protect, mprotect's modify loop, munmap, teardown) must leave the
// very same tables in both modes, and only pte=flags may call pte_flags.
#include "address_space_fixture.h"

#include <map>

namespace pvk {
namespace test {
namespace {

class PteAccessEquivalence : public AddressSpaceTest {
 protected:
  WalkMode mode() const override { return override_ ? *override_ : GetParam(); }

  // Every user leaf of the spaces the workload leaves alive, by space and
  // address; and how often pte_flags was called meanwhile.
  struct Outcome {
    std::map<std::pair<unsigned, uint64_t>, uint64_t> leaves;
    uint64_t pte_flags_calls = 0;
  };

  Outcome run_workload() {
    Outcome out;
    AddressSpace* parent = create();
    const uint64_t big = mmap(parent, pg(700), kRw);  // spans two tables
    const uint64_t shared = mmap(parent, pg(40), kRw, vm::Shared);
    for (unsigned i = 0; i < 700; i += 3) fill(parent, big + pg(i), uint8_t(i));
    for (unsigned i = 0; i < 700; i += 7) (void)read(parent, big + pg(i + 1 < 700 ? i + 1 : i));  // zero page
    for (unsigned i = 0; i < 40; i += 2) fill(parent, shared + pg(i), 0x5a);
    AddressSpace* child = fork(parent);
    for (unsigned i = 0; i < 700; i += 11) fill(child, big + pg(i), 0x77);  // COW breaks, zero-page COW
    EXPECT_EQ(error_of(parent->mprotect(VirtAddr{big + pg(100)}, pg(500), kRo)), Errno::Ok);
    EXPECT_EQ(error_of(child->munmap(VirtAddr{big + pg(600)}, pg(50))), Errno::Ok);
    AddressSpace* grandchild = fork(child);
    EXPECT_EQ(error_of(parent->mprotect(VirtAddr{big + pg(100)}, pg(300), kRw)), Errno::Ok);
    for (unsigned i = 100; i < 400; i += 5) fill(parent, big + pg(i), 0x33);  // write faults after mprotect
    fill(grandchild, shared + pg(1), 0x11);
    destroy(child);
    unsigned id = 0;
    for (AddressSpace* as : {parent, grandchild}) {
      for (uint64_t va : {big, shared})
        for (unsigned i = 0; i < (va == big ? 700u : 40u); ++i) {
          const Pte e = entry(as, va + pg(i));
          if (!e.none()) out.leaves[{id, va - big + pg(i)}] = e.raw;
        }
      ++id;
    }
    out.pte_flags_calls = fake().pte_flags_calls();
    return out;
  }

  std::optional<WalkMode> override_;
};

TEST_P(PteAccessEquivalence, BothModesLeaveTheSameTables) {
  const WalkMode first = GetParam();
  const Outcome a = run_workload();
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(a.leaves.size(), 500u);

  // The same workload from scratch in the other mode.
  TearDown();
  override_ = WalkMode{first.access == PteAccess::Flags ? PteAccess::Attrs : PteAccess::Flags, first.defer};
  SetUp();
  const Outcome b = run_workload();
  ASSERT_FALSE(HasFailure());

  EXPECT_EQ(a.leaves, b.leaves) << "pte=flags and pte=attrs built different tables";
  const Outcome& flags = first.access == PteAccess::Flags ? a : b;
  const Outcome& attrs = first.access == PteAccess::Flags ? b : a;
  EXPECT_GT(flags.pte_flags_calls, 1000u) << "pte=flags: the flag reads go through pte_flags";
  EXPECT_EQ(attrs.pte_flags_calls, 0u) << "pte=attrs: flags are read inline";
}

INSTANTIATE_TEST_SUITE_P(Modes, PteAccessEquivalence, testing::ValuesIn(kAllWalkModes), walk_mode_name);

}  // namespace
}  // namespace test
}  // namespace pvk
