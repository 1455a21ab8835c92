// Which configurations share a plot. A run's matrix holds every backend at
// its defaults and, beside them, variations (a switch or several set); drawn
// on one chart they are more lines than a reader can tell apart, and a
// variation that changes nothing hides its default twin. So a plot asks one
// question: "the backends at their defaults", or "this switch setting
// against the default", with each varied configuration beside its twin (the
// same platform and backend, nothing else set).
#pragma once

#include "pvk/bench/results.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

struct PlotQuestion {
  std::string suffix;            // "" for the defaults, else "_" + the switches' names ("_pvpatch")
  std::string heading;           // what it compares, for the title
  std::vector<std::string> ids;  // configurations, in the run's order (a twin before its variation)
};

// The questions `ids` (configurations of `results`) answer, the defaults
// first, then one per set of switches in the order they first appear. A
// question has at least one configuration; a variation without a twin in
// `ids` stands alone.
std::vector<PlotQuestion> plot_questions(const Results& results, const std::vector<std::string>& ids);

// The currency a plot of these configurations is in, for its caption:
// virtual time, wall time, or both (a run from before QEMU 10 timed its
// machines with several CPUs in wall time).
std::string plot_currency(const Results& results, const std::vector<std::string>& ids);

}  // namespace pvk::bench
