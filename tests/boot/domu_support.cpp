#include "domu_support.hpp"

namespace pvk::boot_test {
namespace {

RunOptions options_for(Platform platform, const std::string& params) {
  RunOptions options;
  options.platform = platform;
  options.kernel = PVK_KERNEL_PATH;
  options.params = params;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  options.dom0_cache_dir = PVK_DOM0_CACHE_DIR;
  options.tools_dir = PVK_TOOLS_DIR;
  return options;
}

RunResult checked(const RunOptions& options) {
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

}  // namespace

RunResult boot_domu(const std::string& params) { return checked(options_for(Platform::xen_domu, params)); }

RunResult boot_libvirt(const std::string& params, const std::string& uri) {
  RunOptions options = options_for(Platform::native, params);
  options.via = Via::libvirt;
  options.libvirt_uri = uri;
  return checked(options);
}

}  // namespace pvk::boot_test
