// `pvk fuzz`: the long form of the fuzzing suites (docs/reliability.md, "Fuzzing").
//   host (default): builds the libFuzzer targets of tests/fuzz if needed and
//     runs each for --seconds, or until --runs executions (default 10^6),
//     printing executions per target; a crash is saved and fails the command.
//   --guest: boots the in-guest syscall fuzzer (bench=sysfuzz:seed=S:iters=N)
//     with each backend the default matrix boots whole (pvk::fuzzed_backends():
//     natively and under Xen), or those --mmu names.
// main() registers it and hands over once parsed:
//   FuzzCommand fuzz(app, paths.build_dir, paths.source_dir, &cancelled);
//   ...
//   if (fuzz.selected()) return fuzz.run();
#pragma once

#include "pvk/backends.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pvk::cli {

class FuzzCommand {
 public:
  // The paths are read when run() is called (after parsing fills them).
  FuzzCommand(CLI::App& app, const std::filesystem::path& build_dir, const std::filesystem::path& source_dir,
              const std::atomic<bool>* cancel);
  bool selected() const { return command_->parsed(); }
  // 0: every target and boot passed; 1: a crash or a failed boot; 2: could not run.
  int run();

 private:
  int run_host();
  int run_guest();

  CLI::App* command_;
  const std::filesystem::path& build_dir_;
  const std::filesystem::path& source_dir_;
  const std::atomic<bool>* cancel_;
  int seconds_ = 0;  // 0: until runs_ executions
  uint64_t runs_ = 1'000'000;
  std::vector<std::string> targets_;  // empty: all
  bool guest_ = false;
  uint64_t seed_ = 1;
  uint64_t iters_ = 1'000'000;
  std::vector<std::string> mmus_ = fuzzed_backends();
  int timeout_s_ = 3600;
};

}  // namespace pvk::cli
