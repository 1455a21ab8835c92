// Plots: data files and a gnuplot script for the plots that have data; if
// gnuplot is installed, it draws every one as SVG and PNG.
#include "pvk/bench/plot.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;
using testing::bench_line;
using testing::sample;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Plots, ScriptAndData) {
  Results r;
  for (const char* id : {"native mmu=native", "xen mmu=batched", "xen mmu=wrpt"}) {
    r.configs.push_back(config_from_id(id));
    for (long pages : {1280, 12800})
      r.records.push_back(sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), pages * 100, pages * 90, pages * 120, 1)));
    r.records.push_back(sample(id, bench_line("getpid", R"("iters":10)", 1000, 900, 1100, 10)));
    r.records.push_back(sample(id, bench_line("fault_write", R"("pages":16)", 16000, 15000, 17000, 16)));
  }
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-test-" + std::to_string(::getpid()));
  const PlotFiles files = write_plot_script(r, dir);
  EXPECT_EQ(files.plots, (std::vector<std::string>{"fork_dirty", "faults", "lmbench"}));  // no mprotect data
  const std::string script = read(files.script);
  EXPECT_NE(script.find("set logscale xy"), std::string::npos);
  EXPECT_NE(script.find("set output \"fork_dirty.svg\""), std::string::npos);
  EXPECT_NE(script.find("set output \"fork_dirty.png\""), std::string::npos);
  EXPECT_NE(script.find("title \"xen/wrpt\""), std::string::npos);
  EXPECT_EQ(script.find("mprotect"), std::string::npos);
  const std::string fork = read(dir / "fork_dirty.dat");
  EXPECT_NE(fork.find("# xen/batched\n"), std::string::npos) << fork;
  EXPECT_NE(fork.find("12800 1.28 1.152 1.536\n"), std::string::npos) << fork;  // ms
  const std::string bars = read(dir / "lmbench.dat");
  EXPECT_NE(bars.find("category \"native\" \"xen/batched\" \"xen/wrpt\"\n\"getpid\" 0.1 0.1 0.1\n"), std::string::npos) << bars;

  std::vector<std::string> warnings;
  const std::string problem = run_gnuplot(files, warnings);
  if (problem.find("cannot run gnuplot") != std::string::npos) {
    fs::remove_all(dir);
    GTEST_SKIP() << problem;
  }
  EXPECT_EQ(problem, "");
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  for (const auto& name : files.plots)
    for (const char* ext : {".svg", ".png"}) EXPECT_GT(fs::file_size(dir / (name + ext)), 1000u) << name << ext;
  fs::remove_all(dir);
}

TEST(Plots, ForkDirtyTotals) {
  Results r;
  for (const char* id : {"xen mmu=batched", "xen mmu=batched ptshare=on"}) {
    r.configs.push_back(config_from_id(id));
    for (long pages : {1280, 12800})
      r.records.push_back(sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), pages * 100, pages * 90,
                                                pages * 120, 1, 0, true,
                                                fmt::format(R"(,"total_median":{},"total_min":{},"total_max":{})",
                                                            pages * 1000, pages * 900, pages * 1100))));
  }
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-total-test-" + std::to_string(::getpid()));
  const PlotFiles files = write_plot_script(r, dir);
  EXPECT_EQ(files.plots, (std::vector<std::string>{"fork_dirty", "fork_dirty_total"}));
  const std::string script = read(files.script);
  EXPECT_NE(script.find("set output \"fork_dirty_total.svg\""), std::string::npos);
  const std::string total = read(dir / "fork_dirty_total.dat");
  EXPECT_NE(total.find("# xen/batched ptshare=on\n"), std::string::npos) << total;
  EXPECT_NE(total.find("12800 12.8 11.52 14.08\n"), std::string::npos) << total;  // ms
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pvk::bench
