#include "pvk/xl.hpp"

#include <fmt/format.h>

namespace pvk {

std::optional<std::string_view> xl_console_text(std::string_view line) {
  if (!line.starts_with(xl_console_tag)) return std::nullopt;
  return line.substr(xl_console_tag.size());
}

std::optional<XlResult> parse_xl_result(std::string_view line) {
  constexpr std::string_view prefix = "[pvk-xl] result ";
  if (!line.starts_with(prefix)) return std::nullopt;
  XlResult result;
  std::string_view rest = line.substr(prefix.size());
  while (!rest.empty()) {
    const size_t end = rest.find(' ');
    const std::string_view word = rest.substr(0, end);
    if (word.starts_with("shutdown=")) result.shutdown = word.substr(9);
    if (word.starts_with("status=")) result.status = word.substr(7);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  if (result.shutdown.empty() || result.status.empty()) return std::nullopt;
  return result;
}

bool is_xl_trouble(std::string_view line) {
  return line.starts_with("[pvk-xl] error") || line.starts_with("[pvk-xl] xl: ") ||
         line.starts_with("[pvk-xl] libvirt: ");
}

PlatformExit xl_exit(const std::optional<XlResult>& result, const ProcessResult& process) {
  if (!result) {
    if (process.term_signal != 0)
      return {ExitVerdict::none,
              fmt::format("the xl driver was killed by signal {} before it reported", process.term_signal)};
    return {ExitVerdict::none, fmt::format("the xl driver ended (status {}) without a result", process.exit_code)};
  }
  const std::string& how = result->shutdown;
  if (how == "poweroff") return {ExitVerdict::pass, "the domU powered off"};
  if (how == "crash") return {ExitVerdict::fail, "the domU crashed (SCHEDOP_shutdown crash, or Xen killed it)"};
  if (how == "timeout") return {ExitVerdict::none, "the domU was destroyed when the xl driver's time ran out"};
  if (how == "none") return {ExitVerdict::none, "the domU did not run (see the xl driver's messages)"};
  return {ExitVerdict::none, fmt::format("the domU ended with shutdown reason {}", how)};
}

std::vector<std::string> xl_driver_argv(const std::filesystem::path& driver, const std::filesystem::path& kernel,
                                        const std::string& params, std::chrono::seconds domain_timeout,
                                        unsigned vcpus, const std::filesystem::path& ramdisk) {
  std::vector<std::string> argv{"sh", driver.string(), "--timeout", std::to_string(domain_timeout.count())};
  if (vcpus > 1) argv.insert(argv.end(), {"--vcpus", std::to_string(vcpus)});
  if (!ramdisk.empty()) argv.insert(argv.end(), {"--ramdisk", std::filesystem::absolute(ramdisk).string()});
  argv.insert(argv.end(), {"--", std::filesystem::absolute(kernel).string(), params});
  return argv;
}

}  // namespace pvk
