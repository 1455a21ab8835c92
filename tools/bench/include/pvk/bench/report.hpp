// The Markdown summary of a run: what ran, what failed, one table per
// benchmark (each configuration's per-op median with its min-max and the
// counters that explain it) and the ratio tables.
#pragma once

#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

// "118 ns", "12.3 µs", "1.47 ms", "2.35 s" (three significant digits).
std::string format_ns(double ns);
// A count per operation: integers as they are, fractions to 3 significant digits.
std::string format_count(double value);
// "0.123", "7.61", "1.00"
std::string format_ratio(double value);

std::string summary_markdown(const Results& results, const std::vector<RatioSpec>& specs,
                             const std::vector<Ratio>& ratios);

}  // namespace pvk::bench
