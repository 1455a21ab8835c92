// pvk compare --repeat (the repeatability criterion): every ratio both runs
// print without `~` agrees within 5 %; `~` in either run is not counted.
#include "pvk/bench/compare.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pvk::bench {
namespace {

using testing::bench_line;
using testing::sample;

// Four reps of xen/batched and xen/wrpt, paired in time. fork_dirty:
// batched = fork × wrpt (with a little noise, the same in every run);
// getppid: batched = getppid × wrpt, or, with getppid = 0, noise around 1.
Results run(double fork, double getppid) {
  Results r;
  r.run = {{"schedule", "paired"}};
  r.configs = {config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt")};
  const std::vector<long> wrpt_fork{10000, 10100, 9900, 10050};
  const std::vector<double> jitter{1.01, 0.99, 1.005, 0.995};
  const std::vector<long> wrpt_getppid{1020, 995, 1005, 1040};
  const std::vector<long> batched_noise{1000, 1030, 990, 1010};
  for (int i = 0; i < 4; ++i) {
    const long bf = std::lround(fork * wrpt_fork[i] * jitter[i]);
    const long bg = getppid > 0 ? std::lround(getppid * wrpt_getppid[i] * jitter[i]) : batched_noise[i];
    r.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280)", bf, bf, bf, 1), i + 1));
    r.records.push_back(
        sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":1280)", wrpt_fork[i], wrpt_fork[i], wrpt_fork[i], 1), i + 1));
    r.records.push_back(sample("xen mmu=batched", bench_line("getppid", R"("iters":1)", bg, bg, bg, 1), i + 1));
    r.records.push_back(sample("xen mmu=wrpt",
                               bench_line("getppid", R"("iters":1)", wrpt_getppid[i], wrpt_getppid[i], wrpt_getppid[i], 1), i + 1));
  }
  aggregate(r);
  return r;
}

const RepeatLine& line_of(const RepeatCheck& c, const std::string& bench) {
  const auto it = std::find_if(c.lines.begin(), c.lines.end(), [&](const RepeatLine& l) {
    return l.what.starts_with("batched÷wrpt " + bench + " ");
  });
  if (it == c.lines.end()) throw std::runtime_error("no line for " + bench);
  return *it;
}

TEST(Repeat, AgreeingRunsRepeat) {
  const RepeatCheck c = repeat_check(run(0.5, 0), run(0.51, 0));
  const RepeatLine& fork = line_of(c, "fork_dirty");
  EXPECT_TRUE(fork.counted);
  EXPECT_TRUE(fork.repeats);
  EXPECT_NEAR(fork.change(), 1.02, 0.001);
  // getppid is ~ in both: listed, not counted.
  const RepeatLine& getppid = line_of(c, "getppid");
  EXPECT_FALSE(getppid.counted);
  EXPECT_EQ(getppid.why_not, "~ in the old run, ~ in the new run");
  EXPECT_EQ(c.counted, 1);
  EXPECT_EQ(c.repeated, 1);
  EXPECT_TRUE(c.ok());
  const std::string text = repeat_text(c, "a", "b");
  EXPECT_NE(text.find("1 of 1 significant ratios repeat within 5 %\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("differs:"), std::string::npos) << text;
  EXPECT_NE(text.find("not counted (1: `~` or one boot in a run):\n  batched÷wrpt getppid iters=1 (defaults): ~ in the "
                      "old run, ~ in the new run: old ~ "),
            std::string::npos)
      << text;
}

TEST(Repeat, DisagreeingRatioIsReported) {
  const RepeatCheck c = repeat_check(run(0.5, 1.3), run(0.6, 1.31));
  const RepeatLine& fork = line_of(c, "fork_dirty");
  EXPECT_TRUE(fork.counted);
  EXPECT_FALSE(fork.repeats);
  EXPECT_NEAR(fork.change(), 1.2, 0.001);
  EXPECT_TRUE(line_of(c, "getppid").repeats);
  EXPECT_EQ(c.counted, 2);
  EXPECT_EQ(c.repeated, 1);
  EXPECT_FALSE(c.ok());
  const std::string text = repeat_text(c, "a", "b");
  EXPECT_NE(text.find("differs: batched÷wrpt fork_dirty pages=1280 (defaults): old 0.50 ["), std::string::npos) << text;
  EXPECT_NE(text.find("new÷old 1.200 (+20.0 %, beyond ±5 %)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 2 significant ratios repeat within 5 %; 1 differ\n"), std::string::npos) << text;
}

TEST(Repeat, TildeInOneRunIsNotCounted) {
  // getppid differs by 30 % in the new run but is ~ in the old one: not a disagreement.
  const RepeatCheck c = repeat_check(run(0.5, 0), run(0.5, 1.3));
  const RepeatLine& getppid = line_of(c, "getppid");
  EXPECT_FALSE(getppid.counted);
  EXPECT_FALSE(getppid.repeats);
  EXPECT_EQ(getppid.why_not, "~ in the old run");
  EXPECT_EQ(c.counted, 1);
  EXPECT_TRUE(c.ok());
  EXPECT_NE(repeat_text(c, "a", "b").find("  batched÷wrpt getppid iters=1 (defaults): ~ in the old run: old ~ "),
            std::string::npos);
}

TEST(Repeat, EdgeOfTheTolerance) {
  // |new÷old − 1| ≤ 5 %, either way: 4.9 % repeats, 5.1 % does not.
  EXPECT_TRUE(repeat_check(run(0.5, 0), run(0.5 * 1.049, 0)).ok());
  EXPECT_FALSE(repeat_check(run(0.5, 0), run(0.5 * 1.051, 0)).ok());
  EXPECT_TRUE(repeat_check(run(0.5, 0), run(0.5 * 0.951, 0)).ok());
  EXPECT_FALSE(repeat_check(run(0.5, 0), run(0.5 * 0.949, 0)).ok());
}

TEST(Repeat, OneBootIsNotCountedAndMissingRatiosAreListed) {
  Results one;
  one.configs = {config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt")};
  one.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280)", 5000, 5000, 5000, 1)));
  one.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":1280)", 10000, 10000, 10000, 1)));
  aggregate(one);
  const RepeatCheck c = repeat_check(one, run(0.9, 0));
  EXPECT_EQ(c.counted, 0);
  EXPECT_EQ(line_of(c, "fork_dirty").why_not, "1 boot in the old run");
  EXPECT_EQ(c.only_new, std::vector<std::string>{"batched÷wrpt getppid iters=1 (defaults)"});
  EXPECT_NE(repeat_text(c, "a", "b").find("0 of 0 significant ratios repeat within 5 % (no ratio is significant in "
                                          "both runs)"),
            std::string::npos);
}

}  // namespace
}  // namespace pvk::bench
