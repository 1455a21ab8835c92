// `pvk backends`: the kernel's MMU backends, one line each, read from
// pvops/backends/backends.inc (pvk::backends()): what mmu= accepts, where
// each runs, how its faults lock, the boot parameters that tune it and what
// the bench matrix and pvk fuzz --guest do with it. --names prints only the
// names, one per line, for scripts.
#pragma once

#include <CLI/CLI.hpp>

namespace pvk::cli {

class BackendsCommand {
 public:
  explicit BackendsCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int run() const;

 private:
  CLI::App* command_;
  bool names_only_ = false;
};

}  // namespace pvk::cli
