// `pvk calibrate`: boots the calibration item (bench/calibrate.cpp) natively
// and under Xen, in wall time and under -icount, and writes the cost
// profile (cost_profile.hpp) that explains what each event cost: this
// machine's TCG profile (bench/profiles/tcg.json), or with --icount the
// virtual-time one (every event at its own instructions). main() registers
// it and hands over once parsed:
//   pvk::bench::CalibrateCommand calibrate(app, paths.build_dir, paths.source_dir);
//   ...
//   if (calibrate.selected()) return calibrate.run();
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>

namespace pvk::bench {

class CalibrateCommand {
 public:
  CalibrateCommand(CLI::App& app, const std::filesystem::path& build_dir, const std::filesystem::path& source_dir);
  ~CalibrateCommand();
  bool selected() const;
  // 0: every boot passed and the profile was written; 1: a boot failed (the
  // profile has what the others timed); 2: the command could not run.
  int run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pvk::bench
