// --bench on the host: items the driver would refuse are refused before
// anything boots, in one line; a boot's machine is sized from what its
// items map.
#include "pvk/bench/item_checks.hpp"

#include "pvk/bench/cli.hpp"
#include "pvk/bench/matrix.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace pvk::bench {
namespace {

// The one-line refusal of a plan with these items ("" if it is planned).
std::string refusal(const std::string& items) {
  MatrixOptions m;
  m.platforms = {"native", "xen"};
  m.items = parse_items(items);
  try {
    build_plan(m);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST(ItemChecks, UnknownNamesAndParametersAreRefused) {
  EXPECT_EQ(refusal("nosuch"), "benchmark item 'nosuch': no benchmark or suite named 'nosuch'");
  EXPECT_EQ(refusal("getpid,nosuch:pages=1"), "benchmark item 'nosuch:pages=1': no benchmark or suite named 'nosuch'");
  EXPECT_EQ(refusal("getpid:nosuchkey=1"), "benchmark item 'getpid:nosuchkey=1': 'getpid' has no parameter 'nosuchkey'");
  EXPECT_EQ(refusal("seed003:iters=5"), "benchmark item 'seed003:iters=5': 'seed003' has no parameter 'iters'");
  EXPECT_EQ(refusal("fork_dirty:pages=lots"),
            "benchmark item 'fork_dirty:pages=lots': 'pages=lots': values are numbers joined with '+'");
  EXPECT_EQ(refusal("getpid:reps=0"), "benchmark item 'getpid:reps=0': reps must be one value in 1..64");
  EXPECT_EQ(refusal("getpid:reps=2+3"), "benchmark item 'getpid:reps=2+3': reps must be one value in 1..64");
  EXPECT_EQ(refusal("hostile:nosuch=1"),
            "benchmark item 'hostile:nosuch=1': 'hostile' has no parameter 'nosuch' (it takes timeout, only)");
  // What the driver takes, the host takes: suites with a member's key,
  // lists, reps, the program items.
  for (const char* ok : {"all", "smoke", "seed002:procs=1+4", "all:pages=64:reps=3", "fork_dirty:pages=1280:stride=1+8",
                         "hostile", "sysfuzz:seed=1:iters=3000:children=6:regress=1", "calibrate:count=8", "smp:threads=0+1"})
    EXPECT_EQ(refusal(ok), "") << ok;
}

TEST(ItemChecks, TheCommandRefusesBeforeBooting) {
  CLI::App app;
  const auto dir = std::filesystem::temp_directory_path();
  const std::filesystem::path source(PVK_SOURCE_DIR);
  Commands commands(app, dir, source);
  const char* argv[] = {"pvk-cli", "bench", "--bench", "nosuch"};
  app.parse(4, argv);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int status = commands.run();
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 2);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "pvk: error: benchmark item 'nosuch': no benchmark or suite named 'nosuch'\n");
}

// --dry-run too: an unknown benchmark or parameter is one line and status 2,
// with no plan printed.
TEST(ItemChecks, TheDryRunRefusesToo) {
  const std::filesystem::path source(PVK_SOURCE_DIR);
  for (const auto& [item, want] : std::vector<std::pair<const char*, const char*>>{
           {"nosuch", "pvk: error: benchmark item 'nosuch': no benchmark or suite named 'nosuch'\n"},
           {"fork_dirty:nosuch=1", "pvk: error: benchmark item 'fork_dirty:nosuch=1': 'fork_dirty' has no parameter 'nosuch'\n"}}) {
    CLI::App app;
    Commands commands(app, std::filesystem::temp_directory_path(), source);
    const char* argv[] = {"pvk-cli", "bench", "--bench", item, "--dry-run"};
    app.parse(5, argv);
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int status = commands.run();
    const std::string out = ::testing::internal::GetCapturedStdout();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(status, 2) << item;
    EXPECT_EQ(out, "") << item;
    EXPECT_EQ(err, want) << item;
  }
}

// A parameter of words (mmap_churn's mode) takes the words its defaults
// list, and only those; a parameter of numbers takes no word.
TEST(ItemChecks, WordValues) {
  EXPECT_EQ(refusal("mmap_churn:mode=procs"), "");
  EXPECT_EQ(refusal("mmap_churn:mode=threads+procs:threads=1"), "");
  EXPECT_EQ(refusal("smp:mode=threads:threads=0+1"), "");
  EXPECT_EQ(refusal("mmap_churn:mode=fibres"),
            "benchmark item 'mmap_churn:mode=fibres': 'mode=fibres': values are numbers joined with '+'");
  EXPECT_EQ(refusal("mmap_churn:pages=procs"),
            "benchmark item 'mmap_churn:pages=procs': 'pages=procs': values are numbers joined with '+'");
  // Memory: 1 + threads workers of `pages` each, whatever the mode.
  EXPECT_NEAR(item_memory_mib(parse_item("mmap_churn:mode=threads:pages=256:threads=3")), 4, 0.1);
}

TEST(ItemChecks, MemoryOfItems) {
  EXPECT_EQ(item_memory_mib(parse_item("getpid")), 0);
  EXPECT_EQ(item_memory_mib(parse_item("hostile")), 0);
  EXPECT_NEAR(item_memory_mib(parse_item("fork_dirty:pages=128000")), 500, 0.1);
  // Defaults: mprotect's largest is 16,384 pages; a suite its largest member.
  EXPECT_NEAR(item_memory_mib(parse_item("mprotect")), 64, 0.1);
  EXPECT_NEAR(item_memory_mib(parse_item("seed002")), 64, 0.1);
  EXPECT_NEAR(item_memory_mib(parse_item("all")), 64, 0.1);
  EXPECT_NEAR(item_memory_mib(parse_item("seed001:pages=64000")), 250, 0.1);
  // Per worker or thread: 1 + its count.
  EXPECT_NEAR(item_memory_mib(parse_item("fault_threads:pages=1024:threads=3")), 16, 0.1);
  EXPECT_NEAR(item_memory_mib(parse_item("kernbench:procs=8:pages=512")), 18, 0.1);
  // The smoke suite at its tiny sizes.
  EXPECT_LT(item_memory_mib(parse_item("smoke")), 1);
  EXPECT_NEAR(items_memory_mib(parse_items("getpid,fork_dirty:pages=12800,mprotect:pages=1")), 50, 0.1);
}

TEST(ItemChecks, BigItemsBootOnTheLargeMachine) {
  MatrixOptions m;
  m.platforms = {"native", "xen"};
  m.mmus = {"native", "batched"};
  m.with_variations = false;
  m.items = parse_items("fork_dirty:pages=128000");
  const Plan plan = build_plan(m);
  ASSERT_EQ(plan.boots.size(), 2u);
  for (const auto& b : plan.boots) {
    const PlatformSpec* spec = find_platform(plan.configs[b.config].platform);
    EXPECT_EQ(b.machine.memory, spec->large.memory) << plan.describe_boot(b);
    EXPECT_EQ(b.machine.dom0_memory, spec->large.dom0_memory) << plan.describe_boot(b);
    EXPECT_EQ(b.timeout, 2 * spec->timeout) << plan.describe_boot(b);
  }
  // The default list's sizes stay on the standard machines.
  m.items = parse_items("fork_dirty,mprotect");
  for (const auto& b : build_plan(m).boots) {
    EXPECT_EQ(b.machine.memory, "");
    EXPECT_EQ(b.machine.dom0_memory, "");
  }
  // More than the largest machine holds: refused.
  m.items = parse_items("fork_dirty:pages=1000000");
  EXPECT_THROW(build_plan(m), std::invalid_argument);
}

}  // namespace
}  // namespace pvk::bench
