#include "pvk/bench/stats.hpp"

#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pvk::bench {
namespace {

std::vector<double> logs_of(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values)
    if (v > 0 && std::isfinite(v)) out.push_back(std::log(v));
  return out;
}

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

// Sample variance (n − 1).
double variance(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / (v.size() - 1);
}

// Interval and p-value of a log difference `d` with standard error `se` on
// `df` degrees of freedom. se = 0 (deterministic virtual time: identical
// reps) leaves a point: any difference is then real.
void t_interval(RatioStats& s, double d, double se, double df) {
  s.center = std::exp(d);
  s.df = df;
  if (!(se > 0)) {
    s.low = s.high = s.center;
    s.p = d == 0 ? 1 : 0;
    return;
  }
  const boost::math::students_t dist(df);
  const double t_crit = boost::math::quantile(boost::math::complement(dist, (1 - kConfidence) / 2));
  s.low = std::exp(d - t_crit * se);
  s.high = std::exp(d + t_crit * se);
  s.p = 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(d) / se));
}

}  // namespace

bool RatioStats::noisy() const {
  if (!estimated || center <= 0) return false;
  return high / center > 1 + kNoisyHalfWidth || center / low > 1 + kNoisyHalfWidth;
}

RatioStats ratio_stats(const std::vector<double>& numerator, const std::vector<double>& denominator, bool paired,
                       Timing timing) {
  RatioStats s;
  const std::vector<double> a = logs_of(numerator), b = logs_of(denominator);
  s.n_numerator = static_cast<int>(a.size());
  s.n_denominator = static_cast<int>(b.size());
  if (a.empty() || b.empty()) {
    s.method = "none";
    return s;
  }
  // Pairs only when nothing was dropped: value i must still be rep i.
  if (paired && a.size() == b.size() && a.size() == numerator.size() && b.size() == denominator.size() &&
      a.size() >= 2) {
    std::vector<double> d(a.size());
    for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
    s.estimated = true;
    s.method = "paired t";
    t_interval(s, mean(d), std::sqrt(variance(d) / d.size()), static_cast<double>(d.size() - 1));
    return s;
  }
  if ((a.size() < 2 || b.size() < 2) && timing == Timing::Virtual) {
    // A repeated boot would give the same figure: nothing to estimate.
    s.estimated = true;
    s.method = "exact";
    t_interval(s, mean(a) - mean(b), 0, 0);
    return s;
  }
  if (a.size() < 2 || b.size() < 2) {
    s.method = "one boot";
    s.center = std::exp(mean(a) - mean(b));
    s.low = s.high = s.center;
    return s;
  }
  // Welch: unequal variances; Welch–Satterthwaite degrees of freedom.
  const double va = variance(a) / a.size(), vb = variance(b) / b.size();
  const double se2 = va + vb;
  double df = 1;
  if (se2 > 0) {
    const double den = (va * va) / (a.size() - 1) + (vb * vb) / (b.size() - 1);
    df = den > 0 ? se2 * se2 / den : static_cast<double>(a.size() + b.size() - 2);
  }
  s.estimated = true;
  s.method = "Welch t";
  t_interval(s, mean(a) - mean(b), std::sqrt(se2), df);
  return s;
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  LineFit f;
  const size_t n = std::min(x.size(), y.size());
  f.n = static_cast<int>(n);
  if (n < 2) return f;
  const std::vector<double> xs(x.begin(), x.begin() + n), ys(y.begin(), y.begin() + n);
  const double mx = mean(xs), my = mean(ys);
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (xs[i] - mx) * (xs[i] - mx);
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) * (ys[i] - my);
  }
  if (!(sxx > 0)) return f;
  f.ok = true;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  f.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1;
  return f;
}

}  // namespace pvk::bench
