#include "backends.hpp"

#include "pvk/backends.hpp"

#include <fmt/format.h>

namespace pvk::cli {
namespace {

std::string_view role_text(BackendRole role) {
  switch (role) {
    case BackendRole::platform_default: return "default: the platform's backend; every benchmark; fuzzed";
    case BackendRole::full: return "every benchmark; fuzzed";
    case BackendRole::focused: return "fork_dirty and mprotect unless --mmu names it";
  }
  return "?";
}

}  // namespace

BackendsCommand::BackendsCommand(CLI::App& app) {
  command_ = app.add_subcommand("backends", "list the kernel's MMU backends (the values of mmu=)");
  command_->add_flag("--names", names_only_, "only the names, one per line");
}

int BackendsCommand::run() const {
  if (names_only_) {
    for (const BackendInfo& b : backends()) fmt::print("{}\n", b.name);
    return 0;
  }
  fmt::print("{:<10} {:<8} {:<12} {:<16} {}\n", "mmu", "platform", "faults", "tuned by", "bench matrix");
  for (const BackendInfo& b : backends())
    fmt::print("{:<10} {:<8} {:<12} {:<16} {}\n", b.name, backend_platform_name(b.platform),
               b.faults_take_kernel_lock ? "kernel lock" : "space lock",
               b.params.empty() ? "-" : fmt::format("{}", fmt::join(b.params, " ")), role_text(b.role));
  return 0;
}

}  // namespace pvk::cli
