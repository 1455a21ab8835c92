// The harness's catalogue: the benchmark list it shares with the driver
// (bench/benches.inc), suites, counters and switches.
#include "pvk/bench/catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace pvk::bench {
namespace {

// The driver and this catalogue expand one list (bench/benches.inc): what
// is left to check is that each entry is whole.
TEST(Catalog, EveryEntryIsWhole) {
  std::vector<std::string_view> names;
  for (const auto& b : benchmarks()) {
    names.push_back(b.name);
    EXPECT_FALSE(b.what.empty()) << b.name;
    EXPECT_FALSE(b.smoke.empty()) << b.name;
    EXPECT_TRUE(is_suite(b.suite)) << b.name;
    ASSERT_EQ(b.params.size(), b.defaults.size()) << b.name;
    EXPECT_LE(b.params.size(), 4u) << b.name;  // the driver's kMaxParams
    for (const auto& d : b.defaults) EXPECT_FALSE(d.empty()) << b.name;
    // A memory need names parameters the benchmark takes.
    if (!b.needs.param.empty()) {
      EXPECT_NE(std::find(b.params.begin(), b.params.end(), b.needs.param), b.params.end()) << b.name;
      EXPECT_GT(b.needs.bytes_per_unit, 0u) << b.name;
    }
    if (!b.needs.per.empty())
      EXPECT_NE(std::find(b.params.begin(), b.params.end(), b.needs.per), b.params.end()) << b.name;
  }
  EXPECT_EQ(std::set<std::string_view>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(find_benchmark("mprotect")->defaults, (std::vector<std::string_view>{"1+64+4096+16384", "0"}));
  EXPECT_EQ(find_benchmark("fork_dirty")->needs.param, "pages");
  EXPECT_EQ(find_benchmark("fault_threads")->needs.per, "threads");
  EXPECT_TRUE(find_benchmark("cpa")->pvk_only);
  EXPECT_FALSE(find_benchmark("getpid")->pvk_only);
  // The programs the driver runs as items, with their keys.
  ASSERT_NE(find_program("hostile"), nullptr);
  EXPECT_EQ(find_program("hostile")->keys, (std::vector<std::string_view>{"timeout", "only"}));
  ASSERT_NE(find_program("sysfuzz"), nullptr);
  EXPECT_EQ(find_program("sysfuzz")->keys.size(), 8u);
  EXPECT_EQ(find_program("getpid"), nullptr);
}

TEST(Catalog, SuitesAndSwitches) {
  EXPECT_TRUE(is_suite("all"));
  EXPECT_TRUE(is_suite("seed003"));
  EXPECT_FALSE(is_suite("getpid"));
  EXPECT_EQ(suite_members("seed003"), std::vector<std::string_view>{"fork_dirty"});
  // all: the seeds' benchmarks; the smp suite only by name (SMP).
  EXPECT_TRUE(is_suite("smp"));
  const auto smp = suite_members("smp");
  EXPECT_EQ(smp, (std::vector<std::string_view>{"mprotect_threads", "munmap_threads", "fork_threads", "fault_threads",
                                                 "mmap_churn", "ctx_threads"}));
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
    lines += line.starts_with("PVK_MMU_COUNTER(") || line.starts_with("PVK_MM_COUNTER(") || line.starts_with("PVK_CPU_COUNTER(") ? 1
             : line.starts_with("PVK_LOCK_COUNTER(")                                                                         ? 3  // acquired, contended, spins
                                                                                                                               : 0;
  EXPECT_EQ(counter_names().size(), lines);
  for (const char* c : {"pt_shares", "pt_copyouts", "pt_gate_opens", "pt_pushdowns", "l2_protects",
                        "lock_kernel_acquired", "lock_address_space_contended", "lock_frames_spins"})
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
  // The sparse fork: the density parameter, in the driver's order.
  EXPECT_EQ(find_benchmark("fork_dirty")->params, (std::vector<std::string_view>{"pages", "stride"}));
}

}  // namespace
}  // namespace pvk::bench
