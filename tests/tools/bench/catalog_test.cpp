// The harness's benchmark table must match the driver's (bench/driver.cpp
// kBenches): names, suites and parameter keys, in the driver's order.
#include "pvk/bench/catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace pvk::bench {
namespace {

TEST(Catalog, MatchesTheDriver) {
  std::ifstream in(std::string(PVK_SOURCE_DIR) + "/bench/driver.cpp");
  ASSERT_TRUE(in) << "bench/driver.cpp";
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  // {"getpid", "seed000", run_getpid, {{"iters", "10000"}}, ...
  const std::regex entry(R"re(\{"(\w+)", "(seed\d+|smp|calibrate)", run_\w+, \{((?:\{"\w+", "[^"]*"\},? ?)*)\})re");
  const std::regex key(R"re(\{"(\w+)", ")re");
  std::vector<std::string> driver_names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), entry); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    driver_names.push_back(name);
    const BenchInfo* b = find_benchmark(name);
    ASSERT_NE(b, nullptr) << name << " is in the driver but not in the harness's catalog";
    EXPECT_EQ(b->suite, (*it)[2].str()) << name;
    std::vector<std::string> keys;
    const std::string params = (*it)[3];
    for (auto k = std::sregex_iterator(params.begin(), params.end(), key); k != std::sregex_iterator(); ++k)
      keys.push_back((*k)[1]);
    EXPECT_EQ(std::vector<std::string>(b->params.begin(), b->params.end()), keys) << name;
  }
  std::vector<std::string> ours;
  for (const auto& b : benchmarks()) ours.emplace_back(b.name);
  EXPECT_EQ(ours, driver_names);
}

TEST(Catalog, SuitesAndSwitches) {
  EXPECT_TRUE(is_suite("all"));
  EXPECT_TRUE(is_suite("seed003"));
  EXPECT_FALSE(is_suite("getpid"));
  EXPECT_EQ(suite_members("seed003"), std::vector<std::string_view>{"fork_dirty"});
  // all: the seeds' benchmarks; the smp suite only by name (issue 15).
  EXPECT_TRUE(is_suite("smp"));
  const auto smp = suite_members("smp");
  EXPECT_EQ(smp, (std::vector<std::string_view>{"mprotect_threads", "munmap_threads", "fork_threads", "fault_threads",
                                                 "ctx_threads"}));
  EXPECT_TRUE(is_suite("calibrate"));
  EXPECT_EQ(suite_members("calibrate"), std::vector<std::string_view>{"calibrate"});
  EXPECT_EQ(suite_members("all").size() + smp.size() + 1, benchmarks().size());
  EXPECT_EQ(suite_members("smoke").size(), benchmarks().size());
  for (const auto& m : suite_members("all")) EXPECT_NE(find_benchmark(m)->suite, "smp") << m;
  // One name per line of base/counters.inc.
  std::ifstream inc(std::string(PVK_SOURCE_DIR) + "/base/counters.inc");
  ASSERT_TRUE(inc) << "base/counters.inc";
  size_t lines = 0;
  for (std::string line; std::getline(inc, line);)
    lines += line.starts_with("PVK_MMU_COUNTER(") || line.starts_with("PVK_MM_COUNTER(") || line.starts_with("PVK_CPU_COUNTER(");
  EXPECT_EQ(counter_names().size(), lines);
  for (const char* c : {"pt_shares", "pt_copyouts", "pt_gate_opens", "pt_pushdowns", "l2_protects"})
    EXPECT_NE(std::find(counter_names().begin(), counter_names().end(), c), counter_names().end()) << c;
  EXPECT_EQ(switch_default("pgd_cache"), "on");
  EXPECT_EQ(switch_default("zero_page"), "on");
  EXPECT_EQ(switch_default("pte"), "attrs");
  EXPECT_EQ(switch_default("batch"), "32");
  EXPECT_EQ(switch_default("ptshare"), "off");
  EXPECT_EQ(switch_default("mmu"), std::nullopt);
  EXPECT_EQ(switch_backends("batch"), std::vector<std::string_view>{"batched"});
  EXPECT_TRUE(switch_backends("pgd_cache").empty());
}

TEST(Catalog, ForkDirtyShowsItsPhases) {
  std::vector<std::string_view> fields;
  for (const auto& e : extra_columns("fork_dirty")) fields.push_back(e.field);
  for (const char* f : {"exit_median", "rewrite_median", "total_median"})
    EXPECT_NE(std::find(fields.begin(), fields.end(), f), fields.end()) << f;
  // Issue 12: the density parameter, in the driver's order.
  EXPECT_EQ(find_benchmark("fork_dirty")->params, (std::vector<std::string_view>{"pages", "stride"}));
}

}  // namespace
}  // namespace pvk::bench
