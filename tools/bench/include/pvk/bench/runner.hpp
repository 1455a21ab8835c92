// Runs a plan: every boot, up to `jobs` at a time (heaviest first), with a
// progress display, collecting each boot's records and verdict. A failed
// boot is recorded and the others go on.
#pragma once

#include "pvk/bench/matrix.hpp"
#include "pvk/bench/results.hpp"
#include "pvk/run.hpp"  // RunMachine

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace pvk::bench {

// What one boot observed.
struct BootOutcome {
  bool started = false;  // false: it could not start (reason says why)
  bool pass = false;
  std::string reason;
  std::chrono::milliseconds elapsed{0};
  std::vector<std::string> lines;    // the console
  std::vector<std::string> trouble;  // the platform's complaints (Xen's)
};

}  // namespace pvk::bench

namespace pvk {
struct RunResult;
}

namespace pvk::bench {

// A finished run_kernel() as the harness records it (every runner's last step).
BootOutcome outcome_of(RunResult&& result);

// One boot's run_kernel options: the shared machine, with the boot's
// command line, timeout, memory and CPUs. A machine with more than one CPU
// runs without -icount, in wall time: QEMU's icount executes the vCPUs
// round-robin in one host thread, where a CPU's turn comes at QEMU's
// granularity and another CPU's IPI waits for it — measured at -smp 2, the
// second CPU never took the scheduler's IPI and not one shootdown crossed
// (docs/benchmarks.md, "Timing on QEMU").
RunOptions boot_run_options(const RunMachine& machine, const Boot& boot);

// Boots one configuration with one boot's command line. The platform seam:
// pvk under QEMU (native, xen) now; Linux later.
class BootRunner {
 public:
  virtual ~BootRunner() = default;
  virtual BootOutcome boot(const Config& config, const Boot& boot) = 0;
};

// The machine every boot shares (xen_gz, xen_cache_dir, icount, cancel) and the kernel.
struct QemuRunnerOptions : RunMachine {
  std::filesystem::path kernel;  // pvk.elf
  // The machine to boot it on when the configuration's platform names an
  // image rather than a machine (native-builtin: pvk-builtin.elf, natively).
  std::string boots_as;
};

// pvk through pvk::run_kernel (the same boot and verdict as `pvk run`).
class QemuRunner : public BootRunner {
 public:
  explicit QemuRunner(QemuRunnerOptions options) : options_(std::move(options)) {}
  BootOutcome boot(const Config& config, const Boot& boot) override;

 private:
  QemuRunnerOptions options_;
};

// Hands each boot to the runner registered for its configuration's
// platform: QemuRunner for native and xen today; a Linux runner registers
// for linux-native / linux-xen later without the matrix or reports changing.
class PlatformRunners : public BootRunner {
 public:
  void add(std::string platform, BootRunner& runner) { runners_.emplace_back(std::move(platform), &runner); }
  BootOutcome boot(const Config& config, const Boot& boot) override;

 private:
  std::vector<std::pair<std::string, BootRunner*>> runners_;
};

struct ExecuteOptions {
  int jobs = 1;
  const std::atomic<bool>* cancel = nullptr;
  std::filesystem::path log_dir;  // each boot's console goes here ("" = nowhere)
  std::filesystem::path out_dir;  // BootRecord::log is relative to this
  // Progress lines; the default writes to stderr (and keeps a live status
  // line there when it is a terminal).
  std::function<void(const std::string& line)> progress;
};

// Runs every boot of the plan. Returns configurations, boots and records
// (not aggregated). Boots left when `cancel` is set are recorded as not run.
Results execute(const Plan& plan, BootRunner& runner, const ExecuteOptions& options);

// "12 s", "3:05", "1:02:03"
std::string clock_text(double seconds);

}  // namespace pvk::bench
