// batched: inside a lazy-MMU section L1 updates and TLB flushes queue up and
// leave in one mmu_update — or one multicall with the mmuext ops — when the
// section ends, the queue holds batch= entries, or something must see the
// tables (an upper-level store, a root switch, a table release).
#include "pvops/backends/registry.h"
#include "pvops/backends/xen_ops.h"

namespace pvk::backends {
namespace {

using Policy = xen_pv::XenPolicy<xen_pv::QueuedL1Writer>;
static_assert(MmuPolicy<Policy>);

}  // namespace

ErrorOr<MmuOps, BackendRefusal> batched_ops(const BackendSetup& setup) {
  xen_pv::init_common(setup.batch, xen_pv::Deferral::InLazySections, setup.shootdown);
  return xen_pv::xen_ops<Policy>(setup.pte);
}

}  // namespace pvk::backends
