// The targets (ratio.hpp, targets()) judged against a run's ratios.
#pragma once

#include "pvk/bench/ratio.hpp"

#include <string_view>

#include <string>
#include <vector>

namespace pvk::bench {

// True if every "k=v" of `wanted` (blank-separated) is among the parameters,
// and, unless `wanted` names a stride or any_density is set, the parameters
// have none but 1.
bool has_params(const Params& params, std::string_view wanted, bool any_density = false);

// The targets (ratio.hpp, targets()) as this run's ratios judge them, one
// line per goal (per pair of configurations for each_pair goals): "met",
// "missed", "unclear: ..." or why it was not measured.
struct TargetLine {
  std::string goal;
  std::string measured;
  std::string verdict;
};
std::vector<TargetLine> evaluate_targets(const std::vector<Ratio>& ratios);

}  // namespace pvk::bench
