// The events of the cost model (docs/benchmarks.md, "Projected time"): the
// privilege transitions, TLB operations, IPIs and rep-string bytes that
// virtual time (QEMU -icount shift=0) prices at one instruction each, while
// on hardware (and in TCG's wall time) they cost far more. Each event is
// counted by kernel counters (base/counters.inc) and has its own instruction
// count in virtual time: what the projection takes out before it adds the
// event's price from a profile.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace pvk::bench {

struct CostEvent {
  std::string_view name;  // the profile's key, e.g. "syscall"
  // count = (Σ plus − Σ minus) / scale, never below 0.
  std::vector<std::string_view> plus;
  std::vector<std::string_view> minus{};
  double scale = 1;
  // What one event costs in virtual time: the instructions that are the
  // event itself (`syscall` and `iretq` for a system call; 1024 per KiB of
  // rep stosb/movsb), estimated from the code that makes it (the comment in
  // cost_events.cpp says how for each). The code around an event (the
  // kernel's dispatch, Xen's handlers) is ordinary instructions, priced by
  // the profile's factor.
  double instructions = 0;
  std::string_view unit = "ns";  // the profile's cost key: "ns" per event, or "ns_per_kib"
  std::string_view what{};
};

// In the order profiles list them.
const std::vector<CostEvent>& cost_events();
const CostEvent* find_cost_event(std::string_view name);
// "syscall, exception, ..." (for error messages).
std::string_view cost_event_names();

// Counter values (per operation, or per whatever unit the caller uses) by
// name; nullopt: the row has no such counter.
using CounterLookup = std::function<std::optional<double>(std::string_view)>;

// How many of the event the counters show; nullopt when a counter it needs
// is missing (a results file from before the counter existed, a Linux row).
std::optional<double> event_count(const CostEvent& e, const CounterLookup& counters);

}  // namespace pvk::bench
