#include "pvk/record.hpp"

#include <fmt/format.h>

namespace pvk {

ConsoleLine parse_console_line(std::string_view line) {
  ConsoleLine out;
  if (!line.starts_with(record_prefix)) return out;

  const std::string_view body = line.substr(record_prefix.size());
  // Parse without exceptions so a bad record is data, not control flow.
  nlohmann::json value = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("invalid JSON after \"@pvk \": {}", line);
  } else if (!value.is_object()) {
    out.kind = ConsoleLine::Kind::malformed;
    out.error = fmt::format("record is not a JSON object: {}", line);
  } else {
    out.kind = ConsoleLine::Kind::record;
    out.record = std::move(value);
  }
  return out;
}

bool is_done_record(const nlohmann::json& record) {
  const auto event = record.find("event");
  return event != record.end() && *event == "done";
}

std::optional<nlohmann::json> find_done_record(const std::vector<nlohmann::json>& records) {
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (is_done_record(*it)) return *it;
  return std::nullopt;
}

}  // namespace pvk
