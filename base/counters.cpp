#include "base/counters.h"

#include "base/console/record.h"

namespace pvk {

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
