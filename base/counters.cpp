#include "base/counters.h"

#include "base/console/record.h"

namespace pvk {

CpuCounters g_cpu_counters{};

// The entry stubs count returns to user mode in assembly (a lock inc
// through this pointer: arch/native/syscall_entry.S and
// arch/pv/trap_entry.S), where the C++ name of the member is out of
// reach.
extern "C" uint64_t* const pvk_user_returns_counter = &g_cpu_counters.user_returns;
// And raw_copy_user's rep movsb (arch/user_copy.S), in bytes.
extern "C" uint64_t* const pvk_rep_copy_counter = &g_cpu_counters.rep_copy_bytes;

// The one list of counter names (base/counters.inc); records and the host
// parser share it.
void add_counters(Record& r, const MmuCounters& c) {
#define PVK_MMU_COUNTER(name) r.u64(#name, c.name);
#include "base/counters.inc"
}

MmuCounters operator-(const MmuCounters& a, const MmuCounters& b) {
  MmuCounters d;
#define PVK_MMU_COUNTER(name) d.name = a.name - b.name;
#include "base/counters.inc"

  return d;
}

}  // namespace pvk
