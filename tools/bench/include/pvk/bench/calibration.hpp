// The calibration item (bench/calibrate.cpp) as the harness reads it: its
// events by index, and the timings a run of it gives the cost model
// (cost_model.hpp, derive_costs).
#pragma once

#include "pvk/bench/cost_model.hpp"
#include "pvk/bench/results.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pvk::bench {

// bench/calibrate.cpp's kEvents, in its order: a record's event=K is the
// K-th name (a host test keeps the two in step).
const std::vector<std::string_view>& calibration_events();

// What two runs of the calibrate item give: per "platform/probe", the ns
// per event of `timed` (the timing mode the profile is for) and the
// instructions and counters per event of `virtual_run` (its -icount twin;
// pass the same run twice for a virtual-time profile). An IPI's round trip
// (a wait on the sender) is taken whole; another probe without a virtual
// twin is missing (its instructions cannot be taken out);
// one a boot could not time is in `missing` with the kernel's reason.
struct CalibrationInput {
  std::map<std::string, EventTiming> timings;
  std::map<std::string, std::string> missing;
};
CalibrationInput calibration_input(const Results& virtual_run, const Results& timed);

// The platform a configuration's rows speak for ("native" for
// native-builtin), or "" for one the model does not know (Linux).
std::string model_platform(const Config& config);

}  // namespace pvk::bench
