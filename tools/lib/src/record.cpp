#include "pvk/record.hpp"

#include <fmt/format.h>

namespace pvk {
namespace {

// nlohmann::json parses any depth, but copying, comparing and dumping a
// value recurse once per level: a record of 100,000 nested '[' overflowed
// the host's stack wherever it went next (found by fuzz_record). Real
// records nest two or three levels.
constexpr size_t kMaxRecordDepth = 64;

bool nested_too_deep(std::string_view body) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxRecordDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// A console line quoted in an error: its first 300 bytes (a line may be
// megabytes long), bytes outside printable ASCII as \xNN, so the error is
// one line of valid UTF-8 wherever it goes (a verdict, results.json).
std::string excerpt(std::string_view line) {
  std::string out;
  for (const char c : line.substr(0, 300)) {
    if (c >= 0x20 && c <= 0x7e)
      out += c;
    else
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  if (line.size() > 300) out += "...";
  return out;
}

}  // namespace

std::optional<std::string_view> record_body(std::string_view line, bool* user) {
  const bool from_user = line.starts_with(user_record_prefix);
  if (user) *user = from_user;
  if (from_user) return line.substr(user_record_prefix.size());
  if (line.starts_with(record_prefix)) return line.substr(record_prefix.size());
  return std::nullopt;
}

ConsoleLine parse_console_line(std::string_view line) {
  ConsoleLine out;
  bool user = false;
  const std::optional<std::string_view> found = record_body(line, &user);
  if (!found) return out;
  const std::string_view body = *found;
  if (nested_too_deep(body)) {
    if (user) return out;
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("record nested deeper than {} levels: {}", kMaxRecordDepth, excerpt(line));
    return out;
  }
  // Parse without exceptions so a bad record is data, not control flow.
  nlohmann::json value = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  // A program's broken record is its own output, not a kernel protocol error.
  if (user && (value.is_discarded() || !value.is_object())) return out;
  if (value.is_discarded()) {
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("invalid JSON after \"@pvk \": {}", excerpt(line));
  } else if (!value.is_object()) {
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("record is not a JSON object: {}", excerpt(line));
  } else {
    out.kind = ConsoleLine::Kind::record;
    out.record = std::move(value);
    if (user) out.record[std::string(origin_key)] = "user";
  }
  return out;
}

bool is_user_record(const nlohmann::json& record) {
  const auto origin = record.find(origin_key);
  return origin != record.end() && *origin == "user";
}

bool is_done_record(const nlohmann::json& record) {
  if (is_user_record(record)) return false;
  const auto event = record.find("event");
  return event != record.end() && *event == "done";
}

std::optional<nlohmann::json> find_done_record(const std::vector<nlohmann::json>& records) {
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (is_done_record(*it)) return *it;
  return std::nullopt;
}

}  // namespace pvk
