#include "pvk/bench/calibration.hpp"

#include <fmt/format.h>

namespace pvk::bench {

const std::vector<std::string_view>& calibration_events() {
  static const std::vector<std::string_view> names{"work",      "syscall", "exception", "invlpg",
                                                   "cr3_reload", "clear",   "copy",      "ipi",
                                                   "hypercall", "multicall", "mmu_update", "ptwr", "walk"};
  return names;
}

std::string model_platform(const Config& config) {
  if (config.platform == "native" || config.platform == "native-builtin") return "native";
  if (config.platform == "xen") return "xen";
  return "";
}

namespace {

constexpr const char* kBench = "calibrate";

std::optional<uint64_t> event_param(const Row& row) {
  for (const auto& [k, v] : row.params)
    if (k == "event" && v.is_number_unsigned()) return v.get<uint64_t>();
  return std::nullopt;
}

// "platform/probe" of a calibrate row, or "" if it is not one.
std::string key_of(const Results& results, const Row& row) {
  if (row.bench != kBench) return "";
  const auto event = event_param(row);
  const Config* c = results.find_config(row.config);
  if (!event || *event >= calibration_events().size() || !c) return "";
  const std::string platform = model_platform(*c);
  if (platform.empty()) return "";
  return platform + "/" + std::string(calibration_events()[*event]);
}

// Why the kernel could not time a probe (the record's errno).
std::string not_timed_reason(const Row& row, const std::string& key) {
  const double e = row.field("errno").value_or(0);
  if (e == 95) {
    if (key.ends_with("/ipi")) return "needs a second CPU online (pvk calibrate --smp 2); the boot had one";
    if (key.starts_with("native/")) return "no such event natively (Xen only)";
    return "the platform refused it (EOPNOTSUPP)";
  }
  if (e == 110) return "the IPI's target never answered (ETIMEDOUT)";
  return fmt::format("the kernel refused the probe (errno {})", e);
}

// Why a configuration's virtual-time boot gave no rows: its failure, if it failed.
std::string virtual_boot_trouble(const Results& virtual_run, const std::string& config) {
  for (const auto& b : virtual_run.boots)
    if (b.config == config && !b.pass) return fmt::format("its -icount boot failed ({})", b.reason);
  return "its -icount twin has no timed record of it";
}

}  // namespace

CalibrationInput calibration_input(const Results& virtual_run, const Results& timed) {
  CalibrationInput in;
  std::map<std::string, const Row*> virtual_rows;
  for (const auto& row : virtual_run.rows)
    if (const std::string key = key_of(virtual_run, row); !key.empty() && row.field("timed").value_or(0) == 1)
      virtual_rows[key] = &row;
  // A boot that failed timed nothing: each of its probes says so.
  for (const auto& b : timed.boots) {
    const Config* c = timed.find_config(b.config);
    if (b.pass || !c || model_platform(*c).empty()) continue;
    for (auto probe : calibration_events())
      in.missing[model_platform(*c) + "/" + std::string(probe)] = fmt::format("its boot failed ({})", b.reason);
  }
  for (const auto& row : timed.rows) {
    const std::string key = key_of(timed, row);
    if (key.empty()) continue;
    if (row.field("timed").value_or(0) != 1 || !row.pass) {
      if (!in.timings.count(key)) in.missing[key] = row.pass ? not_timed_reason(row, key) : "its boot failed";
      continue;
    }
    const auto v = virtual_rows.find(key);
    // Without instructions the code around an event cannot be taken out of
    // its time; only an IPI's round trip (a wait, not work, on the sender;
    // timed on several CPUs, which never run under -icount) is taken whole.
    if (v == virtual_rows.end() && !key.ends_with("/ipi")) {
      if (!in.timings.count(key))
        in.missing[key] = "timed in wall time, but without the instructions around it: " +
                          virtual_boot_trouble(virtual_run, row.config);
      continue;
    }
    const Row& counted = v != virtual_rows.end() ? *v->second : row;
    EventTiming t;
    t.ns = row.per_op;
    // An IPI's round trip is a wait on the sender: the instructions it
    // spins (and, under -icount, the target's turn) are not work to take
    // out, so it is taken whole, twin or not.
    t.whole = v == virtual_rows.end() || key.ends_with("/ipi");
    t.instructions = t.whole ? 0 : v->second->per_op;
    const double ops = counted.ops > 0 ? counted.ops : 1;
    for (const auto& [name, value] : counted.fields) t.counters[name] = value / ops;
    in.timings[key] = std::move(t);
    in.missing.erase(key);
  }
  return in;
}

}  // namespace pvk::bench
