// The Markdown summary of a run: what ran, what failed, one table per
// benchmark (each configuration's per-op median with its min-max and the
// counters that explain it) and the ratio tables.
#pragma once

#include "pvk/bench/break_even.hpp"
#include "pvk/bench/format.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"
#include "pvk/bench/targets.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

// Whether the run's times are wall time or QEMU -icount virtual time (each
// ratio says which): "wall time" / "virtual time (-icount)".
std::string time_mode(const Results& results);

// "## Targets": the summary's table of evaluate_targets, with its explanation.
std::string targets_section(const std::vector<Ratio>& ratios);

std::string summary_markdown(const Results& results, const std::vector<RatioSpec>& specs,
                             const std::vector<Ratio>& ratios);

}  // namespace pvk::bench
