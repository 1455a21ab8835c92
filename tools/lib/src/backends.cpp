#include "pvk/backends.hpp"

#include <algorithm>
#include <stdexcept>

namespace pvk {
namespace {

// The row's words, as the host spells them.
namespace row {
constexpr Platform Native = Platform::native;
constexpr Platform XenPv = Platform::xen;
constexpr bool SpaceLock = false;
constexpr bool KernelLock = true;
constexpr BackendRole Default = BackendRole::platform_default;
constexpr BackendRole Full = BackendRole::full;
constexpr BackendRole Focused = BackendRole::focused;
}  // namespace row

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t start = text.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    text.remove_prefix(start);
    const size_t end = std::min(text.find(' '), text.size());
    out.push_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return out;
}

template <typename Keep>
std::vector<std::string> names_where(Keep keep) {
  std::vector<std::string> out;
  for (const BackendInfo& b : backends())
    if (keep(b)) out.emplace_back(b.name);
  return out;
}

bool in_matrix(const BackendInfo& b) { return b.role != BackendRole::focused; }

}  // namespace

bool BackendInfo::takes(std::string_view param) const {
  return std::find(params.begin(), params.end(), param) != params.end();
}

const std::vector<BackendInfo>& backends() {
  static const std::vector<BackendInfo> rows{
#define PVK_BACKEND(id, name, platform, faults, params, role, weight, make, finish) \
  BackendInfo{name, row::platform, row::faults, words(params), row::role, weight},
#include "pvops/backends/backends.inc"
#undef PVK_BACKEND
  };
  return rows;
}

const BackendInfo* find_backend(std::string_view name) {
  for (const BackendInfo& b : backends())
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> backend_names() {
  return names_where([](const BackendInfo&) { return true; });
}

std::vector<std::string> backends_on(Platform platform) {
  return names_where([&](const BackendInfo& b) { return b.platform == platform; });
}

std::vector<std::string> matrix_backends(Platform platform) {
  return names_where([&](const BackendInfo& b) { return b.platform == platform && in_matrix(b); });
}

std::vector<std::string> focused_backends(Platform platform) {
  return names_where([&](const BackendInfo& b) { return b.platform == platform && !in_matrix(b); });
}

std::vector<std::string> fuzzed_backends() { return names_where(in_matrix); }

std::vector<std::string_view> backends_taking(std::string_view param) {
  std::vector<std::string_view> out;
  for (const BackendInfo& b : backends())
    if (b.takes(param)) out.push_back(b.name);
  return out;
}

std::string default_backend(Platform platform) {
  for (const BackendInfo& b : backends())
    if (b.platform == platform && b.role == BackendRole::platform_default) return std::string(b.name);
  throw std::invalid_argument(std::string("no backend runs on ") + std::string(platform_name(platform)));
}

std::string_view backend_platform_name(Platform platform) { return platform == Platform::xen ? "Xen PV" : "native"; }

}  // namespace pvk
