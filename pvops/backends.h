// Constructors of each backend's pvops table, and boot-time selection.
#pragma once
#include "pvops/mmu_ops.h"

namespace pvk {

MmuOps make_native_ops(PteAccess access);

}  // namespace pvk
