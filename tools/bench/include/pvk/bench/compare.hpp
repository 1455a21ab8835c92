// `pvk compare OLD.json NEW.json`: per (benchmark, parameters, configuration)
// the old and new per-op medians and their ratio, flagging a change when the
// new median lies outside the old run's min-max spread.
#pragma once

#include "pvk/bench/results.hpp"

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
  int change = 0;    // +1 slower beyond the spread, -1 faster, 0 within
};

struct Comparison {
  std::vector<CompareLine> lines;  // both runs have the row, in the new run's order
  std::vector<std::string> only_old, only_new;  // "bench params @ config"
  int slower = 0, faster = 0;
};

// Configurations are matched by platform and switches, a switch at its
// default counting as absent (pgd_cache=on matches a run that did not give it).
Comparison compare_results(const Results& old_results, const Results& new_results);

std::string compare_markdown(const Comparison& comparison, const std::string& old_name, const std::string& new_name);

}  // namespace pvk::bench
