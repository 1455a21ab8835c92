// How the summary and the comparison print figures: times, counts, ratios,
// shares and Markdown table rows.
#pragma once

#include "pvk/bench/ratio.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

// "118 ns", "12.3 µs", "1.47 ms", "2.35 s" (three significant digits).
std::string format_ns(double ns);
// A count per operation: integers as they are, fractions to 3 significant digits.
std::string format_count(double value);
// "0.123", "7.61", "1.00"
std::string format_ratio(double value);
// "12 %", "3.1 %", "0.39 %": a share (0..1) as a percentage.
std::string percent(double share);

// A ratio as the tables print it (benchstat's way): the ratio (the center of
// its interval, RatioStats::center) in bold with its 95 % interval and p; `~` with the figures in parentheses when the
// interval contains 1; "noisy" when the interval is wider than ±5 %; from a
// single boot on a side, the ratio and "1 boot" (no interval).
std::string ratio_cell(const Ratio& ratio);

// "| a | b |\n": one row of a Markdown table.
std::string row_line(const std::vector<std::string>& cells);

}  // namespace pvk::bench
