// SYS_pvk_probe (base/abi.h): one kind of event the cost model prices, run
// `count` times with nothing else in between and timed with the TSC, for
// `pvk calibrate` (bench/calibrate.cpp). What each kind does is in abi.h's
// PvkProbe; Xen's kinds are pvops/event_probes.h.
#pragma once
#include "base/abi.h"
#include "base/lib/error_or.h"

namespace pvk {

// The elapsed ns of the `count` events (setup and teardown outside the
// timed part). EINVAL for an unknown kind or a count outside
// 1..abi::kMaxProbeCount; EOPNOTSUPP when this platform has no such event;
// ETIMEDOUT when an IPI went unanswered; ENOMEM when the frames it needs
// are not there (nothing stays allocated).
ErrorOr<uint64_t> run_probe(uint64_t kind, uint64_t count);

struct TrapFrame;
// PROBE_exception arms `count` user-mode page faults for the calling
// thread: each load it makes from abi::kProbeFaultAddress traps, and the
// kernel returns at once past the load (abi::kProbeLoadBytes) instead of
// raising SIGSEGV — an exception round trip with nothing else in it.
// trap_dispatch asks here first for every user page fault; true: taken.
// The address is tested inline: every other fault pays a compare, not a call.
bool take_probe_fault_at_probe(TrapFrame& f);
inline bool take_probe_fault(TrapFrame& f, uint64_t fault_addr) {
  return __builtin_expect(fault_addr == abi::kProbeFaultAddress, 0) && take_probe_fault_at_probe(f);
}

}  // namespace pvk
