// Records and configurations for the harness tests: console lines in the
// driver's format (docs/benchmarks.md, "Records").
#pragma once

#include "pvk/bench/results.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace pvk::bench::testing {

// One benchmark record line as the driver prints it. `params` is the raw
// JSON text of the parameter fields (e.g. "\"pages\":1280").
inline std::string bench_line(const std::string& bench, const std::string& params, long median, long min, long max,
                              long ops, long hypercalls = 0, bool counters = true, const std::string& extra = "") {
  std::string line = fmt::format("@pvk {{\"bench\":\"{}\",{}{}\"unit\":\"ns\",\"reps\":5,\"median\":{},\"min\":{},"
                                 "\"max\":{},\"ops\":{},\"per_op\":{}",
                                 bench, params, params.empty() ? "" : ",", median, min, max, ops, median / ops);
  if (counters)
    line += fmt::format(",\"pte_writes\":0,\"hypercalls\":{},\"mmu_update_entries\":{},\"ptwr_traps\":0,"
                        "\"page_faults\":{},\"free_frames_before\":100,\"free_frames_after\":100",
                        hypercalls, 2 * hypercalls, ops);
  line += extra + ",\"pass\":true}";
  return line;
}

inline Sample sample(const std::string& config, const std::string& line, int rep = 1) {
  auto records = parse_records({line});
  return Sample{config, rep, 0, records.at(0)};
}

}  // namespace pvk::bench::testing
