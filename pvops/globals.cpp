#include "base/counters.h"
#include "pvops/pvop.h"

namespace pvk {

#if !PVK_BUILTIN_NATIVE
MmuOps g_mmu{};  // the compiled-in native image has no table (pvops/pvop.h)
#endif
Pfn g_current_root{};
PteAccess g_pte_access = PteAccess::Attrs;
MmuCounters g_mmu_counters{};

}  // namespace pvk
