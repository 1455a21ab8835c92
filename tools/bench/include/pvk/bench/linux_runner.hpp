// Linux side by side: the runner for the platforms linux-native and
// linux-xen (pvk/linux.hpp). Debian's kernel boots with the static bench
// driver as init and the boot's bench= items; its records land in the same
// results as pvk's (the runner writes the boot and done records Linux does
// not print: platform linux-native / linux-xen, mmu "linux").
#pragma once

#include "pvk/bench/runner.hpp"

#include <atomic>
#include <filesystem>
#include <string>

namespace pvk::bench {

// The Linux platforms the harness knows, and the pvk platform each sits
// beside (--linux adds linux-X next to X).
inline constexpr const char* linux_platforms[][2] = {{"native", "linux-native"}, {"xen", "linux-xen"}};

// The machine every boot shares: tools_dir (linux/mklinux.sh), linux_cache_dir
// (<build>/cache/linux), user_dir (the static bench and kbworker, <build>/user),
// xen_gz, xen_cache_dir, icount, cancel.
using LinuxRunnerOptions = RunMachine;

class LinuxRunner : public BootRunner {
 public:
  explicit LinuxRunner(LinuxRunnerOptions options) : options_(std::move(options)) {}
  BootOutcome boot(const Config& config, const Boot& boot) override;

 private:
  LinuxRunnerOptions options_;
};

}  // namespace pvk::bench
