// direct: the unbatched reference — every update is its own mmu_update
// hypercall and every TLB flush its own mmuext_op, lazy section or not.
// Same policy as batched; a queue of one that never defers.
#include "pvops/backends.h"
#include "pvops/ops_builder.h"
#include "pvops/xen_policy.h"

namespace pvk {

MmuOps make_direct_ops(PteAccess access) {
  using Policy = xen_pv::XenPolicy<xen_pv::QueuedL1Writer>;
  xen_pv::configure({"direct", 1, /*defer_in_lazy=*/false});
  MmuOps ops = make_mmu_ops<Policy>("direct", access);
  xen_pv::install_common(ops);
  return ops;
}

}  // namespace pvk
