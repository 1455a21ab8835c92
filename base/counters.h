// Per-boot counters every MMU backend fills. Records carry them so a time
// is always reported next to the events that explain it.
#pragma once
#include <stdint.h>

namespace pvk {

struct MmuCounters {
  uint64_t pte_writes = 0;          // entry stores at any level, by whatever path
  uint64_t lazy_sections = 0;       // enter_lazy_mmu calls
  uint64_t tlb_flush_one = 0;       // single-page invalidations
  uint64_t tlb_flush_all = 0;       // full flushes
  uint64_t root_loads = 0;          // load_root (CR3 / NEW_BASEPTR)
  uint64_t pt_pages_alloc = 0;      // frames turned into page tables
  uint64_t pt_pages_release = 0;    // page tables turned back into frames
  uint64_t hypercalls = 0;          // every hypercall, MMU or not
  uint64_t multicalls = 0;          // multicall hypercalls
  uint64_t mmu_update_entries = 0;  // mmu_update requests carried
  uint64_t mmuext_ops = 0;          // mmuext_op requests carried
  uint64_t ptwr_traps = 0;          // L1 writes Xen trapped and emulated (wrpt)
};

extern MmuCounters g_mmu_counters;

// Emits every counter as members of the record being built, so records
// and the host parser agree on one set of names.
class Record;
void add_counters(Record& r, const MmuCounters& c);
// The difference of two snapshots (what an operation cost).
MmuCounters operator-(const MmuCounters& a, const MmuCounters& b);

}  // namespace pvk
