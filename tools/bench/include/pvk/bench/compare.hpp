// `pvk compare OLD NEW`: per (benchmark, parameters, configuration) the old
// and new per-op medians, new÷old, and, like benchstat, a 95 % interval of
// new÷old over the two runs' boots with its p-value (stats.hpp, Welch's t on
// log times: the runs did not share the machine's load); `~` when the
// interval holds 1. With one boot on a side there is no interval: a change
// is then flagged when the new median lies outside the old run's min-max.
#pragma once

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
// -icount run this is issue 14's check that a goal holds in both modes.
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

}  // namespace pvk::bench
