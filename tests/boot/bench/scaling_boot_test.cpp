// A scaling run end to end, natively and small: `pvk bench --smp 1,2` with
// mmap_churn (processes and threads), then what results.json says. Behaviour
// and counts only, never how fast the host is: every worker ran on a CPU of
// its own, the two processes needed no shootdown, the threads of one address
// space always found the other CPU in its mask (a shootdown, or skipped as
// lazy), and the scaling table has each parameter set at both counts.
#include "pvk/bench/results.hpp"
#include "pvk/bench/text_file.hpp"
#include "pvk/process.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

TEST(BenchScaling, ChurnAtOneAndTwoCpusNatively) {
  const fs::path out = fs::temp_directory_path() / ("pvk-bench-scaling-" + std::to_string(::getpid()));
  fs::remove_all(out);
  ProcessOptions run;
  // 20 cycles of 16 pages a worker; whether the two threads' munmaps
  // overlap in time is up to QEMU's round-robin slices, so the checks below
  // never depend on it.
  run.argv = {PVK_CLI, "--build-dir", PVK_BUILD_DIR, "bench", "--smp", "1,2", "--platforms", "native",
              "--bench", "mmap_churn:pages=16:loops=20:reps=1", "--no-plots", "--jobs", "1", "--out", out.string()};
  run.timeout = std::chrono::seconds{240};
  std::string console;
  const ProcessResult r = run_process(run, [&](std::string_view line) {
    console += std::string(line) + "\n";
    return LineAction::keep_going;
  });
  ASSERT_EQ(r.exit_code, 0) << console;
  const OJson json = OJson::parse(read_text_file(out / "results.json").value_or("{}"));
  const Results results = results_from_json(json);
  ASSERT_EQ(results.boots.size(), 2u);
  for (const auto& b : results.boots) EXPECT_TRUE(b.pass) << b.config << ": " << b.reason;

  auto row = [&](const std::string& config, const std::string& mode, unsigned threads) -> const Row* {
    for (const auto& row : results.rows) {
      if (row.bench != "mmap_churn" || row.config != config) continue;
      bool match = true;
      for (const auto& [k, v] : row.params) {
        if (k == "mode") match &= v == mode;
        if (k == "threads") match &= v == threads;
      }
      if (match) return &row;
    }
    return nullptr;
  };
  for (const char* mode : {"procs", "threads"}) {
    const Row* two = row("native mmu=native smp=2", mode, 1);
    ASSERT_NE(two, nullptr) << mode;
    EXPECT_TRUE(two->pass) << mode;
    EXPECT_EQ(two->ops, 2 * 20) << mode;  // two workers' cycles
    EXPECT_EQ(two->field("workers"), 2) << mode;
    EXPECT_EQ(two->field("workers_elsewhere"), 1) << mode << ": the second worker ran on the other CPU";
    // Every cycle faults its 16 pages in, in either mode.
    EXPECT_GE(two->field("page_faults").value_or(0), 2 * 20 * 16) << mode;
    // A munmap either reaches the other CPU (a shootdown) or finds it lazy
    // (idle with the space's root still loaded: skipped, caught up later).
    // Which of the two depends on how QEMU's round-robin slices the two
    // vCPUs' runs, so the test asserts their sum: whether the other CPU was
    // in the space's mask at all.
    const double shootdowns = two->field("shootdowns").value_or(-1);
    const double lazy = two->field("shootdown_lazy_skipped").value_or(-1);
    if (std::string(mode) == "procs") {
      EXPECT_EQ(shootdowns, 0) << "two processes, each live on its own CPU only";
      EXPECT_EQ(lazy, 0) << "no process's space was ever on the other CPU";
    } else {
      EXPECT_GE(shootdowns + lazy, 2 * 20)
          << "one address space on both CPUs: each munmap reaches the other CPU or finds it lazy";
    }
    const Row* one = row("native mmu=native smp=1", mode, 0);
    ASSERT_NE(one, nullptr) << mode;
    EXPECT_EQ(one->field("workers_elsewhere"), 0) << mode;
  }
  // The scaling table: both modes at 1 and 2 CPUs, one worker per CPU.
  ASSERT_TRUE(json.contains("scaling"));
  EXPECT_EQ(json["scaling"].size(), 4u) << json["scaling"].dump();
  for (const auto& line : json["scaling"]) {
    EXPECT_EQ(line["workers"], line["cpus"]) << line.dump();
    EXPECT_TRUE(line["to_one_cpu"].is_number()) << line.dump();
  }
  const std::string summary = read_text_file(out / "summary.md").value_or("");
  EXPECT_NE(summary.find("## Scaling across CPUs"), std::string::npos);
  fs::remove_all(out);
}

}  // namespace
}  // namespace pvk::bench
