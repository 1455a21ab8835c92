// `pvk compare OLD NEW`: per (benchmark, parameters, configuration) the old
// and new per-op medians, new÷old, and, like benchstat, a 95 % interval of
// new÷old over the two runs' boots with its p-value (stats.hpp, Welch's t on
// log times: the runs did not share the machine's load); `~` when the
// interval holds 1. With one boot on a side there is no interval: a change
// is then flagged when the new median lies outside the old run's min-max.
#pragma once

#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"
#include "pvk/bench/stats.hpp"

#include <filesystem>

#include <string>
#include <vector>

namespace pvk::bench {

struct CompareLine {
  std::string bench;
  std::string params;  // params_text
  std::string config;  // label
  const Row* old_row = nullptr;
  const Row* new_row = nullptr;
  double ratio = 0;  // new ÷ old per-op median
  RatioStats stats{};  // new ÷ old over the boots
  int change = 0;    // +1 slower (interval above 1, or beyond the spread), -1 faster, 0 not shown
};

// A target (ratio.hpp) as each run judges it: with a wall-time run and an
// -icount run this is the check that a goal holds in both modes.
struct TargetPair {
  std::string goal;
  std::string old_measured, old_verdict;
  std::string new_measured, new_verdict;
};

struct Comparison {
  std::vector<CompareLine> lines;  // both runs have the row, in the new run's order
  std::vector<std::string> only_old, only_new;  // "bench params @ config"
  int slower = 0, faster = 0;
  std::string old_mode, new_mode;  // wall time / virtual time (report.hpp, time_mode)
  std::vector<TargetPair> targets;  // goals at least one run measured
};

// Configurations are matched by platform and switches, a switch at its
// default counting as absent (pgd_cache=on matches a run that did not give it).
Comparison compare_results(const Results& old_results, const Results& new_results);

// A results.json, or a results directory of `pvk bench` (its results.json).
// Throws std::runtime_error when neither.
Results load_results(const std::filesystem::path& path);

std::string compare_markdown(const Comparison& comparison, const std::string& old_name, const std::string& new_name);

// `pvk compare OLD NEW --repeat`: the repeatability criterion, that every
// ratio a summary prints without `~` repeats within 5 % in a second run.
// Each ratio of the two runs (the same spec, benchmark(s), parameters and
// configurations, matched as above) counts when both runs print it without
// `~`: an interval over the boots that excludes 1 in both. It repeats when
// |new ÷ old − 1| ≤ tolerance, new and old being the figures the summaries
// print (Ratio::shown). A ratio `~` in either run, or from one boot on a
// side (no interval), is listed as not counted.
inline constexpr double kRepeatTolerance = 0.05;

struct RepeatLine {
  std::string what;  // "batched÷wrpt fork_dirty pages=1280 (defaults)"
  Ratio old_ratio, new_ratio;
  bool counted = false;  // significant in both runs
  bool repeats = false;  // counted and within the tolerance
  std::string why_not{};  // not counted: "~ in the old run", "1 boot in the new run", ...
  double change() const { return new_ratio.shown() / old_ratio.shown(); }  // new ÷ old of the printed figures
};

struct RepeatCheck {
  double tolerance = kRepeatTolerance;
  std::vector<RepeatLine> lines;                // ratios of both runs, in the new run's order
  std::vector<std::string> only_old, only_new;  // RepeatLine::what of ratios one run lacks
  int counted = 0, repeated = 0;
  // Nothing significant in both runs checks nothing: not a pass.
  bool ok() const { return counted > 0 && repeated == counted; }
};

RepeatCheck repeat_check(const Results& old_results, const Results& new_results,
                         const std::vector<RatioSpec>& specs = builtin_ratios(), double tolerance = kRepeatTolerance);

// One line per disagreement, then "N of M significant ratios repeat within
// 5 %", then the ratios not counted and those only one run has.
std::string repeat_text(const RepeatCheck& check, const std::string& old_name, const std::string& new_name);

}  // namespace pvk::bench
