#include "arch/smp/percpu.h"

namespace pvk {

// Static (zeroed) storage: entry 0 must be usable before the frame
// allocator exists, and the table is small (kMaxCpus entries).
PerCpu pvk_percpus[smp::kMaxCpus];

namespace smp {
namespace {

CpuCounts g_counts;

}  // namespace

// Ids come from bring-up, which hands out none at or past kMaxCpus; the
// clamp only keeps a bad one inside the table.
PerCpu& cpu(unsigned id) { return pvk_percpus[id < kMaxCpus ? id : 0]; }

CpuCounts& counts() { return g_counts; }

bool CpuCounts::mark_online(unsigned id) {
  if (id >= kMaxCpus || id >= found_) return false;
  const uint32_t bit = uint32_t{1} << id;
  if (online_mask_ & bit) return false;
  online_mask_ |= bit;
  return true;
}

unsigned CpuCounts::online() const { return static_cast<unsigned>(__builtin_popcount(online_mask_)); }

}  // namespace smp
}  // namespace pvk
