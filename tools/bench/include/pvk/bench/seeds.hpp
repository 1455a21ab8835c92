// Each seed's own figures beside pvk's (issue 14): for every experiment of
// seeds 000-003 (../shared/seeds/), what the seed measured, pvk's
// corresponding figure from this run (a declared ratio, builtin_ratios()),
// and a one-line verdict. Also seed 003's cost model: a least-squares line
// ms per fork = fixed + per page × pages for each configuration.
#pragma once

#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

struct SeedFigure {
  enum class Claim {
    no_difference,  // the seed saw none: pvk agrees when its interval holds 1 (or stays within 2 %)
    below_one,      // the seed's ratio is below 1 (the first is faster)
    above_one,      // ... above 1
    reference,      // an absolute figure from other hardware: shown, not judged
  };
  std::string seed;        // "000"
  std::string experiment;  // one line
  std::string figure;      // the seed's figure, as text
  double value = 0;        // the seed's ratio (0: none)
  Claim claim = Claim::reference;
  // pvk's side: a ratio of builtin_ratios() for `bench` with these
  // parameters among the row's ("" any), in configurations with `pair`
  // ("" any); or, when `needs` is given, what pvk lacks to measure it.
  std::string ratio{}, bench{}, params{}, needs{};
};
const std::vector<SeedFigure>& seed_figures();

// Seed 000's figure for one benchmark: the mean after÷before of its five
// `time` runs, with the same statistics as pvk's ratios (unpaired).
RatioStats seed000_stats(std::string_view bench);

// One verdict line for pvk's ratios of a figure.
std::string seed_verdict(const SeedFigure& figure, const std::vector<const Ratio*>& ratios);

// Least squares per configuration over every boot's fork_dirty time at each
// dirty-page count (every page dirtied).
struct ForkFit {
  std::string config;
  LineFit fit;  // x pages, y ns per fork
  double lo = 0, hi = 0;  // page counts fitted
};
std::vector<ForkFit> fork_fits(const Results& results);

// "## Seeds": every figure, then the fits.
std::string seeds_section(const Results& results, const std::vector<Ratio>& ratios);

}  // namespace pvk::bench
