// Per-boot counters every MMU backend fills. Records carry them so a time
// is always reported next to the events that explain it.
#pragma once
#include <stdint.h>

namespace pvk {

// The fields are the PVK_MMU_COUNTER lines of base/counters.inc.
struct MmuCounters {
#define PVK_MMU_COUNTER(name) uint64_t name = 0;
#include "base/counters.inc"
};

extern MmuCounters g_mmu_counters;

// Emits every counter as members of the record being built, so records
// and the host parser agree on one set of names.
class Record;
void add_counters(Record& r, const MmuCounters& c);
// The difference of two snapshots (what an operation cost).
MmuCounters operator-(const MmuCounters& a, const MmuCounters& b);

}  // namespace pvk
