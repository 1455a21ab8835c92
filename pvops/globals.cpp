#include "base/counters.h"
#include "pvops/call/pvop.h"
#include "pvops/backends/unhook_tables.h"

namespace pvk {

#if !PVK_BUILTIN_NATIVE
MmuOps g_mmu{};  // the compiled-in native image has no table (pvops/call/pvop.h)
#endif
PteAccess g_pte_access = PteAccess::Attrs;
MmuCounters g_mmu_counters{};
unsigned g_unhooked_tables = 0;

const char* unhook_fallback_name(UnhookFallback why) {
  switch (why) {
    case UnhookFallback::Kernel: return "it maps kernel memory";
    case UnhookFallback::Shared: return "ptshare shares it: several L2 entries reference it";
    case UnhookFallback::Refused: return "Xen refused a writable alias: the frame keeps a page-table type reference";
    case UnhookFallback::Count: break;
  }
  return "?";
}

}  // namespace pvk
