#include "base/counters.h"

#include "base/console/record.h"

namespace pvk {

// The one list of counter names; records and the host parser share it.
#define PVK_MMU_COUNTERS(X)                                                                       \
  X(pte_writes) X(lazy_sections) X(tlb_flush_one) X(tlb_flush_all) X(root_loads) X(pt_pages_alloc) \
  X(pt_pages_release) X(hypercalls) X(multicalls) X(mmu_update_entries) X(mmuext_ops) X(ptwr_traps)

void add_counters(Record& r, const MmuCounters& c) {
#define PVK_EMIT(name) r.u64(#name, c.name);
  PVK_MMU_COUNTERS(PVK_EMIT)
#undef PVK_EMIT
}

MmuCounters operator-(const MmuCounters& a, const MmuCounters& b) {
  MmuCounters d;
#define PVK_SUB(name) d.name = a.name - b.name;
  PVK_MMU_COUNTERS(PVK_SUB)
#undef PVK_SUB
  return d;
}

}  // namespace pvk
