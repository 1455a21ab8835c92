// The order a plan's boots run in, and the A/A experiment.
//
// TCG timings move with whatever else the host runs. The harness pairs the
// two sides of every ratio in time: all configurations' first boots run
// before any second one (a round per rep), and within a round the
// configurations come in plan order (each base configuration followed by its
// one-switch variations and its A/A twin, which `jobs` at a time then boot
// side by side). Value i of two configurations thus shares round i's load,
// and the statistics pair them (stats.hpp). Even rounds run in reverse
// order, so neither side of a pair is always the one started first. The old order, heaviest boot
// first (shortest wall time, each configuration's reps one after another),
// stays available to measure what pairing buys.
#pragma once

#include "pvk/bench/matrix.hpp"

#include <string_view>

namespace pvk::bench {

enum class Schedule {
  paired,    // a round per rep, configurations in plan order
  heaviest,  // heaviest boot first (build_plan's order)
};
// "paired" / "heaviest"; throws std::invalid_argument otherwise.
Schedule parse_schedule(std::string_view text);
const char* schedule_name(Schedule schedule);

// Reorders plan.boots for the schedule (heaviest: left as build_plan made it).
void schedule_boots(Plan& plan, Schedule schedule);

// A/A: every base configuration (no switch but mmu=) gets a twin, the same
// configuration tagged twin=2 (kTwinKey), booting the very same command
// lines as its original. The builtin ratio "A/A" divides each twin by its
// original: it must come out 1.00 within the noise, with an interval that
// contains 1. Returns the number of twins added.
size_t add_aa_twins(Plan& plan);

// Warm-up: each boot first runs every one of its items once with reps=1,
// then the items as planned; the runner flags the first records as warm-ups
// (results.hpp, mark_warmups) and the rows leave them out. A boot whose
// items with their warm-ups would not fit one bench= value keeps its items
// alone. Returns the number of boots that got warm-ups.
size_t add_warmups(Plan& plan);

}  // namespace pvk::bench
