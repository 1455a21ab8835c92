#include "pvk/record.hpp"

#include <fmt/format.h>

namespace pvk {

ConsoleLine parse_console_line(std::string_view line) {
  ConsoleLine out;
  const bool user = line.starts_with(user_record_prefix);
  if (!user && !line.starts_with(record_prefix)) return out;

  const std::string_view body = line.substr(user ? user_record_prefix.size() : record_prefix.size());
  // Parse without exceptions so a bad record is data, not control flow.
  nlohmann::json value = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  // A program's broken record is its own output, not a kernel protocol error.
  if (user && (value.is_discarded() || !value.is_object())) return out;
  if (value.is_discarded()) {
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("invalid JSON after \"@pvk \": {}", line);
  } else if (!value.is_object()) {
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("record is not a JSON object: {}", line);
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
