// pvk compare: matching rows of two runs, ratios, flags beyond the spread.
#include "pvk/bench/compare.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace pvk::bench {
namespace {

using testing::bench_line;
using testing::sample;

Results run(const std::string& batched_config, long batched, long wrpt, bool with_getpid) {
  Results r;
  r.configs = {config_from_id(batched_config), config_from_id("xen mmu=wrpt")};
  r.records.push_back(sample(batched_config, bench_line("fork_dirty", R"("pages":1280)", batched, batched - 100, batched + 100, 1)));
  r.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":1280)", wrpt, wrpt - 100, wrpt + 100, 1)));
  if (with_getpid) r.records.push_back(sample("xen mmu=wrpt", bench_line("getpid", R"("iters":10)", 100, 90, 110, 10)));
  aggregate(r);
  return r;
}

TEST(Compare, RatiosAndFlags) {
  const Results old_run = run("xen mmu=batched", 1000, 8000, true);
  // pgd_cache=on is the default: the same configuration as the old run's.
  const Results new_run = run("xen mmu=batched pgd_cache=on", 500, 8050, false);
  const Comparison c = compare_results(old_run, new_run);
  ASSERT_EQ(c.lines.size(), 2u);
  EXPECT_EQ(c.lines[0].bench, "fork_dirty");
  EXPECT_EQ(c.lines[0].config, "xen/batched pgd_cache=on");
  EXPECT_DOUBLE_EQ(c.lines[0].ratio, 0.5);
  EXPECT_EQ(c.lines[0].change, -1);  // 500 is below the old run's fastest rep (900)
  EXPECT_EQ(c.lines[1].change, 0);   // 8050 is within 7900..8100
  EXPECT_EQ(c.faster, 1);
  EXPECT_EQ(c.slower, 0);
  EXPECT_EQ(c.only_old, std::vector<std::string>{"getpid iters=10 @ xen/wrpt"});
  EXPECT_TRUE(c.only_new.empty());

  const std::string md = compare_markdown(c, "old.json", "new.json");
  // One boot a side: no interval, the old run's spread decides.
  EXPECT_NE(md.find("| fork_dirty | pages=1280 | xen/batched pgd_cache=on | 1.00 µs | 900 ns–1.10 µs | 500 ns | 0.50 | "
                    "-50.0 % (1 boot) | — | — | ▼ faster |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Only in the old run:\n- getpid iters=10 @ xen/wrpt"), std::string::npos) << md;
}

TEST(Compare, SlowerAndThroughJson) {
  const Results old_run = run("xen mmu=batched", 1000, 8000, false);
  const Results new_run = results_from_json(OJson::parse(to_json(run("xen mmu=batched", 1000, 9000, false)).dump()));
  const Comparison c = compare_results(old_run, new_run);
  EXPECT_EQ(c.slower, 1);
  EXPECT_EQ(c.lines[1].change, +1);
  EXPECT_DOUBLE_EQ(c.lines[1].ratio, 9000.0 / 8000);
}

// The sparse fork: fork_dirty's stride=1 is what a record without stride (an older
// run) measured; other strides are rows of their own.
TEST(Compare, ForkDirtyWithoutStrideIsStrideOne) {
  Results old_run = run("xen mmu=batched", 1000, 8000, false);
  Results new_run;
  new_run.configs = {config_from_id("xen mmu=batched")};
  new_run.records.push_back(
      sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280,"stride":1)", 1500, 1400, 1600, 1)));
  new_run.records.push_back(
      sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280,"stride":10)", 300, 290, 310, 1)));
  aggregate(new_run);
  const Comparison c = compare_results(old_run, new_run);
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0].params, "pages=1280 stride=1");
  EXPECT_DOUBLE_EQ(c.lines[0].ratio, 1.5);
  EXPECT_EQ(c.only_new, std::vector<std::string>{"fork_dirty pages=1280 stride=10 @ xen/batched"});
  EXPECT_EQ(c.only_old, std::vector<std::string>{"fork_dirty pages=1280 @ xen/wrpt"});
}

// Several boots a side: benchstat's way. getppid moves by noise only (`~`),
// fork_dirty is 20 % slower in every boot.
Results boots_run(const std::vector<long>& getppid, const std::vector<long>& fork) {
  Results r;
  r.configs = {config_from_id("xen mmu=batched")};
  for (size_t i = 0; i < getppid.size(); ++i) {
    const int rep = static_cast<int>(i) + 1;
    r.records.push_back(sample("xen mmu=batched", bench_line("getppid", R"("iters":1)", getppid[i], getppid[i] - 5,
                                                             getppid[i] + 5, 1), rep));
    r.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280)", fork[i], fork[i] - 5,
                                                             fork[i] + 5, 1), rep));
  }
  aggregate(r);
  return r;
}

TEST(Compare, IntervalPValueAndTilde) {
  const Results old_run = boots_run({1000, 1030, 990, 1010}, {5000, 5050, 4990, 5020});
  const Results new_run = boots_run({1020, 995, 1005, 1040}, {6000, 6040, 5990, 6060});
  const Comparison c = compare_results(old_run, new_run);
  ASSERT_EQ(c.lines.size(), 2u);
  const CompareLine& same = c.lines[0].bench == "getppid" ? c.lines[0] : c.lines[1];
  const CompareLine& slower = c.lines[0].bench == "getppid" ? c.lines[1] : c.lines[0];
  EXPECT_TRUE(same.stats.estimated);
  EXPECT_TRUE(same.stats.same());
  EXPECT_EQ(same.change, 0);
  EXPECT_EQ(slower.stats.method, "Welch t");  // two runs share no load: unpaired
  EXPECT_FALSE(slower.stats.same());
  EXPECT_LT(slower.stats.p, 0.001);
  EXPECT_GT(slower.stats.low, 1.15);
  EXPECT_LT(slower.stats.high, 1.25);
  EXPECT_EQ(slower.change, +1);
  EXPECT_EQ(c.slower, 1);
  const std::string md = compare_markdown(c, "a", "b");
  EXPECT_NE(md.find("| getppid | iters=1 | xen/batched | 1.00 µs | 985 ns–1.03 µs | 1.00 µs | 1.01 | ~ | 0.98–1.04 | "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1.20 | +20.1 % | 1.19–1.21 | <0.001 | ▲ slower |"), std::string::npos) << md;
}

// Virtual time: a wall-time run against an -icount run, target by target.
TEST(Compare, TargetsInWallAndVirtualTime) {
  auto run = [](long batched, long wrpt, bool icount) {
    Results r;
    if (icount) r.run = {{"icount", "shift=0,sleep=off"}};
    r.configs = {config_from_id("xen mmu=batched ptshare=on"), config_from_id("xen mmu=wrpt")};
    r.records.push_back(sample("xen mmu=batched ptshare=on", bench_line("fork_dirty", R"("pages":128000)", batched, batched, batched, 1)));
    r.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":128000)", wrpt, wrpt, wrpt, 1)));
    aggregate(r);
    return r;
  };
  const Comparison c = compare_results(run(500, 10000, false), run(2000, 10000, true));
  EXPECT_EQ(c.old_mode, "wall time");
  EXPECT_EQ(c.new_mode, "virtual time (-icount)");
  ASSERT_FALSE(c.targets.empty());
  const std::string md = compare_markdown(c, "wall", "icount");
  EXPECT_NE(md.find("## Targets in both runs"), std::string::npos) << md;
  // One boot a side: the wall-time verdict says it has no interval; -icount's is exact.
  EXPECT_NE(md.find("| fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × wrpt ptshare=off | 0.050 | met (1 boot in wall "
                    "time: no interval) | 0.20 exact | missed | differ |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("wall time includes what TCG spends on traps"), std::string::npos);
  const Comparison same = compare_results(run(500, 10000, false), run(600, 10000, true));
  EXPECT_EQ(same.targets.front().new_verdict, "met");
  EXPECT_NE(compare_markdown(same, "a", "b").find("| met | counts |"), std::string::npos);
}

TEST(Compare, LoadsAResultsDirectoryOrFile) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("pvk-compare-{}", ::getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "results.json");
    out << to_json(boots_run({1000, 1010}, {5000, 5010})).dump();
  }
  const Results from_dir = load_results(dir);
  const Results from_file = load_results(dir / "results.json");
  EXPECT_EQ(from_dir.rows.size(), 2u);
  EXPECT_EQ(from_file.rows.size(), 2u);
  // Each boot's values survive the file: the statistics need them.
  EXPECT_EQ(from_dir.rows[0].boots.size(), 2u);
  EXPECT_THROW(load_results(dir / "nothing.json"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pvk::bench
