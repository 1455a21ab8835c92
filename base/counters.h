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

// The PVK_CPU_COUNTER lines: transitions into and out of the kernel, IPIs,
// and the kernel's rep-string clearing and copying (base/counters.inc says
// who counts each). Virtual time prices each of them at one instruction (a
// rep string at one per byte); the host's cost model re-prices them.
struct CpuCounters {
#define PVK_CPU_COUNTER(name) uint64_t name = 0;
#define PVK_LOCK_COUNTER(cls)  // per-CPU rows of their own (base/lib/lock_stats.h)
#include "base/counters.inc"
};

extern CpuCounters g_cpu_counters;

// Adds to a counter. Several CPUs count at once (page faults run without the
// kernel lock, each CPU in its own lazy-MMU section), so the add is atomic:
// a plain ++ from two CPUs loses one of the two. Relaxed: a counter orders
// nothing, and readers take snapshots that may be a few events behind.
inline void count_event(uint64_t& counter, uint64_t n = 1) { __atomic_fetch_add(&counter, n, __ATOMIC_RELAXED); }

// Emits every counter as members of the record being built, so records
// and the host parser agree on one set of names.
class Record;
void add_counters(Record& r, const MmuCounters& c);
// The difference of two snapshots (what an operation cost).
MmuCounters operator-(const MmuCounters& a, const MmuCounters& b);

}  // namespace pvk
