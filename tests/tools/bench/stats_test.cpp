// The ratio statistics: Student's and Welch's t against worked values, and
// synthetic A/A and A/B experiments with known effects; the line fit.
#include "pvk/bench/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace pvk::bench {
namespace {

std::vector<double> exps(const std::vector<double>& logs) {
  std::vector<double> out;
  for (double l : logs) out.push_back(std::exp(l));
  return out;
}

// Log differences 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.1/√3, t = 3.4641 on
// 2 degrees of freedom: two-sided p = 0.0742, t(0.975, 2) = 4.3027.
TEST(RatioStats, PairedTAgainstWorkedValues) {
  const RatioStats s = ratio_stats(exps({1.1, 2.2, 3.3}), exps({1.0, 2.0, 3.0}), true);
  ASSERT_TRUE(s.estimated);
  EXPECT_EQ(s.method, "paired t");
  EXPECT_DOUBLE_EQ(s.df, 2);
  EXPECT_NEAR(s.center, std::exp(0.2), 1e-12);
  EXPECT_NEAR(s.p, 0.0742, 1e-4);
  const double half = 4.302653 * 0.1 / std::sqrt(3.0);
  EXPECT_NEAR(std::log(s.low), 0.2 - half, 1e-5);
  EXPECT_NEAR(std::log(s.high), 0.2 + half, 1e-5);
  EXPECT_TRUE(s.same());  // the interval holds 1: p > 0.05
  EXPECT_TRUE(s.noisy());
}

// Logs {1,2,3,4} over {2,4,6,8}: se² = 1.6667/4 + 6.6667/4, t = −1.7321,
// Welch–Satterthwaite df = 4.4118; two-sided p ≈ 0.152.
TEST(RatioStats, WelchAgainstWorkedValues) {
  const RatioStats s = ratio_stats(exps({1, 2, 3, 4}), exps({2, 4, 6, 8}), false);
  ASSERT_TRUE(s.estimated);
  EXPECT_EQ(s.method, "Welch t");
  EXPECT_NEAR(s.df, 4.4118, 1e-3);
  EXPECT_NEAR(s.center, std::exp(-2.5), 1e-12);
  EXPECT_GT(s.p, 0.14);
  EXPECT_LT(s.p, 0.17);
  // Unequal counts cannot pair: Welch even when asked to pair.
  EXPECT_EQ(ratio_stats(exps({1, 2, 3}), exps({1, 2}), true).method, "Welch t");
}

TEST(RatioStats, OneBootAndDeterministicTimes) {
  const RatioStats one = ratio_stats({200}, {100, 110}, false);
  EXPECT_FALSE(one.estimated);
  EXPECT_EQ(one.method, "one boot");
  EXPECT_TRUE(one.same());  // nothing shown without an interval
  EXPECT_FALSE(one.noisy());
  // -icount: every boot the same; a real difference has a point interval.
  const RatioStats det = ratio_stats({120, 120, 120}, {100, 100, 100}, true);
  EXPECT_TRUE(det.estimated);
  EXPECT_DOUBLE_EQ(det.low, 1.2);
  EXPECT_DOUBLE_EQ(det.high, 1.2);
  EXPECT_EQ(det.p, 0);
  EXPECT_FALSE(det.same());
  const RatioStats equal = ratio_stats({100, 100, 100}, {100, 100, 100}, true);
  EXPECT_TRUE(equal.same());
  EXPECT_EQ(equal.p, 1);
  // Non-positive values are no timings.
  EXPECT_EQ(ratio_stats({0, -1}, {100, 100}, false).n_numerator, 0);
}

// Virtual time, one boot a side (the default run): the figure is exact, a
// point the next run repeats; `~` only for identical figures. The same
// values in wall time are one sample of the host: no interval, nothing shown.
TEST(RatioStats, OneBootInVirtualTimeIsExact) {
  const RatioStats v = ratio_stats({93}, {100}, false, Timing::Virtual);
  EXPECT_TRUE(v.estimated);
  EXPECT_TRUE(v.exact());
  EXPECT_EQ(v.method, "exact");
  EXPECT_DOUBLE_EQ(v.center, 0.93);
  EXPECT_DOUBLE_EQ(v.low, 0.93);
  EXPECT_DOUBLE_EQ(v.high, 0.93);
  EXPECT_EQ(v.p, 0);
  EXPECT_FALSE(v.same());
  EXPECT_FALSE(v.noisy());
  const RatioStats same = ratio_stats({100}, {100}, true, Timing::Virtual);
  EXPECT_TRUE(same.exact());
  EXPECT_TRUE(same.same());
  EXPECT_EQ(same.p, 1);
  const RatioStats wall = ratio_stats({93}, {100}, false, Timing::Wall);
  EXPECT_FALSE(wall.estimated);
  EXPECT_FALSE(wall.exact());
  EXPECT_TRUE(wall.same());
  // Several boots in virtual time keep the t test (it then has no spread).
  EXPECT_EQ(ratio_stats({93, 93}, {100, 100}, true, Timing::Virtual).method, "paired t");
}

// Multiplicative noise (a loaded host stretches everything): lognormal with
// sd 3 %, 5 boots a side, 400 experiments.
struct Synthetic {
  std::mt19937 rng{14};
  std::normal_distribution<double> noise{0, 0.03};
  // One round's load, shared by both sides when paired.
  std::normal_distribution<double> load{0, 0.10};
  std::pair<std::vector<double>, std::vector<double>> run(double effect, bool shared_load) {
    std::vector<double> a, b;
    for (int i = 0; i < 5; ++i) {
      const double round = load(rng);
      a.push_back(100 * effect * std::exp(round + noise(rng)));
      b.push_back(100 * std::exp((shared_load ? round : load(rng)) + noise(rng)));
    }
    return {a, b};
  }
};

TEST(RatioStats, SyntheticAAHoldsOneAtItsLevel) {
  Synthetic syn;
  int covered = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    const auto [a, b] = syn.run(1.0, true);
    covered += ratio_stats(a, b, true).same();
  }
  // A 95 % interval holds the true ratio about 95 % of the time.
  EXPECT_GT(covered, 0.92 * n);
  EXPECT_LT(covered, 0.98 * n);
}

TEST(RatioStats, SyntheticABFindsAKnownEffect) {
  Synthetic syn;
  int found = 0, holds_truth = 0;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    const auto [a, b] = syn.run(1.10, true);
    const RatioStats s = ratio_stats(a, b, true);
    found += !s.same() && s.center > 1;
    holds_truth += s.low <= 1.10 && 1.10 <= s.high;
  }
  EXPECT_GT(found, 0.95 * n);  // 10 % against 3 % noise: nearly always shown
  EXPECT_GT(holds_truth, 0.90 * n);
}

// Pairing is what cancels a load both sides share: unpaired, the 10 % load
// swings hide a 10 % effect most of the time.
TEST(RatioStats, PairingCancelsSharedLoad) {
  Synthetic paired_syn, unpaired_syn;
  int paired_found = 0, unpaired_found = 0;
  for (int i = 0; i < 200; ++i) {
    const auto [a, b] = paired_syn.run(1.10, true);
    paired_found += !ratio_stats(a, b, true).same();
    const auto [c, d] = unpaired_syn.run(1.10, true);
    unpaired_found += !ratio_stats(c, d, false).same();
  }
  EXPECT_GT(paired_found, unpaired_found + 50);
}

TEST(LineFit, ExactAndNoisyLines) {
  const LineFit f = fit_line({1280, 12800, 128000}, {1e6 + 1280 * 300, 1e6 + 12800 * 300, 1e6 + 128000 * 300});
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.slope, 300, 1e-9);
  EXPECT_NEAR(f.intercept, 1e6, 1e-3);
  EXPECT_NEAR(f.r2, 1, 1e-12);
  EXPECT_EQ(f.n, 3);
  const LineFit g = fit_line({1, 2, 3, 4}, {1, 3, 2, 4});
  EXPECT_NEAR(g.slope, 0.8, 1e-12);
  EXPECT_NEAR(g.intercept, 0.5, 1e-12);
  EXPECT_NEAR(g.r2, 0.64, 1e-12);
  EXPECT_FALSE(fit_line({5, 5}, {1, 2}).ok);
  EXPECT_FALSE(fit_line({5}, {1}).ok);
}

}  // namespace
}  // namespace pvk::bench
