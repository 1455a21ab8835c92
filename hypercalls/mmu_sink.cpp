#include "hypercalls/mmu_sink.h"

#include "base/lib/fault_inject.h"
#include "hypercalls/hypercall.h"

namespace pvk::xen {
namespace {

SinkResult send(mmu_update_t* u, unsigned nu, mmuext_op_t* e, unsigned ne) {
  SinkResult r;
  // fail=: Xen refusing the send's first request, as it would a bad one
  // (nothing after it is applied).
  if (nu && fault_inject_fails(FaultSite::MmuUpdate)) {
    r.update_rc = -static_cast<long>(Errno::ENOMEM);
    return r;
  }
  if (ne && fault_inject_fails(FaultSite::MmuextOp)) {
    if (nu) r.update_rc = mmu_update(u, nu, &r.updates_done);  // the updates before it still happen
    if (r.update_rc >= 0) r.ext_rc = -static_cast<long>(Errno::ENOMEM);
    return r;
  }
  if (nu && ne) {
    unsigned udone = 0, edone = 0;
    multicall_entry_t calls[2] = {
        {__HYPERVISOR_mmu_update, 0, {arg(u), nu, arg(&udone), DOMID_SELF, 0, 0}},
        {__HYPERVISOR_mmuext_op, 0, {arg(e), ne, arg(&edone), DOMID_SELF, 0, 0}},
    };
    count_event(g_mmu_counters.mmu_update_entries, nu);
    count_event(g_mmu_counters.mmuext_ops, ne);
    const long rc = multicall(calls, 2);
    if (rc < 0) {
      r.update_rc = rc;
      return r;
    }
    r.update_rc = static_cast<long>(calls[0].result);
    r.updates_done = udone;
    r.ext_rc = static_cast<long>(calls[1].result);
    r.ext_done = edone;
  } else if (nu) {
    r.update_rc = mmu_update(u, nu, &r.updates_done);
  } else {
    r.ext_rc = mmuext_op(e, ne, &r.ext_done);
  }
  return r;
}

}  // namespace

MmuSink hypercall_sink() { return MmuSink{&send}; }

}  // namespace pvk::xen
