#include "pvk/platform.hpp"

#include <stdexcept>

namespace pvk {

std::string_view platform_name(Platform platform) {
  switch (platform) {
    case Platform::native: return "native";
    case Platform::xen: return "xen";
    case Platform::xl: return "xl";
    case Platform::xen_domu: return "xen-domu";
    case Platform::linux_native: return "linux-native";
    case Platform::linux_xen: return "linux-xen";
  }
  throw std::invalid_argument("unknown platform");
}

std::optional<Platform> parse_platform(std::string_view name) {
  if (name == "native") return Platform::native;
  if (name == "xen") return Platform::xen;
  if (name == "xl") return Platform::xl;
  if (name == "xen-domu") return Platform::xen_domu;
  if (name == "linux-native") return Platform::linux_native;
  if (name == "linux-xen") return Platform::linux_xen;
  return std::nullopt;
}

std::chrono::seconds default_timeout(Platform platform) {
  switch (platform) {
    case Platform::native: return std::chrono::seconds{60};
    case Platform::xen: return std::chrono::seconds{300};
    case Platform::xl: return std::chrono::seconds{300};
    // Xen and a Linux dom0 boot first (about 20 s alone, on an idle machine).
    case Platform::xen_domu: return std::chrono::seconds{420};
    // Linux boots in ~5 s natively, Xen and Linux as dom0 in ~20 s (TCG).
    case Platform::linux_native: return std::chrono::seconds{120};
    case Platform::linux_xen: return std::chrono::seconds{300};
  }
  return std::chrono::seconds{300};
}

std::string qemu_accel(const QemuConfig& config) {
  if (config.smp < 1) throw std::invalid_argument("a machine needs at least one CPU (smp >= 1)");
  if (config.smp == 1) return "tcg";
  return config.icount.empty() ? "tcg,thread=multi" : "tcg,thread=single";
}

void append_clock_args(std::vector<std::string>& argv, const QemuConfig& config) {
  if (config.icount.empty()) return;
  // In virtual time the RTC must tick with the guest's instructions too:
  // by default it follows the host's clock, and Xen reads the CMOS clock at
  // boot by spinning until the RTC's update-in-progress edge, so how many
  // instructions it spins (and so the phase of every later timer, and which
  // vCPU wins each race) depended on the host's speed.
  argv.insert(argv.end(), {"-icount", config.icount, "-rtc", "clock=vm"});
}

std::vector<std::string> qemu_argv(Platform platform, const QemuConfig& config) {
  return platform == Platform::xen ? xen_argv(config) : native_argv(config);
}

}  // namespace pvk
