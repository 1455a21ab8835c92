// The Markdown summary and number formatting.
#include "pvk/bench/report.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <set>

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
  has("### batched÷wrpt — wall time");
  // One boot a side: no interval, the reps' spread instead.
  has("| fork_dirty | pages=1280 | 0.14 (1 boot; reps 0.098–0.18) |");
  has("### Xen÷native");
  has("### pvk÷Linux native");
  has("| fork_dirty | pages=1280 | 1.60 (1 boot; reps 1.40–2.70) |");
  has("Not measured in this run (no pair of configurations): ");
  has("pgd_cache on÷off (pgd_cache=on / pgd_cache=off)");
}

// Virtual time (the default run): one boot a side is exact, in the ratio
// tables and the targets alike, and said so.
TEST(Summary, VirtualTimeOneBootIsExact) {
  Results r = results_with_a_failure();
  r.run["icount"] = "shift=0,sleep=off";
  const auto specs = builtin_ratios();
  const auto ratios = compute_ratios(r, specs);
  const std::string md = summary_markdown(r, specs, ratios);
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  has("### batched÷wrpt — virtual time (-icount)");
  has("| fork_dirty | pages=1280 | **0.14** exact |");
  has("| fork_dirty | pages=1280 | **1.60** exact |");
  for (const auto& ratio : ratios) {
    EXPECT_TRUE(ratio.stats.exact()) << ratio.spec << " " << ratio.bench;
    EXPECT_FALSE(ratio.stats.same()) << ratio.spec << " " << ratio.bench;
  }
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
  // A retired target is still measured and listed, with its reason for a verdict.
  has("| fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × wrpt | 0.060 | retired: no per-PTE scheme can reach it");
  has("| fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × Linux PV | — | needs Linux rows |");
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

// Table sharing: the ptshare targets (one per backend for the totals) and the
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
  has("| fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × wrpt ptshare=off | 0.012 | met (1 boot in wall time: no interval) |");
  has("| fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × Linux PV | — | needs Linux rows |");
  // Totals, per backend and size: batched 3.96 s / 4.00 s, wrpt 8.62 s / 7.79 s, native 1.018 s / 1.045 s.
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off — xen/batched, pages=128000 | 0.99 | met (1 boot in wall time: no interval) |");
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off — xen/wrpt, pages=128000 | 1.11 | missed (1 boot in wall time: no interval) |");
  has("| fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off — native, pages=12800 | 0.97 | met (1 boot in wall time: no interval) |");

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

namespace pvk::bench {
namespace {

// The sparse fork: fork_dirty at one span (12,800 pages) and falling
// density (stride=1..512), plus the dense sizes; the break-even against
// pages ignores the sparse rows, the one against density is per span.
Results sparse_fork_results() {
  Results r;
  auto add = [&](const std::string& id, long pages, long stride, double ms, bool with_stride = true) {
    if (!r.find_config(id)) r.configs.push_back(config_from_id(id));
    const long ns = static_cast<long>(ms * 1e6);
    const std::string params =
        with_stride ? fmt::format(R"("pages":{},"stride":{})", pages, stride) : fmt::format(R"("pages":{})", pages);
    r.records.push_back(sample(id, bench_line("fork_dirty", params, ns, ns * 9 / 10, ns * 12 / 10, 1, 0, true,
                                              fmt::format(R"(,"dirtied_pages":{},"total_median":{})",
                                                          (pages + stride - 1) / stride, 3 * ns))));
  };
  const std::vector<long> strides{1, 2, 10, 100, 512};
  // batched: 10, 6, 2, 1, 0.8 ms; wrpt: 40, 20, 4, 0.6, 0.2 ms (they cross
  // between 10 % and 1 %); batched ptshare=on: 1, 1, 1.2, 1.1, 0.85 ms
  // (tables shared while dense; as slow as off once too sparse to share).
  const std::vector<double> batched{10, 6, 2, 1, 0.8}, wrpt{40, 20, 4, 0.6, 0.2}, shared{1, 1, 1.2, 1.1, 0.85};
  for (size_t i = 0; i < strides.size(); ++i) {
    add("xen mmu=batched", 12800, strides[i], batched[i]);
    add("xen mmu=wrpt", 12800, strides[i], wrpt[i]);
    add("xen mmu=batched ptshare=on", 12800, strides[i], shared[i]);
  }
  add("xen mmu=batched", 1280, 1, 1);
  add("xen mmu=wrpt", 1280, 1, 4);
  add("xen mmu=batched ptshare=on", 1280, 1, 0.5);
  // direct only dense, and one record from before the sparse fork (no stride).
  add("xen mmu=direct", 1280, 1, 0.5, false);
  add("xen mmu=direct", 12800, 1, 20);
  // A target's size, dense and sparse: the target reads the dense rows.
  add("xen mmu=batched", 128000, 1, 60);
  add("xen mmu=wrpt", 128000, 1, 1000);
  add("xen mmu=batched", 128000, 512, 5);
  add("xen mmu=wrpt", 128000, 512, 1);
  aggregate(r);
  return r;
}

const BreakEven* find_break_even(const std::vector<BreakEven>& all, const std::string& a, const std::string& b,
                                 bool density) {
  for (const auto& be : all)
    if (be.a == a && be.b == b && be.density == density) return &be;
  return nullptr;
}

TEST(BreakEven, AgainstPagesAndDensity) {
  const Results r = sparse_fork_results();
  const auto all = fork_break_evens(r);
  // Against pages: the stride=1 rows only (12,800 pages: 10 ms, not a sparse one).
  const BreakEven* pages = find_break_even(all, "xen mmu=batched", "xen mmu=wrpt", false);
  ASSERT_NE(pages, nullptr);
  EXPECT_TRUE(pages->crosses.empty());
  EXPECT_EQ(pages->faster, "xen mmu=batched");
  EXPECT_EQ(pages->lo, 1280);
  EXPECT_EQ(pages->hi, 128000);
  // A record without stride is stride=1: direct has two sizes, batched
  // 1 vs 0.5 ms at 1,280 pages, 10 vs 20 at 12,800.
  const BreakEven* bd = find_break_even(all, "xen mmu=batched", "xen mmu=direct", false);
  ASSERT_NE(bd, nullptr);
  ASSERT_EQ(bd->crosses.size(), 1u);
  EXPECT_NEAR(bd->crosses[0].at, 4047.7, 0.1);  // 1280 * 10^0.5 (ratio 2 -> 0.5)
  EXPECT_EQ(bd->crosses[0].faster_below, "xen mmu=direct");
  // direct has one stride only: no density line.
  EXPECT_EQ(find_break_even(all, "xen mmu=batched", "xen mmu=direct", true), nullptr);

  // Against density at 12,800 pages: batched÷wrpt is 0.5 at 10 % and 1.67 at
  // 1 %: log(5/3) / (log(5/3) - log(0.5)) = 0.424 of the way from 1 % to 10 %
  // on a log scale, 10^0.424 % = 2.66 %, stride ≈ 38.
  const BreakEven* bw = find_break_even(all, "xen mmu=batched", "xen mmu=wrpt", true);
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->pages, 12800);
  ASSERT_EQ(bw->crosses.size(), 1u);
  EXPECT_NEAR(bw->crosses[0].at, 0.026563, 1e-5);
  EXPECT_EQ(bw->crosses[0].faster_below, "xen mmu=wrpt");
  EXPECT_NEAR(bw->lo, 1.0 / 512, 1e-12);
  EXPECT_EQ(bw->hi, 1);
  // 128,000 pages: only stride 1 and 512, both measured: a density line there too.
  bool at_128000 = false;
  for (const auto& be : all) at_128000 |= be.density && be.pages == 128000 && be.a == "xen mmu=batched";
  EXPECT_TRUE(at_128000);
  // ptshare off against on, same backend: off is faster once too sparse to share.
  const BreakEven* shared = find_break_even(all, "xen mmu=batched", "xen mmu=batched ptshare=on", true);
  ASSERT_NE(shared, nullptr);
  ASSERT_EQ(shared->crosses.size(), 1u);
  EXPECT_GT(shared->crosses[0].at, 0.01);
  EXPECT_LT(shared->crosses[0].at, 0.1);
  EXPECT_EQ(shared->crosses[0].faster_below, "xen mmu=batched");
  // Not a pair: a different backend and a different ptshare.
  EXPECT_EQ(find_break_even(all, "xen mmu=wrpt", "xen mmu=batched ptshare=on", true), nullptr);
  EXPECT_EQ(find_break_even(all, "xen mmu=wrpt", "xen mmu=batched ptshare=on", false), nullptr);
}

TEST(BreakEven, PairsOfEveryBackendOnlyWhereTheyDifferInOneThing) {
  Results r;
  for (const char* id : {"native mmu=native", "xen mmu=batched", "xen mmu=direct", "xen mmu=wrpt",
                         "xen mmu=batched ptshare=on", "xen mmu=wrpt ptshare=on", "xen mmu=batched pgd_cache=off"}) {
    r.configs.push_back(config_from_id(id));
    for (long pages : {1280, 12800})
      r.records.push_back(sample(id, bench_line("fork_dirty", fmt::format(R"("pages":{},"stride":1)", pages),
                                                pages * 100, pages * 100, pages * 100, 1)));
  }
  aggregate(r);
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& be : fork_break_evens(r)) {
    EXPECT_FALSE(be.density);
    pairs.emplace(be.a, be.b);
  }
  EXPECT_EQ(pairs, (std::set<std::pair<std::string, std::string>>{
                       {"native mmu=native", "xen mmu=batched"},
                       {"native mmu=native", "xen mmu=direct"},
                       {"native mmu=native", "xen mmu=wrpt"},
                       {"xen mmu=batched", "xen mmu=direct"},
                       {"xen mmu=batched", "xen mmu=wrpt"},
                       {"xen mmu=direct", "xen mmu=wrpt"},
                       {"xen mmu=batched", "xen mmu=batched ptshare=on"},
                       {"xen mmu=wrpt", "xen mmu=wrpt ptshare=on"},
                       {"xen mmu=batched ptshare=on", "xen mmu=wrpt ptshare=on"},
                   }));
}

TEST(Summary, SparseForkDensityTablesAndBreakEven) {
  const Results r = sparse_fork_results();
  const auto specs = builtin_ratios();
  const std::string md = summary_markdown(r, specs, compute_ratios(r, specs));
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  has("| pages | stride | configuration | per op |");
  has("**fork_dirty at 12800 pages against density: per fork (parent side)**");
  has("| stride | density | dirtied pages | xen/batched | xen/wrpt | xen/batched ptshare=on |");
  has("| 1 | 100 % | 12800 | 10.0 ms | 40.0 ms | 1.00 ms |");
  has("| 10 | 10 % | 1280 | 2.00 ms | 4.00 ms | 1.20 ms |");
  has("| 100 | 1.0 % | 128 | 1.00 ms | 600 µs | 1.10 ms |");
  has("| 512 | 0.2 % | 25 | 800 µs | 200 µs | 850 µs |");
  has("**fork_dirty at 12800 pages against density: fork + child exit + parent rewrite**");
  has("| 512 | 0.2 % | 25 | 2.40 ms | 600 µs | 2.55 ms |");
  has("**fork_dirty at 128000 pages against density: per fork (parent side)**");
  has("Break-even against dirty pages (per-fork medians, every page dirtied):");
  has("- xen/batched vs xen/wrpt: xen/batched faster at every size measured (1280–128000 pages)");
  has("- xen/batched vs xen/direct: cross near 4048 pages (xen/direct faster below)");
  has("Break-even against density (per-fork medians at one span;");
  has("- xen/batched vs xen/wrpt at 12800 pages: cross near 2.7 % of entries, stride ≈ 38 (xen/wrpt faster at lower "
      "density)");
  has("- xen/batched vs xen/batched ptshare=on at 12800 pages: cross near ");
  // One stride at 1,280 pages: no density there.
  EXPECT_EQ(md.find("at 1280 pages:"), std::string::npos) << md;
  // The target and the ptshare tables read the dense rows (5 ms ÷ 1 ms at stride=512 would miss it).
  // A retired target is still measured and listed, with its reason for a verdict.
  has("| fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × wrpt | 0.060 | retired: no per-PTE scheme can reach it");
  has("| fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × Linux PV | — | needs Linux rows |");
  has("### fork_dirty at 12800 pages: fork, child exit, parent rewrite");
  has("| xen/batched | fork | 10.0 ms |");
  has("| xen/batched ptshare=on | fork | 1.00 ms | 0.10 |");
}

}  // namespace
}  // namespace pvk::bench

namespace pvk::bench {
namespace {

// Auto against the best fixed backend at every size and density
// (named), and auto better than each fixed backend somewhere.
TEST(Summary, AutoAgainstTheBestFixedBackend) {
  Results r;
  auto add = [&](const std::string& id, long pages, long stride, long ns) {
    if (!r.find_config(id)) r.configs.push_back(config_from_id(id));
    r.records.push_back(sample(
        id, bench_line("fork_dirty", fmt::format(R"("pages":{},"stride":{})", pages, stride), ns, ns, ns, 1)));
  };
  // Dense: unhook is best (8), auto 8.2 (1.025, met). Sparse: batched best
  // (1), auto 1.1 (1.10, missed). direct is never a candidate (it would be
  // best at the sparse point, 0.5), wrpt is slowest.
  add("xen mmu=batched", 12800, 1, 12000);
  add("xen mmu=unhook", 12800, 1, 8000);
  add("xen mmu=wrpt", 12800, 1, 25000);
  add("xen mmu=direct", 12800, 1, 19000);
  add("xen mmu=auto", 12800, 1, 8200);
  add("xen mmu=batched", 12800, 512, 1000);
  add("xen mmu=unhook", 12800, 512, 1500);
  add("xen mmu=wrpt", 12800, 512, 1100);
  add("xen mmu=direct", 12800, 512, 500);
  add("xen mmu=auto", 12800, 512, 1100);
  aggregate(r);
  const auto ratios = compute_ratios(r, builtin_ratios());
  // One auto÷best fixed per size and density, against the fastest candidate.
  std::map<std::string, std::string> best;  // stride -> denominator
  for (const auto& ratio : ratios)
    if (ratio.spec == "auto÷best fixed") best[params_text(ratio.params)] = ratio.denominator;
  EXPECT_EQ(best, (std::map<std::string, std::string>{{"pages=12800 stride=1", "xen mmu=unhook"},
                                                      {"pages=12800 stride=512", "xen mmu=batched"}}));
  const std::string md = summary_markdown(r, builtin_ratios(), ratios);
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  has("| fork after dirtying, every size and density: auto ≤ 1.05 × the best fixed backend — defaults, pages=12800 "
      "stride=1 vs xen/unhook | 1.02 | met (1 boot in wall time: no interval) |");
  has("| fork after dirtying, every size and density: auto ≤ 1.05 × the best fixed backend — defaults, pages=12800 "
      "stride=512 vs xen/batched | 1.10 | missed (1 boot in wall time: no interval) |");
  has("| auto better than batched somewhere — best at fork_dirty pages=12800 stride=1 | 0.68 | met (1 boot in wall time: no interval) |");
  has("| auto better than unhook somewhere — best at fork_dirty pages=12800 stride=512 | 0.73 | met (1 boot in wall time: no interval) |");
  has("| auto better than wrpt somewhere — best at fork_dirty pages=12800 stride=1 | 0.33 | met (1 boot in wall time: no interval) |");
  // direct beats auto at the sparse point, and auto beats it when dense.
  has("| auto better than direct somewhere — best at fork_dirty pages=12800 stride=1 | 0.43 | met (1 boot in wall time: no interval) |");
  has("| fork after dirtying 128,000 pages under Xen: auto ≤ 1.05 × the best fixed backend | — | not in this run");
}

}  // namespace
}  // namespace pvk::bench
