// wrpt: writable page tables. L1 entries are written with plain stores into
// their read-only page; each store faults into Xen, which checks and emulates
// it (VMASST_TYPE_writable_pagetables). Upper levels still go by hypercall.
// A store Xen refuses comes back as a page fault on the store itself, caught
// through the exception table and reported like a refused hypercall.
#include "base/arch/probe.h"
#include "hypercalls/hypercall.h"
#include "pvops/backends/registry.h"
#include "pvops/backends/xen_ops.h"

namespace pvk::backends {
namespace {

struct TrappedL1Writer {
  static ErrorOr<void> store(Pte* slot, Pte v) {
    count_event(g_mmu_counters.ptwr_traps);
    if (probe_write_u64(&slot->raw, v.raw)) return {};
    return xen_pv::report_rc("ptwr store", -22, xen::machine_address(slot), v.raw);
  }
  static ErrorOr<void> commit(Pte* slot, Pte v) { return store(slot, v); }
};

using Policy = xen_pv::XenPolicy<TrappedL1Writer>;
static_assert(MmuPolicy<Policy>);

}  // namespace

ErrorOr<MmuOps, BackendRefusal> wrpt_ops(const BackendSetup& setup) {
  if (auto r = xen_pv::enable_writable_pagetables(); r.is_error())
    return BackendRefusal{"Xen refused writable page tables", r.error()};
  xen_pv::init_common(1, xen_pv::Deferral::Immediate, setup.shootdown);
  return xen_pv::xen_ops<Policy>(setup.pte);
}

}  // namespace pvk::backends
