// The table every Xen PV backend starts from: the walk and the per-entry
// verbs over the backend's policy (how an L1 entry reaches the table,
// xen_policy.h), and the verbs the Xen backends share (xen_common.h). A
// constexpr function, so a backend's table is one
// constant initializer: a backend that adds work around a shared verb names
// its own verb for that slot, which calls the shared one by name.
#pragma once
#include "pvops/backends/xen_common.h"
#include "pvops/backends/xen_policy.h"
#include "pvops/ops_builder.h"

namespace pvk::xen_pv {

template <MmuPolicy P>
constexpr MmuOps xen_ops(PteAccess access) {
  MmuOps ops = make_mmu_ops<P>(nullptr, access);  // the name comes from the backend's row
  // PV guests run on Xen's own PAT (kXenPat, pvops/pte_attrs.h): both
  // directions use that layout.
  ops.pte_attrs = &pte_attrs;
  ops.make_pte_attrs = &make_pte_attrs;
  ops.enter_lazy_mmu = &enter_lazy;
  ops.flush_lazy_mmu = &flush_lazy;
  ops.leave_lazy_mmu = &leave_lazy;
  ops.flush_tlb_one = &flush_tlb_one;
  ops.flush_tlb_all = &flush_tlb_all;
  ops.flush_tlb_multi = &flush_tlb_multi;
  ops.load_root = &load_root;
  return ops;
}

}  // namespace pvk::xen_pv
