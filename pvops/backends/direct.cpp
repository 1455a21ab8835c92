// direct: the unbatched reference — every update is its own mmu_update
// hypercall and every TLB flush its own mmuext_op, lazy section or not.
// batched's policy with a queue of one that never defers.
#include "pvops/backends/registry.h"
#include "pvops/backends/xen_ops.h"

namespace pvk::backends {
namespace {

using Policy = xen_pv::XenPolicy<xen_pv::QueuedL1Writer>;
static_assert(MmuPolicy<Policy>);

}  // namespace

ErrorOr<MmuOps, BackendRefusal> direct_ops(const BackendSetup& setup) {
  xen_pv::init_common(1, xen_pv::Deferral::Immediate, setup.shootdown);
  return xen_pv::xen_ops<Policy>(setup.pte);
}

}  // namespace pvk::backends
