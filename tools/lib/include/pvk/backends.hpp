// The kernel's MMU backends, as the host sees them: the rows of
// pvops/backends/backends.inc (the one list; docs/backends.md), so the CLI,
// the fuzzer and the bench matrix discover backends instead of naming them.
#pragma once

#include "pvk/platform.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace pvk {

// What the host does with a backend by default (backends.inc, "role").
enum class BackendRole {
  platform_default,  // mmu= not given on its platform; in the default matrix and fuzzed
  full,              // in the default matrix with every benchmark, and fuzzed
  focused,           // the default matrix boots it with the page-table benchmarks only
};

struct BackendInfo {
  std::string_view name;     // the mmu= value
  Platform platform;         // Platform::native, or Platform::xen for a Xen PV backend
  bool faults_take_kernel_lock;
  std::vector<std::string_view> params;  // the boot parameters that tune it
  BackendRole role;
  double weight;  // boot time against the platform's default (scheduling)

  bool takes(std::string_view param) const;
};

// Every backend, in the rows' order.
const std::vector<BackendInfo>& backends();
const BackendInfo* find_backend(std::string_view name);

// Names, in the rows' order: all of them; those of one platform; those of
// one platform the default matrix boots with every benchmark (Default and
// Full rows) or only with the page-table benchmarks (Focused rows); the
// ones pvk fuzz --guest boots by default (Default and Full, every platform);
// those a boot parameter tunes.
std::vector<std::string> backend_names();
std::vector<std::string> backends_on(Platform platform);
std::vector<std::string> matrix_backends(Platform platform);
std::vector<std::string> focused_backends(Platform platform);
std::vector<std::string> fuzzed_backends();
std::vector<std::string_view> backends_taking(std::string_view param);
// The platform's backend when mmu= is not given.
std::string default_backend(Platform platform);

// "Xen PV" / "native": where a backend runs, for listings.
std::string_view backend_platform_name(Platform platform);

}  // namespace pvk
