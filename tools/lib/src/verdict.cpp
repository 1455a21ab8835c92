#include "pvk/verdict.hpp"

#include "pvk/record.hpp"

#include <fmt/format.h>

namespace pvk {
namespace {

// The kernel may say why it failed in the done record; quote it if so.
std::string fail_detail(const nlohmann::json& done) {
  for (const char* key : {"reason", "error", "message"}) {
    const auto it = done.find(key);
    if (it != done.end() && it->is_string()) return fmt::format(": {}", it->get<std::string>());
  }
  return "";
}

std::string protocol_summary(const std::vector<std::string>& errors) {
  std::string text = fmt::format("protocol error: {}", errors.front());
  if (errors.size() > 1) text += fmt::format(" (and {} more)", errors.size() - 1);
  return text;
}

}  // namespace

Verdict decide(const Evidence& ev) {
  const std::optional<nlohmann::json> done = find_done_record(ev.records);
  const nlohmann::json status = done ? done->value("status", nlohmann::json{}) : nlohmann::json{};

  if (ev.timed_out) {
    if (!done)
      return {false, fmt::format("timed out after {} s without a done record (hang?)", ev.timeout.count())};
    if (status == "pass")
      return {false, fmt::format("kernel reported pass but did not shut the machine down "
                                 "(timed out after {} s)", ev.timeout.count())};
    return {false, fmt::format("kernel reported fail{}, then timed out after {} s",
                               fail_detail(*done), ev.timeout.count())};
  }
  if (!done) {
    std::string reason = fmt::format("no done record; {}", ev.exit.description);
    if (!ev.protocol_errors.empty()) reason += "; " + protocol_summary(ev.protocol_errors);
    return {false, reason};
  }
  if (!is_done_record(ev.records.back()))
    return {false, "records after the done record (done must be the last record)"};
  if (status == "fail") return {false, fmt::format("kernel reported fail{}", fail_detail(*done))};
  if (status != "pass")
    return {false, fmt::format("done record has status {}, expected \"pass\" or \"fail\"", status.dump())};
  if (ev.exit.verdict != ExitVerdict::pass)
    return {false, fmt::format("kernel reported pass but {}", ev.exit.description)};
  if (!ev.protocol_errors.empty()) return {false, protocol_summary(ev.protocol_errors)};
  return {true, "pass"};
}

}  // namespace pvk
