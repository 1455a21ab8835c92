// The A/A check end to end: `pvk bench --aa` boots the real
// kernel natively, the same configuration as two configurations, two rounds,
// in QEMU's virtual time (-icount: the guest's clock counts instructions, so
// nothing but the kernel's own work is timed). Every A/A ratio must come out
// 1.00 within ±2 % with an interval that holds 1, and the summary must print
// it as `~`.
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/text_file.hpp"
#include "pvk/bench/results.hpp"
#include "pvk/process.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) { return read_text_file(p).value_or(""); }

TEST(BenchAA, NativeVirtualTimeIsOneWithinItsInterval) {
  const fs::path out = fs::temp_directory_path() / ("pvk-bench-aa-" + std::to_string(::getpid()));
  fs::remove_all(out);
  ProcessOptions run;
  run.argv = {PVK_CLI, "--build-dir", PVK_BUILD_DIR, "bench", "--aa", "--icount", "--platforms", "native",
              "--no-variations", "--no-plots", "--reps", "2", "--bench", "getppid:iters=1000,forkwait:iters=20,"
              "fault_write:pages=256", "--out", out.string()};
  run.timeout = std::chrono::seconds{400};
  std::string console;
  const ProcessResult r = run_process(run, [&](std::string_view line) {
    console += std::string(line) + "\n";
    return LineAction::keep_going;
  });
  ASSERT_EQ(r.exit_code, 0) << console;

  const OJson json = OJson::parse(read(out / "results.json"));
  EXPECT_EQ(json["run"]["schedule"], "paired");
  const Results results = results_from_json(json);
  ASSERT_EQ(results.boots.size(), 4u);  // 2 rounds x (original, twin)
  for (const auto& b : results.boots) {
    EXPECT_TRUE(b.pass) << b.config << ": " << b.reason;
    EXPECT_GE(b.load_before, 0);  // the host's load is recorded
    EXPECT_GE(b.host_busy, 0);
  }
  int aa = 0;
  for (const auto& ratio : compute_ratios(results, builtin_ratios())) {
    if (ratio.spec != "A/A") continue;
    ++aa;
    EXPECT_TRUE(ratio.stats.estimated) << ratio.bench;
    EXPECT_TRUE(ratio.stats.same()) << ratio.bench << " " << ratio.stats.low << ".." << ratio.stats.high;
    EXPECT_LE(std::fabs(ratio.stats.center - 1), 0.02) << ratio.bench;
  }
  EXPECT_EQ(aa, 3);
  const std::string summary = read(out / "summary.md");
  EXPECT_NE(summary.find("### A/A — virtual time (-icount)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("| getppid | iters=1000 | ~ (1.00 ["), std::string::npos) << summary;
  EXPECT_NE(summary.find("## Seeds"), std::string::npos);
  fs::remove_all(out);
}

// The main job times in virtual time, one boot per configuration; --wall
// in wall time with three; --reps overrides either; --smoke stays in wall
// time unless --icount is given.
TEST(BenchMode, VirtualTimeIsTheDefault) {
  auto plan = [](std::vector<std::string> extra) {
    ProcessOptions run;
    run.argv = {PVK_CLI, "--build-dir", PVK_BUILD_DIR, "bench", "--dry-run", "--platforms", "native",
                "--no-variations", "--bench", "getppid"};
    run.argv.insert(run.argv.end(), extra.begin(), extra.end());
    run.timeout = std::chrono::seconds{60};
    std::string last;
    const ProcessResult r = run_process(run, [&](std::string_view line) {
      if (!line.empty()) last = std::string(line);
      return LineAction::keep_going;
    });
    EXPECT_EQ(r.exit_code, 0) << last;
    return last;
  };
  EXPECT_EQ(plan({}), "1 configurations, 1 boots, virtual time (-icount shift=0,sleep=off)");
  EXPECT_EQ(plan({"--icount"}), "1 configurations, 1 boots, virtual time (-icount shift=0,sleep=off)");
  EXPECT_EQ(plan({"--wall"}), "1 configurations, 3 boots, wall time");
  EXPECT_EQ(plan({"--reps", "2"}), "1 configurations, 2 boots, virtual time (-icount shift=0,sleep=off)");
  EXPECT_NE(plan({"--smoke"}).find("wall time"), std::string::npos);
  EXPECT_NE(plan({"--smoke", "--icount"}).find("virtual time"), std::string::npos);
}

}  // namespace
}  // namespace pvk::bench
