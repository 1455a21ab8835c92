#include "base/lib/fault_inject.h"

namespace pvk {
namespace detail {
bool g_fault_inject_armed = false;
}  // namespace detail

namespace {

FaultRate g_rates[kFaultSites];
FaultSiteStats g_stats[kFaultSites];
uint64_t g_state = 1;

// xorshift64*: small, seedable, good enough to spread failures evenly.
uint64_t next_random() {
  g_state ^= g_state >> 12;
  g_state ^= g_state << 25;
  g_state ^= g_state >> 27;
  return g_state * 0x2545f4914f6cdd1dull;
}

}  // namespace

void fault_inject_configure(const FaultRate (&rates)[kFaultSites], uint64_t seed) {
  for (unsigned i = 0; i < kFaultSites; ++i) g_rates[i] = rates[i], g_stats[i] = {};
  g_state = seed ? seed : 1;  // xorshift must not start at zero
}

void fault_inject_arm(bool armed) {
  bool any = false;
  for (const FaultRate& r : g_rates) any |= r.den != 0;
  detail::g_fault_inject_armed = armed && any;
}

const char* fault_site_name(FaultSite site) {
  switch (site) {
    case FaultSite::MmuUpdate: return "mmu_update";
    case FaultSite::MmuextOp: return "mmuext_op";
    case FaultSite::FrameAlloc: return "frame_alloc";
    case FaultSite::Count: break;
  }
  return "?";
}

FaultSiteStats fault_inject_stats(FaultSite site) { return g_stats[static_cast<unsigned>(site)]; }

bool detail::fault_inject_roll(FaultSite site) {
  const unsigned i = static_cast<unsigned>(site);
  const FaultRate r = g_rates[i];
  if (!r.den) return false;
  ++g_stats[i].trials;
  if (next_random() % r.den >= r.num) return false;
  ++g_stats[i].injected;
  return true;
}

}  // namespace pvk
