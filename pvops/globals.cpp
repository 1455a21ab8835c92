#include "base/counters.h"
#include "pvops/mmu_ops.h"

namespace pvk {

MmuOps g_mmu{};
Pfn g_current_root{};
MmuCounters g_mmu_counters{};

}  // namespace pvk
