// Ratio tables: selectors, which configurations pair up, the values and
// their spread, user-declared ratios and the Linux seam.
#include "pvk/bench/ratio.hpp"

#include "pvk/bench/report.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace pvk::bench {
namespace {

using testing::bench_line;
using testing::sample;

TEST(Selector, ParseAndMatchWithDefaults) {
  const Selector s = parse_selector("platform=xen,mmu=batched|direct");
  EXPECT_EQ(s.text(), "platform=xen,mmu=batched|direct");
  EXPECT_TRUE(s.matches(make_config("xen", {{"mmu", "direct"}})));
  EXPECT_FALSE(s.matches(make_config("xen", {{"mmu", "wrpt"}})));
  EXPECT_FALSE(s.matches(make_config("native", {{"mmu", "native"}})));
  // A switch at its default matches without being given.
  EXPECT_TRUE(parse_selector("pgd_cache=on").matches(make_config("native", {{"mmu", "native"}})));
  EXPECT_FALSE(parse_selector("pgd_cache=on").matches(make_config("native", {{"mmu", "native"}, {"pgd_cache", "off"}})));
  // A key nobody knows matches only when given.
  EXPECT_FALSE(parse_selector("frobnicate=1").matches(make_config("xen", {{"mmu", "wrpt"}})));
  EXPECT_THROW(parse_selector("mmu"), std::invalid_argument);
  EXPECT_THROW(parse_selector("mmu=a||b"), std::invalid_argument);
}

TEST(RatioSpecs, BuiltinsAndUserDeclared) {
  std::vector<std::string> names;
  for (const auto& s : builtin_ratios()) names.push_back(s.name);
  for (const char* want : {"batched÷wrpt", "batched÷direct", "Xen÷native", "pgd_cache on÷off", "zero_page on÷off",
                           "pvk÷Linux native", "pvk÷Linux Xen"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  const RatioSpec r = parse_ratio("b1÷32=batch=1/batch=32");
  EXPECT_EQ(r.name, "b1÷32");
  EXPECT_EQ(r.numerator.text(), "batch=1");
  EXPECT_EQ(r.denominator.text(), "batch=32");
  EXPECT_THROW(parse_ratio("nothing"), std::invalid_argument);
  EXPECT_THROW(parse_ratio("x=mmu=a"), std::invalid_argument);
  EXPECT_THROW(parse_ratio("x=mmu=a/mmu=b/mmu=c"), std::invalid_argument);
}

// per op = median / ops, with ops = 1 here so per op = median.
Results matrix_results() {
  Results r;
  auto add = [&](const std::string& id, long median, long min, long max, bool counters = true) {
    if (!r.find_config(id)) r.configs.push_back(config_from_id(id));
    r.records.push_back(sample(id, bench_line("fork_dirty", R"("pages":1280)", median, min, max, 1, 0, counters)));
  };
  add("native mmu=native", 100, 90, 110);
  add("native mmu=native pgd_cache=off", 200, 190, 210);
  add("xen mmu=batched", 1000, 800, 1250);
  add("xen mmu=batched pgd_cache=off", 1500, 1400, 1600);
  add("xen mmu=direct", 2000, 2000, 2000);
  add("xen mmu=wrpt", 8000, 6400, 10000);
  add("xen mmu=wrpt pgd_cache=off", 9000, 9000, 9000);
  add("linux-native", 50, 50, 50, false);
  aggregate(r);
  return r;
}

const Ratio* find(const std::vector<Ratio>& ratios, const std::string& spec, const std::string& num,
                  const std::string& den) {
  for (const auto& r : ratios)
    if (r.spec == spec && r.numerator == num && r.denominator == den) return &r;
  return nullptr;
}

size_t count(const std::vector<Ratio>& ratios, const std::string& spec) {
  return std::count_if(ratios.begin(), ratios.end(), [&](const Ratio& r) { return r.spec == spec; });
}

TEST(Ratios, PairsDifferOnlyInWhatTheRatioIsAbout) {
  const Results results = matrix_results();
  const auto ratios = compute_ratios(results, builtin_ratios());

  // batched÷wrpt: with defaults, and with pgd_cache=off on both sides.
  EXPECT_EQ(count(ratios, "batched÷wrpt"), 2u);
  const Ratio* bw = find(ratios, "batched÷wrpt", "xen mmu=batched", "xen mmu=wrpt");
  ASSERT_NE(bw, nullptr);
  EXPECT_DOUBLE_EQ(bw->value, 0.125);
  EXPECT_DOUBLE_EQ(bw->low, 800.0 / 10000);  // fastest batched ÷ slowest wrpt
  EXPECT_DOUBLE_EQ(bw->high, 1250.0 / 6400);
  EXPECT_EQ(bw->pair, "");
  const Ratio* bw_off = find(ratios, "batched÷wrpt", "xen mmu=batched pgd_cache=off", "xen mmu=wrpt pgd_cache=off");
  ASSERT_NE(bw_off, nullptr);
  EXPECT_EQ(bw_off->pair, "pgd_cache=off");
  // Never across different switches.
  EXPECT_EQ(find(ratios, "batched÷wrpt", "xen mmu=batched", "xen mmu=wrpt pgd_cache=off"), nullptr);

  EXPECT_EQ(count(ratios, "batched÷direct"), 1u);
  EXPECT_DOUBLE_EQ(find(ratios, "batched÷direct", "xen mmu=batched", "xen mmu=direct")->value, 0.5);

  // Xen (batched) ÷ native, per switch setting.
  EXPECT_EQ(count(ratios, "Xen÷native"), 2u);
  EXPECT_DOUBLE_EQ(find(ratios, "Xen÷native", "xen mmu=batched", "native mmu=native")->value, 10);
  EXPECT_DOUBLE_EQ(find(ratios, "Xen÷native", "xen mmu=batched pgd_cache=off", "native mmu=native pgd_cache=off")->value, 7.5);

  // pgd_cache on÷off: each backend with itself; the default counts as on.
  EXPECT_EQ(count(ratios, "pgd_cache on÷off"), 3u);
  const Ratio* pn = find(ratios, "pgd_cache on÷off", "native mmu=native", "native mmu=native pgd_cache=off");
  ASSERT_NE(pn, nullptr);
  EXPECT_DOUBLE_EQ(pn->value, 0.5);
  EXPECT_EQ(pn->pair, "native");
  EXPECT_EQ(find(ratios, "pgd_cache on÷off", "xen mmu=wrpt", "xen mmu=wrpt pgd_cache=off")->pair, "xen/wrpt");

  // The Linux seam: a linux-native row without counters pairs with native.
  EXPECT_EQ(count(ratios, "pvk÷Linux native"), 1u);
  EXPECT_DOUBLE_EQ(find(ratios, "pvk÷Linux native", "native mmu=native", "linux-native")->value, 2);
  EXPECT_EQ(count(ratios, "pvk÷Linux Xen"), 0u);
  EXPECT_EQ(count(ratios, "zero_page on÷off"), 0u);
}

// Table sharing: ptshare=on against off on each backend, the fork+exit+rewrite
// totals, and the cross pairs of its targets.
Results ptshare_results() {
  Results r;
  auto add = [&](const std::string& id, long fork, long total, bool counters = true) {
    if (!r.find_config(id)) r.configs.push_back(config_from_id(id));
    const std::string extra =
        fmt::format(R"(,"total_median":{},"total_min":{},"total_max":{})", total, total - 100, total + 100);
    r.records.push_back(sample(id, bench_line("fork_dirty", R"("pages":128000)", fork, fork, fork, 1, 0, counters, extra)));
    r.records.push_back(sample(id, bench_line("mprotect", R"("pages":128000,"loops":1)", fork / 2, fork / 2, fork / 2, 1, 0, counters)));
  };
  add("native mmu=native", 1000, 10000);
  add("native mmu=native ptshare=on", 100, 9000);
  add("xen mmu=batched", 5000, 40000);
  add("xen mmu=batched ptshare=on", 200, 39200);
  add("xen mmu=wrpt", 17000, 80000);
  add("xen mmu=wrpt ptshare=on", 300, 88000);
  add("linux-native", 2000, 12000, false);
  add("linux-xen", 8000, 50000, false);
  aggregate(r);
  return r;
}

TEST(Ratios, PtshareOnOverOffAndItsTargetsPairs) {
  const Results results = ptshare_results();
  const auto ratios = compute_ratios(results, builtin_ratios());
  // on÷off: each backend with itself, fork_dirty and mprotect.
  EXPECT_EQ(count(ratios, "ptshare on÷off"), 6u);
  const Ratio* nb = find(ratios, "ptshare on÷off", "xen mmu=batched ptshare=on", "xen mmu=batched");
  ASSERT_NE(nb, nullptr);
  EXPECT_EQ(nb->pair, "xen/batched");
  EXPECT_DOUBLE_EQ(nb->value, 0.04);
  EXPECT_EQ(find(ratios, "ptshare on÷off", "native mmu=native ptshare=on", "native mmu=native")->pair, "native");
  // The totals: only fork_dirty has the field; the spread from total_min/max.
  EXPECT_EQ(count(ratios, "ptshare on÷off, fork+exit+rewrite"), 3u);
  const Ratio* tb = find(ratios, "ptshare on÷off, fork+exit+rewrite", "xen mmu=batched ptshare=on", "xen mmu=batched");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->bench, "fork_dirty");
  EXPECT_DOUBLE_EQ(tb->value, 0.98);
  EXPECT_DOUBLE_EQ(tb->low, 39100.0 / 40100);
  EXPECT_DOUBLE_EQ(tb->high, 39300.0 / 39900);
  EXPECT_DOUBLE_EQ(find(ratios, "ptshare on÷off, fork+exit+rewrite", "xen mmu=wrpt ptshare=on", "xen mmu=wrpt")->value, 1.1);
  // batched with sharing over wrpt without: one pair, the base one.
  EXPECT_EQ(count(ratios, "ptshare batched÷wrpt"), 2u);  // fork_dirty, mprotect
  const Ratio* bw = find(ratios, "ptshare batched÷wrpt", "xen mmu=batched ptshare=on", "xen mmu=wrpt");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->pair, "");
  EXPECT_DOUBLE_EQ(bw->value, 200.0 / 17000);
  // Over Linux: the ptshare=on configurations only.
  EXPECT_EQ(count(ratios, "ptshare÷Linux Xen"), 2u);
  EXPECT_DOUBLE_EQ(find(ratios, "ptshare÷Linux Xen", "xen mmu=batched ptshare=on", "linux-xen")->value, 0.025);
  EXPECT_EQ(count(ratios, "ptshare÷Linux native"), 2u);
  EXPECT_DOUBLE_EQ(find(ratios, "ptshare÷Linux native", "native mmu=native ptshare=on", "linux-native")->value, 0.05);
  // The existing pvk÷Linux ratios stay with the base configurations.
  EXPECT_EQ(find(ratios, "pvk÷Linux Xen", "xen mmu=batched ptshare=on", "linux-xen"), nullptr);
  EXPECT_NE(find(ratios, "pvk÷Linux Xen", "xen mmu=batched", "linux-xen"), nullptr);
  // batched÷wrpt pairs like with like: both off (defaults) and both on.
  EXPECT_NE(find(ratios, "batched÷wrpt", "xen mmu=batched ptshare=on", "xen mmu=wrpt ptshare=on"), nullptr);
  EXPECT_EQ(find(ratios, "batched÷wrpt", "xen mmu=batched ptshare=on", "xen mmu=wrpt"), nullptr);
}

TEST(Ratios, PtshareTargetsAreDeclared) {
  std::map<std::string, const Target*> by_ratio_bench;
  for (const auto& t : targets()) by_ratio_bench[t.ratio + " " + t.bench] = &t;
  const Target* fork_wrpt = by_ratio_bench["ptshare batched÷wrpt fork_dirty"];
  ASSERT_NE(fork_wrpt, nullptr);
  EXPECT_EQ(fork_wrpt->params, "pages=128000");
  EXPECT_DOUBLE_EQ(fork_wrpt->at_most, 0.10);
  for (const char* key : {"ptshare÷Linux Xen fork_dirty", "ptshare÷Linux Xen mprotect", "ptshare÷Linux native fork_dirty"}) {
    ASSERT_NE(by_ratio_bench[key], nullptr) << key;
    EXPECT_DOUBLE_EQ(by_ratio_bench[key]->at_most, 0.10) << key;
    EXPECT_EQ(by_ratio_bench[key]->params, "pages=128000") << key;
  }
  const Target* totals = by_ratio_bench["ptshare on÷off, fork+exit+rewrite fork_dirty"];
  ASSERT_NE(totals, nullptr);
  EXPECT_DOUBLE_EQ(totals->at_most, 1.05);
  EXPECT_TRUE(totals->each_pair);
  // Every target names a ratio that exists.
  for (const auto& t : targets())
    EXPECT_TRUE(std::any_of(builtin_ratios().begin(), builtin_ratios().end(),
                            [&](const RatioSpec& s) { return s.name == t.ratio; }))
        << t.ratio;
}

TEST(Ratios, UserDeclaredPair) {
  const Results results = matrix_results();
  const auto ratios = compute_ratios(results, {parse_ratio("wrpt÷direct=mmu=wrpt/mmu=direct")});
  ASSERT_EQ(ratios.size(), 1u);
  EXPECT_DOUBLE_EQ(ratios[0].value, 4);
  EXPECT_EQ(ratios[0].pair, "xen");
}

TEST(Ratios, OnlySameBenchmarkAndParameters) {
  Results r;
  r.configs = {config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt")};
  r.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":1280)", 10, 10, 10, 1)));
  r.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":12800)", 10, 10, 10, 1)));
  r.records.push_back(sample("xen mmu=wrpt", bench_line("mprotect", R"("pages":1280)", 10, 10, 10, 1)));
  aggregate(r);
  EXPECT_TRUE(compute_ratios(r, builtin_ratios()).empty());
}

// SMP: threads=K over threads=0 of the same benchmark, other parameters
// and configuration; never across configurations, never at K = 0 over itself.
TEST(Ratios, ThreadsOverNoThreadsWithinOneConfiguration) {
  Results r;
  r.configs = {config_from_id("native mmu=native"), config_from_id("linux-native")};
  auto add = [&](const std::string& id, const std::string& params, long median) {
    r.records.push_back(sample(id, bench_line("mprotect_threads", params, median, median, median, 1)));
  };
  add("native mmu=native", R"("pages":1,"threads":0,"loops":200)", 100);
  add("native mmu=native", R"("pages":1,"threads":1,"loops":200)", 300);
  add("native mmu=native", R"("pages":1,"threads":3,"loops":200)", 500);
  add("native mmu=native", R"("pages":256,"threads":0,"loops":64)", 1000);
  add("native mmu=native", R"("pages":256,"threads":1,"loops":64)", 1500);
  add("linux-native", R"("pages":1,"threads":0,"loops":200)", 50);
  add("linux-native", R"("pages":1,"threads":1,"loops":200)", 200);
  aggregate(r);
  const auto ratios = compute_ratios(r, builtin_ratios());
  std::map<std::string, double> got;
  for (const auto& x : ratios)
    if (x.spec == "threads K÷0") {
      EXPECT_EQ(x.numerator, x.denominator);
      got[x.numerator + " " + params_text(x.params)] = x.value;
    }
  const std::map<std::string, double> want{
      {"native mmu=native pages=1 threads=1 loops=200", 3.0},
      {"native mmu=native pages=1 threads=3 loops=200", 5.0},
      {"native mmu=native pages=256 threads=1 loops=64", 1.5},
      {"linux-native pages=1 threads=1 loops=200", 4.0},
  };
  EXPECT_EQ(got, want);
  // pvk÷Linux pairs the new benchmarks at equal parameters, threads included.
  const Ratio* pl = find(ratios, "pvk÷Linux native", "native mmu=native", "linux-native");
  ASSERT_NE(pl, nullptr);
  EXPECT_EQ(count(ratios, "pvk÷Linux native"), 2u);
  const auto spec = std::find_if(builtin_ratios().begin(), builtin_ratios().end(),
                                 [](const RatioSpec& s) { return s.name == "threads K÷0"; });
  ASSERT_NE(spec, builtin_ratios().end());
  EXPECT_EQ(spec->vary, "threads");
}

// SMP: the machines with several CPUs — shootdown through Xen over
// IPIs on the same vCPUs, each against Linux PV on as many; and in a
// virtual-time run their ratios are not exact (their boots ran in wall
// time), while the one-CPU configurations' still are.
TEST(Ratios, SeveralCpusPairOnTheSameMachineAndAreTimedInWallTime) {
  Results r;
  r.run = {{"icount", "shift=0,sleep=off"}};
  const std::string hyp = "xen mmu=batched sched_cpus=all shootdown=hypercall smp=2";
  const std::string ipi = "xen mmu=batched sched_cpus=all shootdown=ipi smp=2";
  r.configs = {config_from_id(hyp), config_from_id(ipi), config_from_id("linux-xen smp=2"),
               config_from_id("linux-xen"), config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt")};
  auto add = [&](const std::string& id, const std::string& bench, long median) {
    r.records.push_back(sample(id, bench_line(bench, R"("pages":1,"threads":1,"loops":200)", median, median, median, 1)));
  };
  add(hyp, "mprotect_threads", 300);
  add(ipi, "mprotect_threads", 200);
  add("linux-xen smp=2", "mprotect_threads", 100);
  add("linux-xen", "mprotect_threads", 1000);  // one vCPU: pairs with nothing here
  add("xen mmu=batched", "fork_dirty", 100);
  add("xen mmu=wrpt", "fork_dirty", 400);
  aggregate(r);
  const auto ratios = compute_ratios(r, builtin_ratios());
  const Ratio* modes = find(ratios, "shootdown hypercall÷ipi", hyp, ipi);
  ASSERT_NE(modes, nullptr);
  EXPECT_DOUBLE_EQ(modes->value, 1.5);
  EXPECT_FALSE(modes->deterministic);
  EXPECT_NE(modes->stats.method, "exact");
  const Ratio* lh = find(ratios, "pvk÷Linux Xen, hypercall shootdown", hyp, "linux-xen smp=2");
  ASSERT_NE(lh, nullptr);
  EXPECT_DOUBLE_EQ(lh->value, 3.0);
  const Ratio* li = find(ratios, "pvk÷Linux Xen, ipi shootdown", ipi, "linux-xen smp=2");
  ASSERT_NE(li, nullptr);
  EXPECT_DOUBLE_EQ(li->value, 2.0);
  EXPECT_EQ(count(ratios, "pvk÷Linux Xen, hypercall shootdown"), 1u);  // not with Linux on one vCPU
  // The one-CPU pair of the same run: exact.
  const Ratio* bw = find(ratios, "batched÷wrpt", "xen mmu=batched", "xen mmu=wrpt");
  ASSERT_NE(bw, nullptr);
  EXPECT_TRUE(bw->deterministic);
  EXPECT_EQ(bw->stats.method, "exact");
  EXPECT_TRUE(r.mixed_time());
  EXPECT_EQ(time_mode(r), "virtual time (-icount); machines with several CPUs in wall time");
  r.configs = {config_from_id(hyp), config_from_id(ipi)};
  EXPECT_EQ(time_mode(r), "wall time (every machine has several CPUs)");
}

}  // namespace
}  // namespace pvk::bench
