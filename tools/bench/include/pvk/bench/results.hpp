// Benchmark results: the records every boot printed, what each boot did, and
// one aggregated row per (benchmark, parameter set, configuration), with
// their JSON and CSV forms.
#pragma once

#include "pvk/bench/matrix.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pvk::bench {

// Records keep their fields in console order (parameters come between
// "bench" and "unit").
using OJson = nlohmann::ordered_json;
using Params = std::vector<std::pair<std::string, OJson>>;

// "pages=1280 loops=0" ("" without parameters).
std::string params_text(const Params& params);

// The "@pvk {...}" records among console lines, in order; other lines and
// malformed records are skipped (the run's verdict reports those).
std::vector<OJson> parse_records(const std::vector<std::string>& lines);

// The benchmark's parameters in a {"bench":...} record: the fields between
// "bench" and "unit" (docs/benchmarks.md, "Records"). A record without "unit"
// falls back to every field that is not a known result field.
Params record_params(const OJson& record);

// What one boot did.
struct BootRecord {
  std::string config;  // Config::id()
  int rep = 1;
  int part = 0;
  std::string group;
  std::string cmdline;
  Machine machine;
  bool ran = false;  // false: could not start, or cancelled before it started
  bool pass = false;
  std::string reason;  // "pass" or why it failed
  double elapsed_s = 0;
  int benchmarks = 0;  // benchmark records it printed
  int failed = 0;      // of them with "pass":false
  std::vector<std::string> trouble;  // Xen's complaints, failed benchmarks' errors
  std::string log;                   // its console log, relative to the output directory
  // The machine's load around the boot (runner.hpp, HostLoad): the 1-minute
  // load average just before and just after, and the share of the host's CPU
  // time that was busy while it ran (every process, ours included); -1 when
  // not measured (an older file).
  double load_before = -1, load_after = -1, host_busy = -1;
};

// One record of one boot.
struct Sample {
  std::string config;
  int rep = 1;
  int part = 0;
  OJson record;
  // A warm-up: its boot ran the same benchmark and parameters again later
  // (mark_warmups); kept in results.json, left out of the rows.
  bool warmup = false;
};

// Flags, among one boot's records, every benchmark record whose (benchmark,
// parameters) the boot printed again later: the earlier runs were warm-ups
// (`pvk bench --warmup` puts a one-rep copy of each item first).
void mark_warmups(std::vector<Sample>& boot_records);

// One (benchmark, parameters, configuration) over every boot that ran it.
// Times are ns: median = median of the boots' medians; min/max = the extreme
// reps of any boot; per_op likewise per operation. Other numeric fields
// (counters, cycles, benchmark-specific ones) are the median over the boots,
// except *_min / min_* (minimum) and *_max / max_* (maximum).
struct Row {
  std::string bench;
  Params params;
  std::string config;
  int samples = 0;
  int reps = 0;  // repetitions over all samples
  bool pass = true;
  std::vector<std::string> errors;
  double median = 0, min = 0, max = 0;
  double ops = 1;
  double per_op = 0, per_op_min = 0, per_op_max = 0;
  std::map<std::string, double> fields;
  std::optional<double> field(std::string_view name) const;
  // Each boot's own figures, in (rep, part) order: what the ratio statistics
  // (stats.hpp) use. per_op, and every numeric field of the boot's record.
  struct BootValue {
    int rep = 1;
    double per_op = 0;
    std::map<std::string, double> fields;
    std::optional<double> field(std::string_view name) const;  // per_op too
  };
  std::vector<BootValue> boots;
  // Projected time (projection.hpp): the per-op figure each cost profile
  // gives this row, by profile name; a model, not a measurement. Empty for
  // rows that cannot be projected (wall time, Linux, no counters).
  std::map<std::string, double> projected;
};

struct Results {
  OJson run = OJson::object();  // when, where, what command, wall time
  std::vector<Config> configs;
  std::vector<BootRecord> boots;
  std::vector<Sample> records;  // every record of every boot (events too)
  std::vector<Row> rows;        // filled by aggregate()
  // The cost profiles the rows were projected with (projection.hpp), as
  // results.json carries them: {"name":..., "description":..., ...}.
  OJson cost_model = OJson::array();

  const Config* find_config(std::string_view id) const;
  // Whether the run timed in virtual time (-icount): its boots repeat exactly.
  bool virtual_time() const;
  // Whether this configuration's boots were: a machine with several CPUs
  // runs in wall time even then (runner.hpp, boot_run_options).
  bool virtual_time(const Config& config) const;
  // A virtual-time run with some configurations in wall time.
  bool mixed_time() const;
};

// Fills results.rows from results.records: rows ordered by benchmark (the
// suite's order, unknown ones after), parameter set (first seen) and
// configuration (results.configs' order).
void aggregate(Results& results);

OJson to_json(const Results& results);
// Reads what to_json wrote (rows included; records and boots as far as
// present). Throws std::runtime_error when it is not a results file.
Results results_from_json(const OJson& json);

// One line per row; columns: benchmark, parameters (each parameter key of
// any row as its own column too), configuration, platform and switches,
// samples, pass, ops, median/min/max and per-op times (ns), every counter,
// then every other field. Absent values are empty cells.
std::string to_csv(const Results& results);

// Lower middle for an even count, as the driver does.
double median_of(std::vector<double> values);

}  // namespace pvk::bench
