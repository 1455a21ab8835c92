// pvk compare: matching rows of two runs, ratios, flags beyond the spread.
#include "pvk/bench/compare.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

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
  EXPECT_NE(md.find("| fork_dirty | pages=1280 | xen/batched pgd_cache=on | 1.00 µs | 900 ns–1.10 µs | 500 ns | 0.50 | ▼ faster |"),
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

// Issue 12: fork_dirty's stride=1 is what a record without stride (an older
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

}  // namespace
}  // namespace pvk::bench
