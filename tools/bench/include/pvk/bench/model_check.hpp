// `pvk compare VIRTUAL WALL --model NAME`: the cost model checked against
// what it was not fitted to. Each row of a virtual-time run is projected
// with the profile and set beside the same row measured in wall time; the
// error is projected ÷ measured − 1, and the summary gives the median of
// its absolute value per benchmark and overall.
#pragma once

#include "pvk/bench/cost_profile.hpp"
#include "pvk/bench/results.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

struct ModelCheckLine {
  std::string bench, params, config;  // config: label
  double virtual_ns = 0, projected_ns = 0, measured_ns = 0;
  double error = 0;  // projected ÷ measured − 1
};

struct ModelCheck {
  std::vector<ModelCheckLine> lines;  // rows both runs have that the profile projects
  // Per benchmark (in the lines' order) and overall: the median |error|.
  std::vector<std::pair<std::string, double>> median_by_bench;
  double median_abs_error = 0;
};

// Rows of the calibrate item are not checked (they are what a profile is made of).
ModelCheck model_check(const Results& virtual_run, const Results& wall_run, const CostProfile& profile);
// The check paired in time: each wall-time boot's rows projected with the
// profile that boot's own calibrate rows give (derive_costs; the virtual
// run gives the instructions), so the events and the rows were timed under
// the same host load. A line's figures are medians over the boots, its
// error the median of each boot's error. The wall run must have booted the
// calibrate item with the rows (--bench 'calibrate,...').
ModelCheck paired_model_check(const Results& virtual_run, const Results& wall_run, std::string* profiles_text);
// profile: the one every row used, or null for the paired check (paired_text says what).
std::string model_check_text(const ModelCheck& check, const CostProfile* profile, const std::string& paired_text,
                             const std::string& virtual_name, const std::string& wall_name);

}  // namespace pvk::bench
