// A run's files: results.json, results.csv, summary.md and plots/ (gnuplot
// script, data, SVG and PNG).
#pragma once

#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace pvk::bench {

struct Written {
  std::filesystem::path json, csv, summary, plots_dir;
  std::vector<std::string> plots;  // plot names drawn (each .svg and .png)
  std::string summary_text;
  std::string plot_problem;  // "" when gnuplot drew everything
};

// Aggregates nothing: `results.rows` must be filled (aggregate()).
// A stable name, `latest`, beside the timestamped run directories.
void link_latest_run(const std::filesystem::path& out_dir);

// The summary on stdout; where everything went and which boots failed on
// stderr. Returns the number of failed boots.
size_t print_run_report(const Results& results, const Written& w, double wall_s);

Written write_outputs(const Results& results, const std::vector<RatioSpec>& specs, const std::filesystem::path& dir,
                      bool draw_plots);

}  // namespace pvk::bench
