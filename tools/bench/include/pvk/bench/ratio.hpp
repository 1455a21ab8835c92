// Ratio tables: one configuration's per-op time over another's, for every
// benchmark both ran. Which pairs are compared is declared in one table
// (builtin_ratios: bench/experiments.json, "ratios") plus whatever --ratio
// NAME=NUM/DEN adds.
//
// A selector is key=value terms joined with ',' (a value may list
// alternatives with '|'): "platform=xen,mmu=batched". Keys are "platform" and
// boot switches; a switch's default counts as its value (pgd_cache=on
// matches a configuration that does not give pgd_cache). A ratio pairs a
// configuration matching the numerator with one matching the denominator
// that agrees on every key neither selector mentions, so pgd_cache=on/off
// pairs xen/batched with xen/batched pgd_cache=off, not with native.
#pragma once

#include "pvk/bench/results.hpp"
#include "pvk/bench/stats.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pvk::bench {

struct Selector {
  std::vector<std::pair<std::string, std::vector<std::string>>> terms;
  bool matches(const Config& config) const;
  bool mentions(std::string_view key) const;
  std::string text() const;
};
Selector parse_selector(std::string_view text);  // throws std::invalid_argument

struct RatioSpec {
  std::string name;  // "batched÷wrpt"
  Selector numerator, denominator;
  std::string about;  // one line for the summary
  // What is divided: "" = the per-op median; else a record field of both
  // rows ("total_median": fork_dirty's fork + exit + rewrite), its spread
  // from the fields with _min / _max in place of _median. Rows without the
  // field do not pair.
  std::string field{};
  // Across benchmarks: this benchmark's rows over the other's, the
  // same parameters, e.g. fault_zero_cow over fault_write. With both
  // selectors empty (Selector{} matches everything) the two rows come from
  // one configuration. "" = one benchmark over itself.
  std::string numerator_bench{}, denominator_bench{};
  // Against the best of several (unhook and auto: "auto ÷ the best fixed
  // backend"): of the rows the denominator matches for one numerator row,
  // only the fastest (lowest per-op figure) pairs, and the pair names it.
  bool best_denominator = false;
  // Across one parameter (SMP: "threads=K ÷ threads=0"): within each
  // configuration (both selectors must match it), a benchmark's rows whose
  // `vary` parameter is not `vary_base` over its row with `vary_base` and
  // every other parameter the same. "" = rows pair only at equal parameters.
  std::string vary{}, vary_base{};
  // Across CPU counts (the scaling run, scaling.hpp): rows pair where each
  // ran one worker per CPU of its configuration (row_workers: threads=N-1,
  // procs=N) and the other parameters are the same, e.g. fault_threads
  // threads=7 at smp=8 over threads=0 at smp=1.
  bool workers_per_cpu = false;
};

// The ratios every summary shows (when the run has both sides):
// bench/experiments.json, "ratios".
const std::vector<RatioSpec>& builtin_ratios();
// "NAME=NUMERATOR/DENOMINATOR", e.g. "batch1÷32=batch=1/batch=32"; across
// benchmarks each side ends in @BENCH, its selector possibly empty:
// "cow÷fresh=@fault_zero_cow/@fault_write" (within each configuration).
RatioSpec parse_ratio(std::string_view text);

// A goal stated as a ratio (the harness's first targets, table sharing): the ratio `ratio` of
// `bench` with parameters including `params` (base configurations, no other
// switch) must be at most `at_most`; with `relative_to`, the ratio divided by
// that ratio of the same benchmark. With `each_pair`, every pair (and
// parameter set) the ratio has is a goal of its own, e.g. each backend and
// size for an on÷off ratio. With `in_default_matrix`, the default matrix
// boots `bench` with `params` (once per configuration) on the base
// configurations the ratio's two selectors name (matrix.hpp, table_items).
struct Target {
  std::string goal{};  // one line
  std::string ratio{};
  std::string bench{};  // "" with `somewhere`: any benchmark
  std::string params{};  // "pages=128000": these must be among the row's
  double at_most = 0;
  std::string relative_to{};
  bool each_pair = false;
  bool in_default_matrix = false;
  // Also the sparse forks (fork_dirty stride=k): every density measured.
  bool sparse_too = false;
  // The goal holds somewhere: of all pairs and parameters the ratio has, the
  // lowest must be at most `at_most` (auto better than each fixed
  // backend somewhere); the line says where.
  bool somewhere = false;
  // A goal no longer pursued, with the one-line reason: still measured and
  // listed, its verdict "retired: <reason>" instead of met or missed, so no
  // target is dropped silently and none prints a miss forever.
  std::string retired{};
  // The run that measures it, said when this one did not ("not in this
  // run: ..."), e.g. a scaling run's command.
  std::string needs{};
};
const std::vector<Target>& targets();  // bench/experiments.json, "targets"

struct Ratio {
  std::string spec;  // RatioSpec::name
  std::string bench;              // the numerator's benchmark
  std::string denominator_bench;  // the denominator's, when the spec divides across benchmarks
  Params params;
  std::string numerator, denominator;  // configuration ids
  std::string pair;                    // what the two share, e.g. "xen/batched" ("" if nothing)
  double value = 0;                    // per_op ÷ per_op
  double low = 0, high = 0;            // min÷max .. max÷min: the spread
  bool pass = true;                    // both rows passed
  // Over the boots' own values (each boot's per-op median, or the field):
  // paired by rep when the run scheduled each rep's boots together
  // (results.run "schedule": "paired"), else Welch.
  RatioStats stats;
  // From a run in virtual time (-icount): one boot a side is an exact figure,
  // not a sample (A/A is 1.000), so a target may be judged on it.
  bool deterministic = false;
  // The figure the summary shows: the interval's center when there is one,
  // else the ratio of medians.
  double shown() const { return stats.estimated ? stats.center : value; }
};

// Whether the run ran each rep of every configuration in one round (runner's
// paired schedule), so that value i of two rows shares the machine's load.
bool paired_in_time(const Results& results);

// The boots' values of a row in rep order: per_op, or `field` (RatioSpec::field).
std::vector<std::pair<int, double>> boot_values(const Row& row, const std::string& field);

// In the order of the specs, then of results.rows.
std::vector<Ratio> compute_ratios(const Results& results, const std::vector<RatioSpec>& specs);

}  // namespace pvk::bench
