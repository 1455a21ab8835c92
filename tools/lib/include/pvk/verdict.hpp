// The pass/fail decision for one boot, from everything the run observed.
#pragma once

#include "pvk/platform.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace pvk {

struct Evidence {
  std::vector<nlohmann::json> records;       // in console order
  std::vector<std::string> protocol_errors;  // malformed "@pvk " lines
  bool timed_out = false;
  std::chrono::seconds timeout{0};
  PlatformExit exit;
};

struct Verdict {
  bool pass = false;
  std::string reason;  // one line; "pass" when it passed
};

// A run passes iff the last record is {"event":"done","status":"pass"}, the
// platform's exit agrees, it did not time out and every record was well
// formed. Anything else fails with the most telling reason.
Verdict decide(const Evidence& evidence);

}  // namespace pvk
