// libFuzzer target: the host's console-line classifier (tools/lib record.cpp)
// on any bytes, as one line and split into lines the way a console reader
// splits them. It must never throw or crash; what it accepts as a record is
// a JSON object the tools can serialise again (results.json, logs).
#include <stdint.h>

#include <string_view>
#include <vector>

#include "pvk/record.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();  // a crash libFuzzer reports with the input
}

void classify(std::string_view line, std::vector<nlohmann::json>& records) {
  const pvk::ConsoleLine c = pvk::parse_console_line(line);
  switch (c.kind) {
    case pvk::ConsoleLine::Kind::text:
      check(!line.starts_with(pvk::record_prefix));
      break;
    case pvk::ConsoleLine::Kind::malformed:
      check(!c.error.empty() && c.error.size() < 2000);
      (void)nlohmann::json(c.error).dump();  // valid UTF-8, or this throws
      break;
    case pvk::ConsoleLine::Kind::record:
      check(c.record.is_object());
      (void)c.record.dump();  // throws on anything unserialisable
      (void)pvk::is_done_record(c.record);
      records.push_back(c.record);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<nlohmann::json> records;
  classify(all, records);
  for (size_t start = 0; start <= all.size();) {
    size_t end = all.find('\n', start);
    if (end == std::string_view::npos) end = all.size();
    classify(all.substr(start, end - start), records);
    start = end + 1;
  }
  if (auto done = pvk::find_done_record(records)) check(pvk::is_done_record(*done));
  return 0;
}
