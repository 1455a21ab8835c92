// The Markdown summary and number formatting.
#include "pvk/bench/report.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

namespace pvk::bench {
namespace {

using testing::bench_line;
using testing::sample;

TEST(Format, Times) {
  EXPECT_EQ(format_ns(118), "118 ns");
  EXPECT_EQ(format_ns(12345), "12.3 µs");
  EXPECT_EQ(format_ns(1470000), "1.47 ms");
  EXPECT_EQ(format_ns(283879000), "284 ms");
  EXPECT_EQ(format_ns(2.35e9), "2.35 s");
}

TEST(Format, CountsAndRatios) {
  EXPECT_EQ(format_count(25661), "25661");
  EXPECT_EQ(format_count(2.013), "2.01");
  EXPECT_EQ(format_count(0.0016), "0.0016");
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_ratio(0.126), "0.13");
  EXPECT_EQ(format_ratio(0.0456), "0.046");
  EXPECT_EQ(format_ratio(7.61), "7.61");
  EXPECT_EQ(format_ratio(33.4), "33.4");
}

Results results_with_a_failure() {
  Results r;
  r.run = {{"started", "2026-01-01 00:00:00 UTC"}, {"wall_s", 125.0}, {"jobs", 2}, {"command", "tools/pvk bench"}};
  r.configs = {config_from_id("native mmu=native"), config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt"),
               config_from_id("linux-native")};
  r.records.push_back(sample("native mmu=native", bench_line("fork_dirty", R"("pages":1280)", 160000, 140000, 270000, 1, 0, true,
                                                              R"(,"exit_median":148000)")));
  r.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280)", 2000000, 1900000, 2150000, 1, 103)));
  r.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":1280)", 14100000, 12000000, 19400000, 1, 27)));
  r.records.push_back(sample("linux-native", bench_line("fork_dirty", R"("pages":1280)", 100000, 100000, 100000, 1, 0, false)));
  BootRecord ok;
  ok.config = "xen mmu=batched";
  ok.ran = ok.pass = true;
  ok.reason = "pass";
  ok.elapsed_s = 30;
  BootRecord bad = ok;
  bad.config = "xen mmu=wrpt";
  bad.pass = false;
  bad.reason = "frame leak";
  bad.trouble = {"benchmark \"mprotect\" pages=1 failed: leaked 3 frames"};
  bad.log = "logs/xen_wrpt-rep1-part0.log";
  r.boots = {ok, bad};
  aggregate(r);
  return r;
}

TEST(Summary, TablesFailuresAndRatios) {
  const Results r = results_with_a_failure();
  const auto specs = builtin_ratios();
  const std::string md = summary_markdown(r, specs, compute_ratios(r, specs));
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  has("# pvk bench");
  has("wall time 2 min 05 s");
  has("**1 of 2 boots FAILED**");
  has("## Failures");
  has("| xen/wrpt | rep 1 () | frame leak<br>benchmark \"mprotect\" pages=1 failed: leaked 3 frames | `logs/xen_wrpt-rep1-part0.log` |");
  has("### fork_dirty — ");
  has("| pages | configuration | per op | min–max | child exit |");
  has("| 1280 | native | 160 µs | 140 µs–270 µs | 148 µs |");
  has("| 1280 | xen/batched | 2.00 ms | 1.90 ms–2.15 ms | — | — | — | 103 | 206 |");
  // Linux rows have no counters.
  has("| 1280 | linux-native | 100 µs | 100 µs–100 µs | — | — | — | — | — | — | — | — | — |");
  has("### batched÷wrpt");
  has("| fork_dirty | pages=1280 | **0.14** (0.098–0.18) |");
  has("### Xen÷native");
  has("### pvk÷Linux native");
  has("| fork_dirty | pages=1280 | **1.60** (1.40–2.70) |");
  has("Not measured in this run (no pair of configurations): ");
  has("pgd_cache on÷off (pgd_cache=on / pgd_cache=off)");
}

TEST(Summary, AllPassed) {
  Results r = results_with_a_failure();
  r.boots.pop_back();
  const std::string md = summary_markdown(r, {}, {});
  EXPECT_NE(md.find("**all 1 boots passed**"), std::string::npos);
  EXPECT_EQ(md.find("## Failures"), std::string::npos);
}

}  // namespace
}  // namespace pvk::bench

namespace pvk::bench {
namespace {

TEST(Summary, TargetsAndForkBreakEven) {
  Results r;
  auto add = [&](const std::string& id, long pages, long ns) {
    if (!r.find_config(id)) r.configs.push_back(config_from_id(id));
    r.records.push_back(sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), ns, ns, ns, 1)));
  };
  // batched: 2 ms then 6 ms; direct: 1 ms then 10 ms (they cross); wrpt: 20, 100 ms.
  add("xen mmu=batched", 1280, 2000000);
  add("xen mmu=batched", 128000, 6000000);
  add("xen mmu=direct", 1280, 1000000);
  add("xen mmu=direct", 128000, 10000000);
  add("xen mmu=wrpt", 1280, 20000000);
  add("xen mmu=wrpt", 128000, 100000000);
  aggregate(r);
  const auto specs = builtin_ratios();
  const std::string md = summary_markdown(r, specs, compute_ratios(r, specs));
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  has("| fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × wrpt | 0.060 | met |");
  has("| null syscall natively ≤ 0.8 × Linux | — | needs Linux rows |");
  has("- xen/batched vs xen/wrpt: xen/batched faster at every size measured (1280–128000 pages)");
  // batched/direct goes from 2 to 0.6: log 2 / (log 2 - log 0.6) = 0.576 of
  // the way from 1280 to 128000 on a log scale, 1280 * 100^0.576.
  has("- xen/batched vs xen/direct: cross near 18140 pages (xen/direct faster below)");
}

}  // namespace
}  // namespace pvk::bench
