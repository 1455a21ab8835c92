// native: plain stores into page tables, invlpg / CR3 for flushes, IPIs for
// other CPUs' TLBs (its verbs: native_ops.h, shared with the compiled-in
// native image).
#include "pvops/backends/native_ops.h"
#include "pvops/backends/registry.h"

namespace pvk::backends {

ErrorOr<MmuOps, BackendRefusal> native_ops(const BackendSetup& setup) {
  // Natively the only way to another CPU's TLB is to ask it (shootdown=ipi).
  init_tlb_shootdown({&native::target_flush_one, &native::target_flush_all});
  return native::ops(setup.pte);
}

}  // namespace pvk::backends
