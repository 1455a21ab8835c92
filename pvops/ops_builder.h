// Builds a backend's pvops table from its policy: the per-entry verbs wrap
// the policy's hooks, the range operations are the shared walk instantiated
// with the policy, once per pte= mode. A backend then fills in only what is
// truly its own (lazy-MMU, TLB, root loading, cache attributes).
#pragma once
#include "pvops/walk/range_ops.h"
#include "pvops/mmu_ops.h"

namespace pvk {

template <MmuPolicy P>
constexpr MmuOps make_mmu_ops(const char* name, PteAccess access) {
  MmuOps ops{};
  ops.name = name;
  ops.set_pte = [](Pte* slot, Pte v) { return P::store(slot, v, Level::L1); };
  ops.set_pmd = [](Pte* slot, Pte v) { return P::store(slot, v, Level::L2); };
  ops.set_pud = [](Pte* slot, Pte v) { return P::store(slot, v, Level::L3); };
  ops.set_p4d = [](Pte* slot, Pte v) { return P::store(slot, v, Level::L4); };
  ops.ptep_modify_prot_start = &P::modify_prot_start;
  ops.ptep_modify_prot_commit = &P::modify_prot_commit;
  ops.make_pte = &P::make;
  ops.pte_pfn = &P::pfn_of;
  ops.pte_val = [](Pte e) { return (raw(P::pfn_of(e)) << kPageShift) | (e.raw & pte_bit::FlagMask); };
  ops.pte_flags = [](Pte e) { return PteFlags{e.raw & pte_bit::FlagMask}; };
  ops.inline_forms = InlineForms::FlagsMask;
  ops.alloc_pt_page = &P::prepare_table;
  ops.release_pt_page = &P::retire_table;
  ops.range = access == PteAccess::Flags ? PageWalk<P, PteAccess::Flags>::range_ops()
                                         : PageWalk<P, PteAccess::Attrs>::range_ops();
  return ops;
}

}  // namespace pvk
