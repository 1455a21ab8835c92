// The paired schedule (a round per rep, pairs side by side), the A/A twins
// (same command lines, a configuration of their own, the A/A ratio) and
// reading the host's load.
#include "pvk/bench/schedule.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/host_load.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/report.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

namespace pvk::bench {
namespace {

MatrixOptions small_matrix(int reps) {
  MatrixOptions m;
  m.platforms = {"xen"};
  m.mmus = {"batched", "wrpt"};
  m.items = parse_items("getppid,fork_dirty:pages=1280");
  m.reps = reps;
  return m;
}

TEST(Schedule, PairedRunsARoundPerRepInPlanOrder) {
  Plan plan = build_plan(small_matrix(3));
  schedule_boots(plan, Schedule::paired);
  // Every rep-1 boot before any rep-2 boot, and within a round the plan's
  // configuration order: each base followed by its variations; even
  // rounds in reverse (counterbalanced).
  for (size_t i = 1; i < plan.boots.size(); ++i) {
    const Boot& a = plan.boots[i - 1];
    const Boot& b = plan.boots[i];
    ASSERT_LE(a.rep, b.rep) << i;
    if (a.rep != b.rep) continue;
    if (a.rep % 2 == 1) {
      EXPECT_LE(a.config, b.config) << i;
    } else {
      EXPECT_GE(a.config, b.config) << i;
    }
  }
  EXPECT_EQ(plan.configs[plan.boots[0].config].label(), "xen/batched");
  EXPECT_EQ(plan.configs[plan.boots[1].config].label(), "xen/batched pgd_cache=off");
  // The heaviest-first order keeps one configuration's reps together.
  Plan heavy = build_plan(small_matrix(3));
  schedule_boots(heavy, Schedule::heaviest);
  EXPECT_EQ(heavy.boots[0].config, heavy.boots[1].config);
  EXPECT_EQ(parse_schedule("paired"), Schedule::paired);
  EXPECT_THROW(parse_schedule("random"), std::invalid_argument);
}

TEST(Schedule, AATwinsBootTheSameCommandLines) {
  MatrixOptions m = small_matrix(2);
  m.with_variations = false;
  Plan plan = build_plan(m);
  const size_t boots = plan.boots.size();
  EXPECT_EQ(add_aa_twins(plan), 2u);
  ASSERT_EQ(plan.configs.size(), 4u);
  EXPECT_EQ(plan.boots.size(), 2 * boots);
  EXPECT_EQ(plan.configs[2].id(), "xen mmu=batched twin=2");
  for (const auto& b : plan.boots)
    EXPECT_EQ(b.cmdline.find("twin"), std::string::npos) << b.cmdline;  // the kernel never sees the tag
  schedule_boots(plan, Schedule::paired);
  // Each twin boots right after its original, round by round.
  EXPECT_EQ(plan.configs[plan.boots[0].config].label(), "xen/batched");
  EXPECT_EQ(plan.configs[plan.boots[1].config].label(), "xen/batched twin=2");
  EXPECT_EQ(plan.boots[0].cmdline, plan.boots[1].cmdline);
  EXPECT_EQ(plan.boots[1].rep, 1);
  // Round 2 the other way round: the twin is started first.
  const size_t round2 = plan.boots.size() / 2;
  EXPECT_EQ(plan.boots[round2].rep, 2);
  EXPECT_EQ(plan.configs[plan.boots[round2].config].label(), "xen/wrpt twin=2");
  EXPECT_EQ(plan.configs[plan.boots[round2 + 1].config].label(), "xen/wrpt");
}

TEST(Schedule, AARatioPairsEachTwinWithItsOriginal) {
  using testing::bench_line;
  using testing::sample;
  Results r;
  r.run = {{"schedule", "paired"}};
  r.configs = {config_from_id("xen mmu=batched"), config_from_id("xen mmu=batched twin=2"),
               config_from_id("xen mmu=wrpt")};
  const long a[] = {1000, 1100, 950}, b[] = {1004, 1095, 948};
  for (int rep = 1; rep <= 3; ++rep) {
    r.records.push_back(sample("xen mmu=batched", bench_line("getppid", R"("iters":1)", a[rep - 1], 1, 1, 1), rep));
    r.records.push_back(
        sample("xen mmu=batched twin=2", bench_line("getppid", R"("iters":1)", b[rep - 1], 1, 1, 1), rep));
    r.records.push_back(sample("xen mmu=wrpt", bench_line("getppid", R"("iters":1)", 5000, 1, 1, 1), rep));
  }
  aggregate(r);
  std::vector<Ratio> aa;
  for (const auto& x : compute_ratios(r, builtin_ratios()))
    if (x.spec == "A/A") aa.push_back(x);
  ASSERT_EQ(aa.size(), 1u);
  EXPECT_EQ(aa[0].pair, "xen/batched");
  EXPECT_EQ(aa[0].stats.method, "paired t");  // the load of round i cancels
  EXPECT_TRUE(aa[0].stats.same());
  EXPECT_NEAR(aa[0].stats.center, 1.0, 0.02);
  EXPECT_FALSE(aa[0].stats.noisy());
  EXPECT_EQ(switch_default(kTwinKey), "1");
}

TEST(Warmup, EachItemFirstWithOneRep) {
  MatrixOptions m = small_matrix(1);
  m.with_variations = false;
  Plan plan = build_plan(m);
  EXPECT_EQ(add_warmups(plan), plan.boots.size());
  EXPECT_EQ(plan.boots[0].bench, "getppid:reps=1,fork_dirty:pages=1280:reps=1,getppid,fork_dirty:pages=1280");
  EXPECT_EQ(plan.boots[0].cmdline, plan.configs[plan.boots[0].config].cmdline() + " bench=" + plan.boots[0].bench);
  // An item that already names reps gets reps=1 in its warm-up only.
  Plan one = build_plan([] {
    MatrixOptions o = small_matrix(1);
    o.with_variations = false;
    o.mmus = {"batched"};
    o.items = parse_items("getppid:reps=9");
    return o;
  }());
  add_warmups(one);
  EXPECT_EQ(one.boots[0].bench, "getppid:reps=1,getppid:reps=9");
  // Too long for one bench= with its warm-ups: left alone, with a note.
  Plan full = build_plan([] {
    MatrixOptions o = small_matrix(1);
    o.with_variations = false;
    o.mmus = {"batched"};
    std::string items;
    for (int i = 0; i < 20; ++i) items += (items.empty() ? "" : ",") + std::string("getppid:iters=") + std::to_string(i + 1);
    o.items = parse_items(items);
    return o;
  }());
  const std::string before = full.boots[0].bench;  // the first boot's 15 items fill bench=
  EXPECT_LT(add_warmups(full), full.boots.size());
  EXPECT_EQ(full.boots[0].bench, before);
  EXPECT_FALSE(full.notes.empty());
}

TEST(Warmup, EarlierRecordsOfTheSameItemAreLeftOutOfTheRows) {
  using testing::bench_line;
  std::vector<Sample> boot;
  for (const auto& line : {bench_line("getppid", R"("iters":10)", 900, 900, 900, 10),
                           bench_line("fork_dirty", R"("pages":64)", 5000, 5000, 5000, 1),
                           bench_line("getppid", R"("iters":10)", 100, 90, 110, 10),
                           bench_line("fork_dirty", R"("pages":64)", 500, 400, 600, 1),
                           bench_line("fork_dirty", R"("pages":128)", 800, 700, 900, 1)})
    boot.push_back(Sample{"native mmu=native", 1, 0, parse_records({line}).at(0)});
  mark_warmups(boot);
  EXPECT_TRUE(boot[0].warmup);
  EXPECT_TRUE(boot[1].warmup);
  EXPECT_FALSE(boot[2].warmup);
  EXPECT_FALSE(boot[3].warmup);
  EXPECT_FALSE(boot[4].warmup);
  Results r;
  r.configs = {config_from_id("native mmu=native")};
  r.records = boot;
  aggregate(r);
  ASSERT_EQ(r.rows.size(), 3u);
  for (const auto& row : r.rows) EXPECT_EQ(row.samples, 1) << row.bench;
  EXPECT_DOUBLE_EQ(r.rows[0].per_op, 10);  // getppid: the warm-up's 90 ns per op is gone
  // Through results.json: still a warm-up.
  const Results back = results_from_json(OJson::parse(to_json(r).dump()));
  EXPECT_TRUE(back.records[0].warmup);
  EXPECT_EQ(back.rows.size(), 3u);
}

TEST(HostLoad, SummaryStatesTheLoad) {
  Results r;
  r.run = {{"schedule", "paired"}};
  BootRecord a, b;
  a.load_before = 3.2;
  a.load_after = 4.1;
  a.host_busy = 0.9;
  b.load_before = 5.5;
  b.load_after = 5.0;
  b.host_busy = 1.0;
  r.boots = {a, b};
  const std::string md = summary_markdown(r, {}, {});
  EXPECT_NE(md.find("- host load average 3.2–5.5 around the boots, host CPU 95 % busy during them; paired schedule"),
            std::string::npos)
      << md;
  // Files from before the host-load reading have no load: no line.
  r.boots = {BootRecord{}};
  EXPECT_EQ(summary_markdown(r, {}, {}).find("host load"), std::string::npos);
}

TEST(HostLoad, ParsesProcFiles) {
  EXPECT_DOUBLE_EQ(*parse_loadavg("7.52 8.01 6.90 3/412 12345\n"), 7.52);
  EXPECT_FALSE(parse_loadavg("").has_value());
  const auto t0 = parse_proc_stat("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n");
  ASSERT_TRUE(t0.has_value());
  EXPECT_DOUBLE_EQ(t0->busy, 150);
  EXPECT_DOUBLE_EQ(t0->total, 1000);
  const auto t1 = parse_proc_stat("cpu  250 0 100 850 50 0 0 0 0 0\n");
  EXPECT_DOUBLE_EQ(*busy_share(*t0, *t1), 0.8);  // 200 busy of 250 ticks
  EXPECT_FALSE(busy_share(*t0, *t0).has_value());
  EXPECT_FALSE(parse_proc_stat("intr 1 2 3\n").has_value());
  // This host has /proc.
  EXPECT_TRUE(read_loadavg().has_value());
  EXPECT_TRUE(read_cpu_ticks().has_value());
}

}  // namespace
}  // namespace pvk::bench
