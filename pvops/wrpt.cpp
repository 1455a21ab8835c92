// wrpt: writable page tables. L1 entries are written with plain stores into
// their read-only page; each store faults into Xen, which checks and emulates
// it (VMASST_TYPE_writable_pagetables). Upper levels still go by hypercall.
// A store Xen refuses comes back as a page fault on the store itself, caught
// through the exception table and reported like a refused hypercall.
#include "base/arch/probe.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "hypercalls/hypercall.h"
#include "pvops/backends.h"
#include "pvops/ops_builder.h"
#include "pvops/xen_policy.h"

namespace pvk {
namespace {

struct TrappedL1Writer {
  static ErrorOr<void> store(Pte* slot, Pte v) {
    count_event(g_mmu_counters.ptwr_traps);
    if (probe_write_u64(&slot->raw, v.raw)) return {};
    return xen_pv::report_rc("ptwr store", -22, xen::machine_address(slot), v.raw);
  }
  static ErrorOr<void> commit(Pte* slot, Pte v) { return store(slot, v); }
};

}  // namespace

ErrorOr<MmuOps> try_make_wrpt_ops(PteAccess access) {
  using Policy = xen_pv::XenPolicy<TrappedL1Writer>;
  static_assert(MmuPolicy<Policy>);
  if (long rc = xen::vm_assist(VMASST_CMD_enable, VMASST_TYPE_writable_pagetables); rc < 0)
    return xen_pv::report_rc("vm_assist(writable_pagetables)", rc, VMASST_CMD_enable, VMASST_TYPE_writable_pagetables);
  xen_pv::configure({"wrpt", 1, /*defer_in_lazy=*/false});
  MmuOps ops = make_mmu_ops<Policy>("wrpt", access);
  xen_pv::install_common(ops);
  return ops;
}

}  // namespace pvk
