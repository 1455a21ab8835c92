// The xl platform: pvk as a Xen PV domU created by `xl` in a Xen dom0. The
// work is done by one small driver, tools/xl/pvk-xl.sh, that runs on a real
// Xen host (`pvk run --platform xl`) and, unchanged, inside the nested dom0
// of the xen-domu platform. Its output is line-tagged:
//   "[pvk] TEXT"      a line of pvk's console
//   "[pvk-xl] TEXT"   the driver's messages, ending with
//   "[pvk-xl] result shutdown=REASON status=STATUS"
#pragma once

#include "pvk/platform.hpp"
#include "pvk/process.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

inline constexpr std::string_view xl_console_tag = "[pvk] ";
inline constexpr std::string_view xl_driver_tag = "[pvk-xl] ";
// The driver's path in the source tree, relative to tools/.
inline constexpr std::string_view xl_driver_path = "xl/pvk-xl.sh";

// A line of pvk's console, without the tag; nullopt for any other line.
std::optional<std::string_view> xl_console_text(std::string_view line);

// The driver's closing line: how xl saw the domain end (poweroff, crash,
// reboot, ..., destroyed, timeout, none) and the status of pvk's last done
// record as the driver read it (pass, fail, none).
struct XlResult {
  std::string shutdown;
  std::string status;
};
std::optional<XlResult> parse_xl_result(std::string_view line);

// Driver lines worth repeating in a failure summary (its errors and xl's
// own messages, which it quotes when the run went wrong).
bool is_xl_trouble(std::string_view line);

// The domain's end as the platform's verdict: poweroff passes, crash fails,
// anything else (reboot, destroyed, timeout, no result at all) says nothing.
PlatformExit xl_exit(const std::optional<XlResult>& result, const ProcessResult& process);

// How the driver is run: `sh DRIVER --timeout S [--vcpus N] [--ramdisk CPIO] KERNEL PARAMS`
// (the ramdisk: the root filesystem archive, empty for none). The driver
// destroys the domain after `domain_timeout`; the runner's own deadline
// should leave it time to do so and report.
std::vector<std::string> xl_driver_argv(const std::filesystem::path& driver, const std::filesystem::path& kernel,
                                        const std::string& params, std::chrono::seconds domain_timeout,
                                        unsigned vcpus = 1, const std::filesystem::path& ramdisk = {});

}  // namespace pvk
