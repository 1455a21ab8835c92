// batched: inside a lazy-MMU section L1 updates and TLB flushes queue up and
// leave in one mmu_update — or one multicall with the mmuext ops — when the
// section ends, the queue holds batch= entries, or something must see the
// tables (an upper-level store, a root switch, a table release).
#include "pvops/backends.h"
#include "pvops/ops_builder.h"
#include "pvops/xen_policy.h"

namespace pvk {

MmuOps make_batched_ops(PteAccess access, unsigned batch) {
  using Policy = xen_pv::XenPolicy<xen_pv::QueuedL1Writer>;
  static_assert(MmuPolicy<Policy>);
  xen_pv::configure({"batched", batch, /*defer_in_lazy=*/true});
  MmuOps ops = make_mmu_ops<Policy>("batched", access);
  xen_pv::install_common(ops);
  return ops;
}

}  // namespace pvk
