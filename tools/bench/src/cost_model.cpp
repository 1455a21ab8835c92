#include "pvk/bench/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pvk::bench {

std::optional<Projection> project(const CostProfile& profile, double instructions, const CounterLookup& counters) {
  Projection p;
  p.instructions = instructions;
  double taken = 0;  // instructions the priced events account for
  for (const auto& e : cost_events()) {
    const auto n = event_count(e, counters);
    if (!n) return std::nullopt;
    if (*n <= 0) continue;
    p.counts[std::string(e.name)] = *n;
    const SourcedCost* c = profile.event(e.name);
    if (!c) {
      p.unpriced.emplace_back(e.name);
      continue;
    }
    taken += *n * e.instructions;
    p.event_ns += *n * c->ns;
  }
  // Never below zero: the counters are global (every CPU, the whole
  // kernel), so a row may count events another process made meanwhile.
  p.ordinary_instructions = std::max(0.0, instructions - taken);
  p.ns = profile.instruction.ns * p.ordinary_instructions + p.event_ns;
  return p;
}

const std::vector<CalibrationSource>& calibration_sources() {
  static const std::vector<CalibrationSource> sources{
      // Ordinary instructions: the kernel's own page walks over the physmap,
      // one L1 table apart. The code the benchmarks spend their instructions
      // in (faults, fork, mprotect, exit) is mm code whose loads spread over
      // many pages; under TCG a load's cost depends on that (a soft-TLB miss
      // is a refill), so the formatter ("work", a tight loop on a few pages,
      // recorded beside it) would price them at half what they cost.
      {"instruction", "walk", "native"},
      {"syscall", "syscall", "native"},
      {"exception", "exception", "native"},
      {"invlpg", "invlpg", "native"},
      {"cr3_load", "cr3_reload", "native"},
      {"rep_clear", "clear", "native"},
      {"rep_copy", "copy", "native"},
      {"ipi", "ipi", "native"},
      {"hypercall", "hypercall", "xen"},
      {"multicall_entry", "multicall", "xen"},
      {"mmu_update_entry", "mmu_update", "xen"},
      {"ptwr_trap", "ptwr", "xen"},
      {"xen_syscall", "syscall", "xen"},
      {"xen_exception", "exception", "xen"},
  };
  return sources;
}

namespace {

std::string key_of(const CalibrationSource& s) { return std::string(s.platform) + "/" + std::string(s.probe); }

std::string figure(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

CostProfile derive_costs(const std::map<std::string, EventTiming>& timings,
                         const std::map<std::string, std::string>& missing, const std::string& name,
                         const std::string& source) {
  CostProfile p;
  p.name = name;
  auto why_missing = [&](const CalibrationSource& s) {
    const auto it = missing.find(key_of(s));
    return it != missing.end() ? it->second : fmt::format("no {} boot timed the {} probe", s.platform, s.probe);
  };
  // The factor: ordinary kernel code, no event in it.
  const CalibrationSource& first = calibration_sources().front();
  const auto work = timings.find(key_of(first));
  if (work == timings.end() || work->second.instructions <= 0)
    throw ProfileError(fmt::format("calibration: {}: the factor for ordinary instructions needs the {} probe timed "
                                   "in both modes ({})",
                                   name, first.probe, why_missing(first)));
  const double factor = work->second.ns / work->second.instructions;
  p.instruction = {factor, fmt::format("{}: {} probe, {} ns over {} instructions per call", source, first.probe,
                                       figure(work->second.ns), figure(work->second.instructions))};
  for (const auto& s : calibration_sources()) {
    if (s.event == "instruction") continue;
    const CostEvent* e = find_cost_event(s.event);
    const auto t = timings.find(key_of(s));
    if (!e) continue;
    if (t == timings.end()) {
      p.not_timed[std::string(s.event)] = why_missing(s);
      continue;
    }
    const EventTiming& m = t->second;
    const CounterLookup counters = [&](std::string_view c) -> std::optional<double> {
      const auto it = m.counters.find(std::string(c));
      return it == m.counters.end() ? 0.0 : it->second;
    };
    const double target = event_count(*e, counters).value_or(0);
    if (target <= 0) {
      p.not_timed[std::string(s.event)] =
          fmt::format("the {}/{} probe made no {} event (its counters moved none)", s.platform, s.probe, s.event);
      continue;
    }
    // What the other events of the probe account for: priced ones at their
    // cost, the rest as their instructions (inside the factor's term).
    double other_ns = 0, event_instructions = target * e->instructions;
    for (const auto& other : cost_events()) {
      if (other.name == e->name) continue;
      const double n = event_count(other, counters).value_or(0);
      if (n <= 0) continue;
      if (const SourcedCost* c = p.event(other.name)) {
        other_ns += n * c->ns;
        event_instructions += n * other.instructions;
      }
    }
    const double ordinary = m.whole ? 0 : std::max(0.0, m.instructions - event_instructions);
    const double raw = (m.ns - factor * ordinary - other_ns) / target;
    std::string how = m.whole ? fmt::format("{}: {} probe on {}, {} ns per event, taken whole (no virtual-time figure)",
                                            source, s.probe, s.platform, figure(m.ns))
                              : fmt::format("{}: {} probe on {}, {} ns and {} instructions per event", source, s.probe,
                                            s.platform, figure(m.ns), figure(m.instructions));
    if (raw < 0) how += fmt::format(" (came out {} ns: below what its instructions cost, clamped to 0)", figure(raw));
    p.events[std::string(s.event)] = {std::max(0.0, raw), how};  // per KiB for the rep events (their count is KiB)
  }
  // Events no probe times: said so, never priced at zero.
  for (const auto& e : cost_events())
    if (!p.event(e.name) && !p.not_timed.count(std::string(e.name)))
      p.not_timed[std::string(e.name)] =
          e.name == "interrupt" ? "no probe can raise one at will (a tick comes when it comes; an IPI is `ipi`)"
                                : "the calibration item has no probe for it";
  return p;
}

}  // namespace pvk::bench
