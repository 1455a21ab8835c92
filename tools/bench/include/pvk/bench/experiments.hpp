// The experiments of `pvk bench` as data: bench/experiments.json, compiled
// into the harness (experiments_data.cpp is generated from it) and read
// with nlohmann-json on first use. The platforms and their machines, the
// variations the default matrix adds, the ratios, the targets, the seeds'
// figures and what the scaling table reads (scaling.hpp) live there; matrix, ratio, report and seeds read them
// through the accessors (platform_specs(), variations(), builtin_ratios(),
// targets(), seed_figures()). A bad file is refused in one line naming the
// field (JsonFieldError).
#pragma once

#include "pvk/bench/matrix.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/scaling.hpp"
#include "pvk/bench/seeds.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace pvk::bench {

struct Experiments {
  std::vector<PlatformSpec> platforms;
  std::vector<Variation> variations;
  std::vector<RatioSpec> ratios;
  std::vector<Target> targets;
  std::vector<SeedFigure> seed_figures;
  std::vector<Seed000Runs> seed000_runs;
  FaultSplit seed001_split;
  std::string seed001_verdict;
  std::vector<SeedLine> seed003_lines;
  SeedPairing seed003_per_page;
  ScalingSpec scaling;
};

// Parses and checks a whole file (`name` for errors): every field's type,
// no unknown field, and the names it refers to (a target's ratio, a
// variation's benchmarks, a seed figure's ratio) exist. Throws
// JsonFieldError, one line.
Experiments parse_experiments(std::string_view text, const std::string& name);

// bench/experiments.json as the harness was built with it (parsed once).
const Experiments& experiments();

// The file's text as compiled in.
std::string_view experiments_text();

}  // namespace pvk::bench
