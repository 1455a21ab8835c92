// unhook: the Xen backend that writes whole L1 tables with plain stores after
// taking them out of Xen's hands (unhook_tables.h has the state machine and
// the Xen facts it rests on), for every table an operation announces inside
// a lazy-MMU section. Its verbs and state are shared with auto
// (unhook_policy.h).
#include "pvops/backends/unhook_policy.h"

namespace pvk {
namespace unhook {

ErrorOr<void> flush_lazy() { return UnhookL1Writer::flush(); }

ErrorOr<void> leave_lazy() {
  auto rehooked = Tables::rehook_all();
  auto left = xen_pv::leave_lazy();
  return rehooked.is_error() ? rehooked : left;
}

ErrorOr<void> load_root(Pfn root) {
  TRY(Tables::rehook_all());
  return xen_pv::load_root(root);
}

}  // namespace unhook

namespace backends {

ErrorOr<MmuOps, BackendRefusal> unhook_ops(const BackendSetup& setup) {
  unhook::init(setup, TableMode::Unhook, {});
  return unhook::table_ops(setup.pte);
}

}  // namespace backends
}  // namespace pvk
