#include "pvk/bench/linux_runner.hpp"
#include "pvk/bench/runner.hpp"

#include "pvk/linux.hpp"
#include "pvk/platform.hpp"
#include "pvk/run.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace pvk::bench {

BootOutcome LinuxRunner::boot(const Config& config, const Boot& boot) {
  const auto platform = parse_platform(config.platform);
  if (!platform || !is_linux(*platform))
    throw std::runtime_error(fmt::format("the Linux runner boots linux-native and linux-xen, not {}", config.platform));
  // Linux takes pvk's command line as it is: bench= becomes init's
  // arguments, any other word goes to Linux (the matrix gives a Linux
  // configuration no pvk switches).
  RunOptions run = boot_run_options(options_, boot);
  run.platform = *platform;
  return outcome_of(run_kernel(run));
}

}  // namespace pvk::bench
