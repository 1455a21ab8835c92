// Scaling across CPU counts (a run with --smp N,M,...): each benchmark's
// figure with one worker per CPU, at every count the run booted, beside its
// figure at one CPU, with the per-op counters that explain the difference.
//
// Under -icount the guest's clock is the sum of every vCPU's instructions
// (docs/benchmarks.md, "Several CPUs in virtual time"), so a per-op figure
// at N CPUs is the machine's total work per op: with perfect scaling it
// stays at the one-CPU figure, and what it grows by is work the other CPUs
// added (shootdowns, lock spinning, waiting for each other).
#pragma once

#include "pvk/bench/results.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pvk::bench {

// A parameter that says how many workers a row ran (bench/experiments.json,
// "scaling"): workers = the parameter's value + plus (threads=K: 1 + K;
// procs=N: N).
struct WorkerParam {
  std::string param;
  unsigned plus = 0;
};

struct ScalingSpec {
  std::vector<WorkerParam> workers;  // the first the row has counts
  std::vector<std::string> counters;  // per-op counters shown when a row has them
  // Counters shown by name prefix (the lock counters, lock_<class>_...):
  // those that exist in the records and are not 0 in every row of a table.
  std::vector<std::string> counter_prefixes;
};
const ScalingSpec& scaling_spec();  // bench/experiments.json, "scaling"

// How many workers a row ran, by the spec's worker parameters; and which
// parameter said so.
std::optional<unsigned> row_workers(const Row& row, std::string* param = nullptr);

// One row of the scaling table: a benchmark's parameter set (without the
// worker parameter) in one configuration (without its CPUs) at one count,
// the row that ran one worker per CPU.
struct ScalingLine {
  std::string bench;
  Params params;        // without the worker parameter
  std::string config;   // configuration id without the smp key
  std::string label;    // its label, for tables
  unsigned cpus = 1;
  unsigned workers = 1;
  double per_op = 0;
  std::optional<double> to_one;  // per_op ÷ the same line at one CPU
  bool pass = true;
  std::vector<std::pair<std::string, std::optional<double>>> counters;  // per op; nullopt: not reported
};

// Every benchmark, parameter set and configuration that ran one worker per
// CPU at two counts or more, in the rows' order, by CPUs.
std::vector<ScalingLine> scaling_lines(const Results& results);

// "## Scaling across CPUs" (empty when no line).
std::string scaling_section(const Results& results);
// The same lines for results.json.
OJson scaling_json(const Results& results);

}  // namespace pvk::bench
