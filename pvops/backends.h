// Constructors of each backend's pvops table (one file per backend).
#pragma once
#include "base/lib/error_or.h"
#include "pvops/mmu_ops.h"

namespace pvk {

MmuOps make_native_ops(PteAccess access);
MmuOps make_batched_ops(PteAccess access, unsigned batch);
MmuOps make_direct_ops(PteAccess access);
// Also turns on Xen's writable-pagetable assist; fails if Xen refuses.
ErrorOr<MmuOps> try_make_wrpt_ops(PteAccess access);

}  // namespace pvk
