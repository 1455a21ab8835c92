// Each seed's own figures beside pvk's: for every experiment of
// seeds 000-003 (docs/seeds.md), what the seed measured, pvk's
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
const std::vector<SeedFigure>& seed_figures();  // bench/experiments.json

// Seed 000's elapsed seconds for one of its programs, before and after its
// patch (bench: pvk's benchmark for the program).
struct Seed000Runs {
  std::string bench;
  std::vector<double> before, after;
};

// One of seed 003's lines: its points (dirty pages, µs per fork) in one mode.
struct SeedLine {
  std::string name;
  std::vector<double> pages, us;
};

// Seed 003's comparison on the per-page cost of fork_dirty: the configuration
// with `numerator` for switch `switch_name` on `platform` over the one with
// `denominator`, every other switch the same (bench/experiments.json,
// seed003_per_page): pvk's pair of backends against the seed's wtpt ÷ emulate.
struct SeedPairing {
  std::string platform, switch_name, numerator, denominator;
};

// Seed 000's figure for one benchmark: the mean after÷before of its five
// `time` runs, with the same statistics as pvk's ratios (unpaired).
RatioStats seed000_stats(std::string_view bench);

// One verdict line for pvk's ratios of a figure.
std::string seed_verdict(const SeedFigure& figure, const std::vector<const Ratio*>& ratios);

// Seed 001's split of a fresh page's fault, in cycles per page (medians over
// the boots), for each configuration whose kernel counts its page clearing:
// the whole fault (fault_write's per_op_cycles), the part spent clearing the
// new frame (the kernel's page_clear_cycles ÷ pages_cleared, both deltas of
// the same reps), the fault path (the rest); the seed's Poke_full (poke_full:
// the fault plus a memset of the whole new page) and the zero page's COW
// (fault_zero_cow, which clears its new frame: its clearing likewise); and
// what copying a page costs in the same configuration (page_copy_cycles ÷
// pages_copied over every row that copied: kernbench's COW copies), which is
// what the zero page's COW paid when it copied zeros.
struct FaultSplit {
  std::string config;
  double fault = 0, clearing = 0;
  double poke_full = 0;              // 0: not run
  double cow = 0, cow_clearing = 0;  // 0: not run (or, clearing, zero_page=off: nothing to COW)
  double copying = 0;                // 0: nothing copied
  double path() const { return fault - clearing; }
  double clearing_share() const { return fault > 0 ? clearing / fault : 0; }
};
std::vector<FaultSplit> fault_splits(const Results& results);
// The seed's Pentium-M figures as a split: 2,300 = ~900 + ~1,400; Poke_full
// 2,719; COW of the zero page 2,660.
FaultSplit seed001_split();
// One line: clearing's share of the fault beside the seed's ~61 %, and what
// the memset of Poke_full adds.
std::string fault_split_verdict(const FaultSplit& split);

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
