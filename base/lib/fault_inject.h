// Fault injection (the fail= boot parameter): chosen operations fail on a
// seeded, reproducible schedule, so the paths that handle a refused
// hypercall or an exhausted allocator run on purpose, not only when the
// machine happens to be out of memory. Armed only while processes run
// (boot itself is not under test). The sites ask fault_inject_fails().
#pragma once
#include <stdint.h>

namespace pvk {

enum class FaultSite : uint8_t { MmuUpdate, MmuextOp, FrameAlloc, Count };
inline constexpr unsigned kFaultSites = static_cast<unsigned>(FaultSite::Count);

struct FaultRate {
  uint32_t num = 0;  // fail num out of every den operations, on average
  uint32_t den = 0;  // 0: never
};

void fault_inject_configure(const FaultRate (&rates)[kFaultSites], uint64_t seed);
void fault_inject_arm(bool armed);
const char* fault_site_name(FaultSite site);

struct FaultSiteStats {
  uint64_t trials = 0;    // operations asked while armed
  uint64_t injected = 0;  // of which were made to fail
};
FaultSiteStats fault_inject_stats(FaultSite site);

namespace detail {
extern bool g_fault_inject_armed;
bool fault_inject_roll(FaultSite site);
}  // namespace detail

// Whether some site may be made to fail now. The schedule is one global
// sequence, so work that runs without the kernel lock (page faults) takes
// it while armed: the failures stay where the seed puts them.
inline bool fault_inject_armed() { return detail::g_fault_inject_armed; }

// True if this operation must fail now. One predictable branch when off.
inline bool fault_inject_fails(FaultSite site) {
  return detail::g_fault_inject_armed && detail::fault_inject_roll(site);
}

}  // namespace pvk
