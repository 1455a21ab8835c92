// Statistics of a ratio between two sets of timings, like Go's benchstat:
// a 95 % confidence interval and a p-value, so the summary can say `~`
// (no difference shown) instead of a ratio the noise could have made.
//
// Times are compared on a log scale: a ratio is a difference of logs, and
// TCG's noise is multiplicative (a loaded host stretches every step by a
// factor). The test is Student's t on the log differences of boots paired
// in time (the same rep, run side by side: they share the machine's load,
// which then cancels), or Welch's t when the boots are not paired. A run
// has 3-5 boots per configuration: too few for a bootstrap (3 values give
// 10 distinct resamples) or a rank test (Mann-Whitney with 3+3 values
// cannot go below p = 0.1). Distributions come from Boost.Math.
#pragma once

#include <string>
#include <vector>

namespace pvk::bench {

inline constexpr double kConfidence = 0.95;
// An interval wider than ±5 % around the ratio: the figure is noisy
// (a printed ratio must repeat within 5 % between runs).
inline constexpr double kNoisyHalfWidth = 0.05;

// What the times are: wall time moves with the host's load, so one boot is
// one sample of it; virtual time (-icount) counts the guest's instructions,
// and a boot repeated gives the same figures, so one boot a side is exact.
enum class Timing { Wall, Virtual };

struct RatioStats {
  bool estimated = false;   // false: fewer than two values on a side, no interval
  std::string method;       // "paired t", "Welch t", "one boot", "exact"
  int n_numerator = 0, n_denominator = 0;
  double center = 0;        // exp(mean of log numerator − mean of log denominator)
  double low = 0, high = 0; // the 95 % interval of the ratio
  double p = 1;             // two-sided: the ratio is 1
  double df = 0;            // degrees of freedom of the t distribution used

  // The interval contains 1 (or nothing was estimated): no difference shown.
  bool same() const { return !estimated || (low <= 1 && 1 <= high); }
  // The interval reaches more than kNoisyHalfWidth away from the center.
  bool noisy() const;
  // One deterministic figure a side (virtual time): a point, no interval.
  bool exact() const { return method == "exact"; }
};

// Numerator and denominator values (all > 0; others are ignored). Paired:
// value i of each side was measured at the same time (pairing needs the same
// count on both sides, at least two; otherwise Welch's test is used). In
// virtual time a side with one value is exact: the ratio of the geometric
// means, with a zero-width interval (p = 1 only for a ratio of exactly 1).
RatioStats ratio_stats(const std::vector<double>& numerator, const std::vector<double>& denominator, bool paired,
                       Timing timing = Timing::Wall);

// Ordinary least squares y = a + b·x.
struct LineFit {
  bool ok = false;  // at least two distinct x
  double intercept = 0, slope = 0;
  double r2 = 0;    // share of y's variance the line explains
  int n = 0;
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace pvk::bench
