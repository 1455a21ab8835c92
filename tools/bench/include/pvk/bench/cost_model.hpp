// The cost model's arithmetic (docs/benchmarks.md, "Projected time"):
//
//   projected = factor × (I − Σ_e n_e·v_e) + Σ_e n_e·c_e
//
// per operation, where I is the instructions the operation executed (in
// virtual time, -icount shift=0, one instruction is one ns: I is the
// virtual per-op figure itself), n_e how many of event e it made (its
// counters, cost_events.hpp), v_e the instructions one such event is in
// virtual time (CostEvent::instructions), c_e the event's cost in the
// profile and factor the profile's ns per ordinary instruction. An event
// the profile does not price keeps its instructions in the first term:
// priced like any instruction, as virtual time does.
//
// And its inverse, for `pvk calibrate`: from each event timed alone — ns per
// event in the timing mode, instructions per event from a virtual-time boot
// of the same probe, the counters it moved — the cost c_e that makes the
// formula give back the time measured (derive_costs).
#pragma once

#include "pvk/bench/cost_events.hpp"
#include "pvk/bench/cost_profile.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pvk::bench {

struct Projection {
  double ns = 0;                     // projected per op
  double instructions = 0;           // I: the virtual-time figure
  double ordinary_instructions = 0;  // I − Σ n·v over the events the profile prices
  double event_ns = 0;               // Σ n·c
  std::map<std::string, double> counts;  // n_e per op, every event with a count
  std::vector<std::string> unpriced;     // events with a count the profile leaves out
};

// nullopt when a counter some event needs is missing (a row from before the
// counters, a Linux row): the row cannot be projected.
std::optional<Projection> project(const CostProfile& profile, double instructions, const CounterLookup& counters);

// One event timed alone: what the calibration item measured for it.
struct EventTiming {
  double ns = 0;            // ns per event in the timing mode (wall time for a TCG profile)
  double instructions = 0;  // per event in virtual time (the same probe under -icount)
  std::map<std::string, double> counters;  // per event (the probe's counter deltas over its count)
  bool whole = false;       // no virtual-time figure (an IPI at two CPUs): take ns whole as the event's cost
};

// Which probe times which event (bench/calibrate.cpp's kEvents names), and
// on which platform: the events every machine has from native boots (no
// hypervisor in the way), Xen's from Xen boots.
struct CalibrationSource {
  std::string_view event;     // cost_events() name, or "instruction" for the factor
  std::string_view probe;     // calibration_events() name
  std::string_view platform;  // "native" or "xen"
};
const std::vector<CalibrationSource>& calibration_sources();

// The profile that explains each timing (calibration_sources() order: the
// factor first, each event from the events before it): c_e =
//   (ns − factor·(I − Σ_j n_j·v_j) − Σ_{j≠e, priced} n_j·c_j) / n_e,
// clamped at 0 (a cost below its instructions' price: said in the source).
// `timings` is keyed "platform/probe"; a probe not there (or not timed)
// leaves its event out, with the reason from `missing` ("native/ipi" ->
// "needs two CPUs") or a generic one. `source` describes the runs.
CostProfile derive_costs(const std::map<std::string, EventTiming>& timings,
                         const std::map<std::string, std::string>& missing, const std::string& name,
                         const std::string& source);

}  // namespace pvk::bench
