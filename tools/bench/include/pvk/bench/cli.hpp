// The `bench` and `compare` subcommands of pvk-cli. main() registers them
// and, once parsed, hands over when one of them was chosen:
//   pvk::bench::Commands bench_commands(app, paths.build_dir, paths.source_dir);
//   ...
//   if (bench_commands.selected()) return bench_commands.run();
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>

namespace pvk::bench {

class Commands {
 public:
  // The paths are read when run() is called (after parsing fills them).
  Commands(CLI::App& app, const std::filesystem::path& build_dir, const std::filesystem::path& source_dir);
  ~Commands();
  bool selected() const;
  // Exit status: 0 every boot passed, 1 a boot failed (or was cancelled),
  // 2 the command could not run.
  int run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pvk::bench
