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

// Whether the run's times are wall time or QEMU -icount virtual time (issue
// 14: each ratio says which): "wall time" / "virtual time (-icount)".
std::string time_mode(const Results& results);

// A ratio as the tables print it (benchstat's way): the ratio (the center of
// its interval, RatioStats::center) in bold with its 95 % interval and p; `~` with the figures in parentheses when the
// interval contains 1; "noisy" when the interval is wider than ±5 %; from a
// single boot on a side, the ratio and "1 boot" (no interval).
std::string ratio_cell(const Ratio& ratio);

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
// "## Targets": the summary's table of evaluate_targets, with its explanation.
std::string targets_section(const std::vector<Ratio>& ratios);

// fork_dirty's parameters: `pages` (the span) and `stride` (every stride-th
// page dirtied; 1 when the record has none, as before the sparse fork).
double fork_pages(const Row& row);
double fork_stride(const Row& row);

// Where two configurations' fork_dirty per-fork times (per-op medians) cross:
// against the dirty page count (stride=1 rows) or, the sparse fork,
// against density (1/stride, the share of each L1 table's entries that are
// dirty) at one span of `pages`. Pairs: configurations that differ only in
// the backend (mmu=, or the platform) or only in ptshare=, every other
// switch equal. Crossings are interpolated on log(time ratio) against
// log(pages) or log(density).
struct BreakEven {
  std::string a, b;      // configuration ids, in results.configs order
  bool density = false;  // false: against pages; true: against density at `pages`
  double pages = 0;      // the span (density)
  struct Cross {
    double at;                 // pages, or density (0..1]
    std::string faster_below;  // the configuration faster below it (fewer pages, lower density)
  };
  std::vector<Cross> crosses;
  std::string faster;   // without a crossing: the one faster wherever both were measured
  double lo = 0, hi = 0;  // the range both were measured over (pages, or density)
};
std::vector<BreakEven> fork_break_evens(const Results& results);

std::string summary_markdown(const Results& results, const std::vector<RatioSpec>& specs,
                             const std::vector<Ratio>& ratios);

}  // namespace pvk::bench
