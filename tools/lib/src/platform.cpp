#include "pvk/platform.hpp"

#include <stdexcept>

namespace pvk {

std::string_view platform_name(Platform platform) {
  switch (platform) {
    case Platform::native: return "native";
    case Platform::xen: return "xen";
  }
  throw std::invalid_argument("unknown platform");
}

std::optional<Platform> parse_platform(std::string_view name) {
  if (name == "native") return Platform::native;
  if (name == "xen") return Platform::xen;
  return std::nullopt;
}

std::chrono::seconds default_timeout(Platform platform) {
  return platform == Platform::xen ? std::chrono::seconds{300} : std::chrono::seconds{60};
}

std::vector<std::string> qemu_argv(Platform platform, const QemuConfig& config) {
  return platform == Platform::xen ? xen_argv(config) : native_argv(config);
}

}  // namespace pvk
