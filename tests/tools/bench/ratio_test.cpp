// Ratio tables: selectors, which configurations pair up, the values and
// their spread, user-declared ratios and the Linux seam.
#include "pvk/bench/ratio.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pvk::bench
