// Projected time in a run's results: each row's per-op figure priced with
// cost profiles (cost_model.hpp), beside the virtual-time figure it comes
// from, and the ratio tables and targets read in the model too. A model,
// labelled as one everywhere it is shown.
//
// Only rows timed in virtual time can be projected (their per-op figure is
// the instructions the model needs), on pvk (Linux rows have no counters),
// with the model's counters (results from before them cannot).
#pragma once

#include "pvk/bench/cost_profile.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pvk::bench {

// The profiles results.cost_model carries (apply_profiles wrote them), parsed
// back; one that no longer parses is left out.
std::vector<CostProfile> applied_profiles(const Results& results);

// The projection of one row's per-op figure with one profile, or nullopt.
std::optional<double> project_row(const Results& results, const Row& row, const CostProfile& profile);

// Fills every projectable row's Row::projected and results.cost_model
// (each profile's name, description and numbers with their sources).
void apply_profiles(Results& results, const std::vector<CostProfile>& profiles);

// The results as the profile sees them: each projectable row's per-op
// figures (its boots' too) replaced by the projection, the others left out;
// fields stay virtual time, so ratio specs over a field are not for it.
Results projected_results(const Results& results, const CostProfile& profile);

// summary.md's "Projected time" section: what the model is, each profile's
// numbers and sources, then every ratio of the run in virtual time beside
// the model's, and the targets in the model.
std::string projection_section(const Results& results, const std::vector<CostProfile>& profiles,
                               const std::vector<RatioSpec>& specs);

// results.json's "model_ratios": per profile, the ratios of the projected figures.
OJson projection_ratios_json(const Results& results, const std::vector<CostProfile>& profiles,
                             const std::vector<RatioSpec>& specs);

}  // namespace pvk::bench
