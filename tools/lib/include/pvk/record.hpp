// Console protocol: a line "@pvk " + one JSON object is a machine-readable
// record; every other line is human text (docs/design.md, "Console protocol").
// pvk writes a line a user program starts with "@pvk" as "@pvk-user": such
// records (benchmark results, test reports) are data, never the kernel's
// word — the parser marks them "origin":"user" and no verdict trusts them.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

inline constexpr std::string_view record_prefix = "@pvk ";
inline constexpr std::string_view user_record_prefix = "@pvk-user ";
// The member the parser adds to a user program's record.
inline constexpr std::string_view origin_key = "origin";

struct ConsoleLine {
  enum class Kind {
    text,       // not a record
    record,     // "@pvk " followed by a valid JSON object
    malformed,  // "@pvk " followed by something else: a protocol error
  };
  Kind kind = Kind::text;
  nlohmann::json record;  // kind == record
  std::string error;      // kind == malformed: what is wrong with it
};

// The JSON text of a record line, kernel's ("@pvk ") or a program's
// ("@pvk-user "); nullopt for any other line. `user` says which.
std::optional<std::string_view> record_body(std::string_view line, bool* user = nullptr);

// Classifies one console line (without its line terminator). Malformed
// records are reported rather than skipped: a kernel that prints broken
// records has a bug the run must not hide.
ConsoleLine parse_console_line(std::string_view line);

// True for a record a user program wrote ("@pvk-user ").
bool is_user_record(const nlohmann::json& record);

// True for the kernel's record {"event":"done",...} (never a user program's).
bool is_done_record(const nlohmann::json& record);

// The last done record, if any.
std::optional<nlohmann::json> find_done_record(const std::vector<nlohmann::json>& records);

}  // namespace pvk
