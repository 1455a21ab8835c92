// Plots of a run, drawn by gnuplot from a generated script: fork time vs
// dirty pages (log-log), fork + child exit + parent rewrite vs dirty pages
// (fork_dirty_total), fork time and the totals vs density at one span
// (the sparse fork: fork_dirty_density, fork_dirty_density_total),
// mprotect cost vs pages (log-log), fault costs and the lmbench-style
// microbenchmarks (bars). Each as SVG and PNG.
#pragma once

#include "pvk/bench/results.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace pvk::bench {

struct PlotFiles {
  std::filesystem::path script;             // plots.gp (always written)
  std::vector<std::filesystem::path> data;  // *.dat
  std::vector<std::string> plots;           // names of the plots the script draws ("fork_dirty", ...)
};

// Writes the data files and the script into `dir` (created if needed); draws
// nothing. A plot without data in `results` is left out.
PlotFiles write_plot_script(const Results& results, const std::filesystem::path& dir);

// Runs gnuplot on the script. Returns "" on success (what gnuplot printed
// goes to `warnings`), else what went wrong (gnuplot missing, its errors).
std::string run_gnuplot(const PlotFiles& files, std::vector<std::string>& warnings);

}  // namespace pvk::bench
