#include "pvk/bench/provenance.hpp"

#include "pvk/process.hpp"

#include <chrono>
#include <ctime>
#include <exception>

namespace pvk::bench {

std::string utc_time(const char* pattern) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, pattern, &tm);
  return buf;
}

std::string first_line(const std::vector<std::string>& argv) {
  ProcessOptions options;
  options.argv = argv;
  options.timeout = std::chrono::seconds{10};
  std::string first;
  bool seen = false;
  try {
    const ProcessResult r = run_process(options, [&](std::string_view line) {
      if (!seen) first = line;
      seen = true;
      return LineAction::keep_going;
    });
    if (r.exit_code != 0) return "";
  } catch (const std::exception&) {
    return "";
  }
  return first;
}

std::string commit_of(const std::filesystem::path& source) {
  const std::string rev = first_line({"git", "-C", source.string(), "rev-parse", "--short=12", "HEAD"});
  if (rev.empty()) return "";
  const std::string dirty = first_line({"git", "-C", source.string(), "status", "--porcelain", "--untracked-files=no"});
  return dirty.empty() ? rev : rev + "-dirty";
}

}  // namespace pvk::bench
