// Plots: data files and a gnuplot script for the plots that have data; if
// gnuplot is installed, it draws every one as SVG and PNG.
#include "pvk/bench/plot.hpp"
#include "pvk/bench/plot_questions.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

// The end of a test that wrote plots into dir: gnuplot draws files without a
// problem or a warning, each of `plots` as an SVG and a PNG of some size, and
// dir goes. Skips the test where gnuplot cannot run.
void expect_drawn(const PlotFiles& files, const fs::path& dir, const std::vector<std::string>& plots) {
  std::vector<std::string> warnings;
  const std::string problem = run_gnuplot(files, warnings);
  if (problem.find("cannot run gnuplot") != std::string::npos) {
    fs::remove_all(dir);
    GTEST_SKIP() << problem;
  }
  EXPECT_EQ(problem, "");
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  for (const auto& name : plots)
    for (const char* ext : {".svg", ".png"}) EXPECT_GT(fs::file_size(dir / (name + ext)), 1000u) << name << ext;
  fs::remove_all(dir);
}

TEST(Plots, ScriptAndData) {
  Results r;
  long k = 0;  // the configurations' fork_dirty lines differ, so none merges with another
  for (const char* id : {"native mmu=native", "xen mmu=batched", "xen mmu=wrpt"}) {
    r.configs.push_back(config_from_id(id));
    ++k;
    for (long pages : {1280, 12800})
      r.records.push_back(sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), k * pages * 100,
                                                k * pages * 90, k * pages * 120, 1)));
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
  EXPECT_NE(fork.find("12800 2.56 2.304 3.072\n"), std::string::npos) << fork;  // ms, xen/batched
  const std::string bars = read(dir / "lmbench.dat");
  EXPECT_NE(bars.find("category \"native\" \"xen/batched\" \"xen/wrpt\"\n\"getpid\" 0.1 0.1 0.1\n"), std::string::npos) << bars;

  expect_drawn(files, dir, files.plots);
}

TEST(Plots, ForkDirtyTotals) {
  Results r;
  long k = 0;
  for (const char* id : {"xen mmu=batched", "xen mmu=batched ptshare=on"}) {
    r.configs.push_back(config_from_id(id));
    ++k;
    for (long pages : {1280, 12800})
      r.records.push_back(sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), k * pages * 100,
                                                k * pages * 90, k * pages * 120, 1, 0, true,
                                                fmt::format(R"(,"total_median":{},"total_min":{},"total_max":{})",
                                                            pages * 1000, pages * 900, pages * 1100))));
  }
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-total-test-" + std::to_string(::getpid()));
  const PlotFiles files = write_plot_script(r, dir);
  // The defaults alone, then ptshare=on beside its twin; the totals coincide
  // (one line of both names), the fork times do not.
  EXPECT_EQ(files.plots, (std::vector<std::string>{"fork_dirty", "fork_dirty_ptshare", "fork_dirty_total",
                                                   "fork_dirty_total_ptshare"}));
  const std::string script = read(files.script);
  EXPECT_NE(script.find("set output \"fork_dirty_total.svg\""), std::string::npos);
  EXPECT_NE(read(dir / "fork_dirty_ptshare.dat").find("# xen/batched ptshare=on\n"), std::string::npos);
  const std::string total = read(dir / "fork_dirty_total_ptshare.dat");
  EXPECT_NE(total.find("# xen/batched = xen/batched ptshare=on\n"), std::string::npos) << total;
  EXPECT_NE(total.find("12800 12.8 11.52 14.08\n"), std::string::npos) << total;  // ms
  fs::remove_all(dir);
}

// The sparse fork: ms per fork against density (100 / stride) at one span, a line
// per configuration; the curves against pages keep to stride=1.
TEST(Plots, ForkDirtyAgainstDensity) {
  Results r;
  for (const char* id : {"native mmu=native", "xen mmu=batched", "xen mmu=wrpt ptshare=on"}) {
    r.configs.push_back(config_from_id(id));
    r.records.push_back(sample(id, bench_line("fork_dirty", R"("pages":1280,"stride":1)", 1000000, 900000, 1200000, 1)));
    for (long stride : {1, 2, 10, 100, 512}) {
      const long ns = (id == std::string("xen mmu=batched") ? 2 : 1) * (12800000 / stride + 100000);
      r.records.push_back(sample(
          id, bench_line("fork_dirty", fmt::format(R"("pages":12800,"stride":{})", stride), ns, ns * 9 / 10, ns * 12 / 10,
                         1, 0, true,
                         fmt::format(R"(,"total_median":{},"total_min":{},"total_max":{})", 3 * ns, 2 * ns, 4 * ns))));
    }
  }
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-density-test-" + std::to_string(::getpid()));
  const PlotFiles files = write_plot_script(r, dir);
  EXPECT_EQ(files.plots,
            (std::vector<std::string>{"fork_dirty", "fork_dirty_ptshare", "fork_dirty_total", "fork_dirty_total_ptshare",
                                      "fork_dirty_density", "fork_dirty_density_ptshare", "fork_dirty_density_total",
                                      "fork_dirty_density_total_ptshare"}));
  const std::string script = read(files.script);
  EXPECT_NE(script.find("set output \"fork_dirty_density.svg\""), std::string::npos);
  EXPECT_NE(script.find("set output \"fork_dirty_density_total.png\""), std::string::npos);
  EXPECT_NE(script.find("set title \"fork after dirtying every stride-th page (parent side) over 12800 pages: the "
                        "backends at their defaults\\nwall time"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("set xlabel \"density: % of each L1 table's entries dirtied (100 / stride)\""), std::string::npos);
  EXPECT_NE(script.find("index 0 using 1:2:3:4 with yerrorlines lc rgb \"#0072b2\" pt 7 pointsize 0.8 title "
                        "\"xen/wrpt ptshare=on\""),
            std::string::npos)
      << script;
  // Density in percent, sparsest first; ms per fork with the reps' spread.
  const std::string density = read(dir / "fork_dirty_density.dat");
  EXPECT_NE(density.find("# xen/batched\n# density_percent per_op_ms min max\n0.195312 0.25 0.225 0.3\n1 0.456 "),
            std::string::npos)
      << density;
  EXPECT_NE(density.find("100 12.9 11.61 15.48\n"), std::string::npos) << density;
  const std::string total = read(dir / "fork_dirty_density_total.dat");
  EXPECT_NE(total.find("100 38.7 25.8 51.6\n"), std::string::npos) << total;
  // Against pages: 1280 and 12800 at stride=1 only.
  const std::string pages = read(dir / "fork_dirty.dat");
  EXPECT_NE(pages.find("# native\n# pages per_op_ms min max\n1280 1 0.9 1.2\n12800 12.9 11.61 15.48\n\n"),
            std::string::npos)
      << pages;

  expect_drawn(files, dir, {"fork_dirty_density", "fork_dirty_density_total"});
}

// A span measured at one stride only draws no density plot.
TEST(Plots, NoDensityPlotWithoutTwoStrides) {
  Results r;
  r.configs.push_back(config_from_id("xen mmu=batched"));
  for (long pages : {1280, 12800})
    r.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", fmt::format(R"("pages":{},"stride":1)", pages),
                                                             pages * 100, pages * 90, pages * 120, 1)));
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-nodensity-test-" + std::to_string(::getpid()));
  EXPECT_EQ(write_plot_script(r, dir).plots, (std::vector<std::string>{"fork_dirty"}));
  fs::remove_all(dir);
}

// One question per plot: the defaults, then each set of switches with every
// varied configuration beside its twin.
TEST(Plots, QuestionsPutEachVariationBesideItsTwin) {
  Results r;
  for (const char* id : {"native mmu=native", "native mmu=native pvpatch=off", "xen mmu=batched",
                         "xen mmu=batched pvpatch=off", "xen mmu=wrpt", "xen mmu=wrpt ptshare=on",
                         "xen mmu=direct pte=flags"})
    r.configs.push_back(config_from_id(id));
  std::vector<std::string> ids;
  for (const auto& c : r.configs) ids.push_back(c.id());
  const auto q = plot_questions(r, ids);
  ASSERT_EQ(q.size(), 4u);
  auto id = [](const char* text) { return config_from_id(text).id(); };
  EXPECT_EQ(q[0].suffix, "");
  EXPECT_EQ(q[0].heading, "the backends at their defaults");
  EXPECT_EQ(q[0].ids, (std::vector<std::string>{id("native mmu=native"), id("xen mmu=batched"), id("xen mmu=wrpt")}));
  EXPECT_EQ(q[1].suffix, "_pvpatch");
  EXPECT_EQ(q[1].heading, "pvpatch=off against the defaults");
  EXPECT_EQ(q[1].ids, (std::vector<std::string>{id("native mmu=native"), id("native mmu=native pvpatch=off"),
                                                id("xen mmu=batched"), id("xen mmu=batched pvpatch=off")}));
  EXPECT_EQ(q[2].suffix, "_ptshare");
  EXPECT_EQ(q[2].ids, (std::vector<std::string>{id("xen mmu=wrpt"), id("xen mmu=wrpt ptshare=on")}));
  // No twin in the run: the variation stands alone.
  EXPECT_EQ(q[3].suffix, "_pte");
  EXPECT_EQ(q[3].ids, (std::vector<std::string>{id("xen mmu=direct pte=flags")}));
}

// The script's plots, each the text from its "reset" to the next.
std::vector<std::string> plot_blocks(const std::string& script) {
  std::vector<std::string> out;
  for (size_t at = script.find("reset\n"); at != std::string::npos;) {
    const size_t next = script.find("reset\n", at + 1);
    out.push_back(script.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return out;
}

// Every `KEY VALUE` of a block ("lc rgb \"#...\"", "pt 7").
std::vector<std::string> values_after(const std::string& block, const std::string& key) {
  std::vector<std::string> out;
  for (size_t at = block.find(key); at != std::string::npos; at = block.find(key, at + 1)) {
    const size_t from = at + key.size();
    out.push_back(block.substr(from, block.find_first_of(" ,\n", from) - from));
  }
  return out;
}

bool all_different(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) == v.end();
}

// Fourteen backends' worth of lines: two plots, and in each no colour or
// marker twice; the bars likewise.
TEST(Plots, NoColourOrMarkerTwiceInAPlot) {
  Results r;
  for (int i = 0; i < 14; ++i) {
    r.configs.push_back(config_from_id(fmt::format("xen mmu=b{}", i)));
    const std::string cid = r.configs.back().id();
    for (long pages : {1280, 12800})
      r.records.push_back(sample(cid, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), (i + 1) * pages * 100,
                                                 (i + 1) * pages * 90, (i + 1) * pages * 120, 1)));
    r.records.push_back(sample(cid, bench_line("getpid", R"("iters":10)", 1000 * (i + 1), 900, 1100 * (i + 1), 10)));
  }
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-colours-test-" + std::to_string(::getpid()));
  const PlotFiles files = write_plot_script(r, dir);
  EXPECT_EQ(files.plots, (std::vector<std::string>{"fork_dirty", "fork_dirty_2", "lmbench", "lmbench_2"}));
  const std::string script = read(files.script);
  size_t lines = 0;
  for (const auto& block : plot_blocks(script)) {
    const auto colours = values_after(block, "lc rgb ");
    EXPECT_FALSE(colours.empty()) << block;
    EXPECT_TRUE(all_different(colours)) << block;
    EXPECT_TRUE(all_different(values_after(block, " pt "))) << block;
    lines += colours.size();
  }
  EXPECT_EQ(lines, 2u * (14 + 14));  // every series drawn, in SVG and PNG
  fs::remove_all(dir);
}

// Series that would lie on top of each other are one line with both names;
// the caption says the currency.
TEST(Plots, CoincidingSeriesBecomeOneLineAndTheCaptionNamesTheCurrency) {
  Results r;
  r.run["icount"] = "shift=0,sleep=off";
  for (const char* id : {"native mmu=native", "native-builtin mmu=native", "xen mmu=batched"}) {
    r.configs.push_back(config_from_id(id));
    const long k = id == std::string("xen mmu=batched") ? 3 : 1;
    for (long pages : {1280, 12800})
      r.records.push_back(sample(r.configs.back().id(), bench_line("fork_dirty", fmt::format(R"("pages":{})", pages),
                                                                    k * pages * 100, k * pages * 90, k * pages * 120, 1)));
  }
  aggregate(r);
  const fs::path dir = fs::temp_directory_path() / ("pvk-plot-merge-test-" + std::to_string(::getpid()));
  const PlotFiles files = write_plot_script(r, dir);
  const std::string data = read(dir / "fork_dirty.dat");
  EXPECT_NE(data.find("# native = native-builtin/native\n"), std::string::npos) << data;
  EXPECT_NE(data.find("# xen/batched\n"), std::string::npos) << data;
  EXPECT_EQ(data.find("# native-builtin/native\n"), std::string::npos) << data;
  const std::string script = read(files.script);
  EXPECT_NE(script.find("title \"native = native-builtin/native\""), std::string::npos);
  EXPECT_NE(script.find("at their defaults\\nvirtual time (QEMU -icount: every instruction 1 ns)\""),
            std::string::npos)
      << script;
  expect_drawn(files, dir, files.plots);
}

}  // namespace
}  // namespace pvk::bench
