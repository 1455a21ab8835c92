// Cost profiles: what each event of the cost model (cost_events.hpp) costs
// on one machine, as data (bench/profiles/NAME.json), every number with its
// source. The format:
//
//   {"format": "pvk-cost-profile", "version": 1,
//    "description": "one line",
//    "instruction": {"ns": 0.33, "source": "..."},     ns per ordinary instruction
//    "events": {"syscall": {"ns": 70, "source": "..."},
//               "rep_clear": {"ns_per_kib": 30, "source": "..."}, ...},
//    "not_timed": {"ipi": "why `pvk calibrate` could not time it"}}
//
// An event the profile leaves out is priced as its instructions (as in
// virtual time, at the profile's factor); `not_timed` says why a
// calibrated profile has no figure for one (never a zero in its place).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace pvk::bench {

struct SourcedCost {
  double ns = 0;  // per event, or per KiB for rep_clear / rep_copy
  std::string source;
};

struct CostProfile {
  std::string name;  // the file's stem
  std::string description;
  SourcedCost instruction;
  std::map<std::string, SourcedCost> events;     // by cost_events() name
  std::map<std::string, std::string> not_timed;  // event -> why
  const SourcedCost* event(std::string_view name) const;
};

// A profile the parser refuses: what() is one line naming the field.
struct ProfileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws ProfileError for: not an object, a wrong or missing "format", an
// unknown top-level field, a missing, non-numeric or negative cost (a zero
// instruction factor too), an unknown event, a number without a non-empty
// "source", an event both priced and not timed. `where` prefixes messages
// (the file name).
CostProfile parse_profile(const nlohmann::json& json, const std::string& name, const std::string& where);
nlohmann::ordered_json profile_to_json(const CostProfile& profile);

// The profiles in a directory (bench/profiles): their names, sorted.
std::vector<std::string> profile_names(const std::filesystem::path& dir);
// dir/NAME.json, parsed. Throws ProfileError: a name with no such file
// (listing the profiles there), unreadable JSON, or what parse_profile refuses.
CostProfile load_profile(const std::filesystem::path& dir, const std::string& name);

// The profile `pvk bench` projects with when --profile is not given: the
// modern x86 one (bench/profiles/x86-2019.json).
inline constexpr const char* kDefaultProfile = "x86-2019";

}  // namespace pvk::bench
