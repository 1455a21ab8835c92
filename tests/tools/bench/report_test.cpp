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
  has("| 1280 | xen/batched | 2.00 ms | 1.90 ms–2.15 ms | — | — | — | — | — | 103 | 206 |");
  // Linux rows have no counters.
  has("| 1280 | linux-native | 100 µs | 100 µs–100 µs | — | — | — | — | — | — | — | — | — | — | — |");
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
  // No ptshare=on configuration in this run.
  has("| fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × wrpt ptshare=off | — | not in this run (--full?) |");
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off | — | not in this run |");
  EXPECT_EQ(md.find("## Table sharing"), std::string::npos);
  has("- xen/batched vs xen/wrpt: xen/batched faster at every size measured (1280–128000 pages)");
  // batched/direct goes from 2 to 0.6: log 2 / (log 2 - log 0.6) = 0.576 of
  // the way from 1280 to 128000 on a log scale, 1280 * 100^0.576.
  has("- xen/batched vs xen/direct: cross near 18140 pages (xen/direct faster below)");
}

}  // namespace
}  // namespace pvk::bench

namespace pvk::bench {
namespace {

// Issue 10: the ptshare targets (one per backend for the totals) and the
// per-phase counters per 128,000 pages.
TEST(Summary, PtshareTargetsAndCounters) {
  Results r;
  auto add = [&](const std::string& id, long fork, long exit, long rewrite, long copyouts, long pages = 128000) {
    if (!r.find_config(id)) r.configs.push_back(config_from_id(id));
    const long total = fork + exit + rewrite;
    const std::string extra = fmt::format(
        R"(,"pt_shares":{},"exit_median":{},"exit_hypercalls":7,"rewrite_median":{},"rewrite_pt_copyouts":{},)"
        R"("rewrite_page_faults":{},"total_median":{},"total_min":{},"total_max":{},"total_hypercalls":99)",
        copyouts ? 250 : 0, exit, rewrite, copyouts, copyouts ? 250 : pages, total, total, total);
    r.records.push_back(
        sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{})", pages), fork, fork, fork, 1, 10, true, extra)));
    r.records.push_back(sample(id, bench_line("mprotect", fmt::format(R"("pages":{},"loops":1)", pages), fork / 4,
                                              fork / 4, fork / 4, 1, 3, true, R"(,"l2_protects":500)")));
  };
  add("xen mmu=batched", 500000000, 80000000, 3420000000, 0);
  add("xen mmu=batched ptshare=on", 20000000, 60000000, 3880000000, 1);
  add("xen mmu=wrpt", 1700000000, 90000000, 6000000000, 0);
  add("xen mmu=wrpt ptshare=on", 30000000, 90000000, 8500000000, 1);
  add("native mmu=native", 30000000, 15000000, 1000000000, 0, 12800);
  add("native mmu=native ptshare=on", 3000000, 15000000, 1000000000, 1, 12800);
  add("xen mmu=direct pgd_cache=off", 600000000, 80000000, 3000000000, 0);  // no ptshare partner
  aggregate(r);
  const auto specs = builtin_ratios();
  const std::string md = summary_markdown(r, specs, compute_ratios(r, specs));
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  // 20 ms / 1.7 s
  has("| fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × wrpt ptshare=off | 0.012 | met |");
  has("| fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × Linux PV | — | needs Linux rows |");
  // Totals, per backend and size: batched 3.96 s / 4.00 s, wrpt 8.62 s / 7.79 s, native 1.018 s / 1.045 s.
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off — xen/batched, pages=128000 | 0.99 | met |");
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off — xen/wrpt, pages=128000 | 1.11 | missed |");
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off — native, pages=12800 | 0.97 | met |");

  has("## Table sharing (ptshare)");
  has("### fork_dirty at 128000 pages: fork, child exit, parent rewrite");
  has("| configuration | phase | time | on÷off | pte_writes | pt_shares | pt_copyouts | pt_gate_opens | pt_pushdowns | "
      "l2_protects | mmu_update_entries | hypercalls | ptwr_traps | page_faults |");
  has("| xen/batched | fork | 500 ms |  | 0 | 0 | — | — | — | — | 20 | 10 | 0 | 1 |");
  has("| xen/batched | child exit | 80.0 ms |  | — | — | — | — | — | — | — | 7 | — | — |");
  has("| xen/batched | parent rewrite | 3.42 s |  | — | — | 0 | — | — | — | — | — | — | 128000 |");
  has("| xen/batched | total | 4.00 s |  | — | — | — | — | — | — | — | 99 | — | — |");
  has("| xen/batched ptshare=on | fork | 20.0 ms | 0.040 | 0 | 250 |");
  has("| xen/batched ptshare=on | parent rewrite | 3.88 s | 1.13 | — | — | 1 | — | — | — | — | — | — | 250 |");
  has("| xen/wrpt ptshare=on | total | 8.62 s | 1.11 |");
  // No partner, no row.
  EXPECT_EQ(md.find("| xen/direct pgd_cache=off | fork |"), std::string::npos);
  // Native ran 12,800 pages only: a table of that size, counters scaled to 128,000 pages.
  has("### fork_dirty at 12800 pages: fork, child exit, parent rewrite (counters × 128000/pages)");
  has("| native | fork | 30.0 ms |  | 0 | 0 | — | — | — | — | 200 | 100 | 0 | 10 |");
  has("| native ptshare=on | fork | 3.00 ms | 0.10 | 0 | 2500 |");
  has("| native ptshare=on | parent rewrite | 1.00 s | 1.00 | — | — | 10 | — | — | — | — | — | — | 2500 |");
  has("### mprotect RW→RO→RW of 128000 pages, per cycle");
  has("| xen/batched | 125 ms |  | 0 | — | — | — | — | 500 | 6 | 3 | 0 | 1 |");
  has("| xen/batched ptshare=on | 5.00 ms | 0.040 |");
}

}  // namespace
}  // namespace pvk::bench
