// The harness's benchmark table must match the driver's (bench/driver.cpp
// kBenches): names, suites and parameter keys, in the driver's order.
#include "pvk/bench/catalog.hpp"

#include <gtest/gtest.h>

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
  const std::regex entry(R"re(\{"(\w+)", "(seed\d+)", run_\w+, \{((?:\{"\w+", "[^"]*"\},? ?)*)\})re");
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
  EXPECT_EQ(suite_members("all").size(), benchmarks().size());
  EXPECT_EQ(counter_names().size(), 15u);
  EXPECT_EQ(switch_default("pgd_cache"), "on");
  EXPECT_EQ(switch_default("zero_page"), "on");
  EXPECT_EQ(switch_default("pte"), "attrs");
  EXPECT_EQ(switch_default("batch"), "32");
  EXPECT_EQ(switch_default("mmu"), std::nullopt);
  EXPECT_EQ(switch_backends("batch"), std::vector<std::string_view>{"batched"});
  EXPECT_TRUE(switch_backends("pgd_cache").empty());
}

}  // namespace
}  // namespace pvk::bench
