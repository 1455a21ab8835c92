#include "guest/smp/percpu.h"

#include "base/lib/error_or.h"

namespace pvk {

// Static (zeroed) storage: entry 0 must be usable before the frame
// allocator exists, and the table is small (kMaxCpus entries).
PerCpu pvk_percpus[smp::kMaxCpus];

namespace smp {
namespace {

CpuCounts g_counts;

}  // namespace

uint64_t (*g_read_gs_base)() = nullptr;

PerCpu* check_this_cpu() {
  // Until the boot CPU's PerCpu is filled in (the first lines of either
  // entry) no GS base is set up to check; a trap that early is a crash.
  if (!pvk_percpus[0].self) return nullptr;
  if (g_read_gs_base) {
    const uint64_t base = g_read_gs_base();
    if (!is_percpu(reinterpret_cast<void*>(base)))
      panic("kernel entered with GS base 0x%lx, not a PerCpu (a path into the kernel missed swapgs)", base);
    PerCpu* p = this_cpu();
    if (reinterpret_cast<uint64_t>(p) != base || p->self != p)
      panic("GS base 0x%lx holds self %p: PerCpu corrupt", base, static_cast<void*>(p));
    ++p->entry_checks;
    return p;
  }
  PerCpu* p = this_cpu();
  if (!is_percpu(p) || p->self != p) panic("kernel entered with gs:0 = %p, not a PerCpu", static_cast<void*>(p));
  ++p->entry_checks;
  return p;
}

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
