// Linux side by side in the matrix: linux-native and linux-xen are platforms
// without backends or pvk switches, and their rows pair with pvk's in the
// pvk÷Linux ratios.
#include "fixtures.hpp"
#include "pvk/bench/linux_runner.hpp"
#include "pvk/bench/matrix.hpp"
#include "pvk/bench/ratio.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace pvk::bench {
namespace {

TEST(LinuxMatrix, OneConfigurationPerLinuxPlatformWithoutSwitches) {
  MatrixOptions o;
  o.platforms = {"native", "xen", "linux-native", "linux-xen"};
  o.mmus = {"batched", "native"};  // --mmu does not filter Linux out
  o.sets = {parse_set("batch=1,32"), parse_set("pgd_cache=on")};
  const Plan plan = build_plan(o);
  std::set<std::string> linux_ids;
  for (const auto& c : plan.configs)
    if (c.platform.starts_with("linux-")) linux_ids.insert(c.id());
  // No mmu=, no --set, no pgd_cache=off / zero_page=off / pte=flags variations.
  EXPECT_EQ(linux_ids, (std::set<std::string>{"linux-native", "linux-xen"}));
  for (const auto& b : plan.boots) {
    const Config& c = plan.configs[b.config];
    if (!c.platform.starts_with("linux-")) continue;
    EXPECT_EQ(b.cmdline, "bench=" + b.bench);
    // The list, and the 128,000-page sizes pvk's ptshare targets compare with.
    EXPECT_TRUE(b.group == "all" || b.group == "128000") << b.group;
    // The same machines as pvk's platforms.
    const auto* pvk = find_platform(c.platform == "linux-native" ? "native" : "xen");
    const auto* lx = find_platform(c.platform);
    ASSERT_TRUE(pvk && lx);
    EXPECT_EQ(lx->standard.memory, pvk->standard.memory);
    EXPECT_EQ(lx->large.memory, pvk->large.memory);
    EXPECT_EQ(lx->large.dom0_memory, pvk->large.dom0_memory);
  }
}

TEST(LinuxMatrix, LinuxPlatformsSitBesidePvks) {
  std::set<std::string> pairs;
  for (const auto& [pvk, lx] : linux_platforms) {
    ASSERT_NE(find_platform(pvk), nullptr);
    ASSERT_NE(find_platform(lx), nullptr);
    EXPECT_TRUE(find_platform(lx)->backends.empty());
    pairs.insert(std::string(pvk) + ">" + lx);
  }
  EXPECT_EQ(pairs, (std::set<std::string>{"native>linux-native", "xen>linux-xen"}));
}

TEST(LinuxMatrix, SmokeBootsLinuxOnce) {
  MatrixOptions o;
  o.platforms = {"linux-native", "linux-xen"};
  o.smoke = true;
  const Plan plan = build_plan(o);
  ASSERT_EQ(plan.boots.size(), 2u);
  for (const auto& b : plan.boots) EXPECT_EQ(b.cmdline, "bench=smoke");
}

TEST(LinuxMatrix, PvkOverLinuxRatios) {
  using testing::bench_line;
  using testing::sample;
  Results results;
  for (const char* id : {"native mmu=native", "native mmu=native pgd_cache=off", "xen mmu=batched", "xen mmu=wrpt",
                         "linux-native", "linux-xen"})
    results.configs.push_back(config_from_id(id));
  // Linux records carry no counters.
  results.records = {
      sample("native mmu=native", bench_line("getppid", "\"iters\":100", 40000, 39000, 41000, 100)),
      sample("native mmu=native pgd_cache=off", bench_line("getppid", "\"iters\":100", 50000, 49000, 51000, 100)),
      sample("xen mmu=batched", bench_line("getppid", "\"iters\":100", 200000, 190000, 210000, 100, 1)),
      sample("xen mmu=wrpt", bench_line("getppid", "\"iters\":100", 300000, 290000, 310000, 100, 1)),
      sample("linux-native", bench_line("getppid", "\"iters\":100", 80000, 79000, 81000, 100, 0, false)),
      sample("linux-xen", bench_line("getppid", "\"iters\":100", 2000000, 1900000, 2100000, 100, 0, false)),
  };
  aggregate(results);
  const std::vector<Ratio> ratios = compute_ratios(results, builtin_ratios());
  auto find = [&](const std::string& spec) -> std::vector<const Ratio*> {
    std::vector<const Ratio*> out;
    for (const auto& r : ratios)
      if (r.spec == spec) out.push_back(&r);
    return out;
  };
  const auto native = find("pvk÷Linux native");
  ASSERT_EQ(native.size(), 1u);  // not the pgd_cache=off configuration
  EXPECT_EQ(native[0]->numerator, "native mmu=native");
  EXPECT_EQ(native[0]->denominator, "linux-native");
  EXPECT_DOUBLE_EQ(native[0]->value, 0.5);
  const auto xen = find("pvk÷Linux Xen");
  ASSERT_EQ(xen.size(), 1u);
  EXPECT_EQ(xen[0]->numerator, "xen mmu=batched");
  EXPECT_DOUBLE_EQ(xen[0]->value, 0.1);
  // A user's own pair works with Linux too.
  const auto wrpt = compute_ratios(results, {parse_ratio("w=platform=xen,mmu=wrpt/platform=linux-xen")});
  ASSERT_EQ(wrpt.size(), 1u);
  EXPECT_DOUBLE_EQ(wrpt[0].value, 0.15);
}

}  // namespace
}  // namespace pvk::bench
