// `pvk bench --smoke` end to end: boots the real kernel natively and under
// Xen (the smoke suite: tiny sizes, one rep), then checks the files a run
// writes and that every benchmark of the suite is in them for both platforms.
#include "pvk/bench/catalog.hpp"
#include "pvk/bench/text_file.hpp"
#include "pvk/bench/results.hpp"
#include "pvk/process.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) { return read_text_file(p).value_or(""); }

TEST(BenchSmoke, NativeAndXen) {
  const fs::path out = fs::temp_directory_path() / ("pvk-bench-smoke-" + std::to_string(::getpid()));
  fs::remove_all(out);
  ProcessOptions run;
  run.argv = {PVK_CLI, "--build-dir", PVK_BUILD_DIR, "bench", "--smoke", "--out", out.string()};
  run.timeout = std::chrono::seconds{540};
  std::string console;
  const ProcessResult r = run_process(run, [&](std::string_view line) {
    console += std::string(line) + "\n";
    return LineAction::keep_going;
  });
  ASSERT_EQ(r.exit_code, 0) << console;

  for (const char* file : {"results.json", "results.csv", "summary.md", "plots/plots.gp"})
    EXPECT_TRUE(fs::is_regular_file(out / file)) << file;
  for (const char* plot : {"fork_dirty", "fork_dirty_density", "mprotect", "faults", "lmbench"})
    for (const char* ext : {".svg", ".png"})
      EXPECT_TRUE(fs::is_regular_file(out / "plots" / (std::string(plot) + ext))) << plot << ext;

  const Results results = results_from_json(OJson::parse(read(out / "results.json")));
  ASSERT_EQ(results.boots.size(), 3u);  // native, the compiled-in native image, Xen
  std::set<std::string> platforms;
  for (const auto& b : results.boots) {
    EXPECT_TRUE(b.pass) << b.config << ": " << b.reason;
    platforms.insert(results.find_config(b.config)->platform);
  }
  EXPECT_EQ(platforms, (std::set<std::string>{"native", "native-builtin", "xen"}));
  const std::string summary = read(out / "summary.md");
  const std::string csv = read(out / "results.csv");
  for (const auto& b : benchmarks()) {
    // The calibrate item's time is the difference of two samples (n events
    // and 2 x n), 0 when the host slowed the first more than the second: in
    // one wall-time rep of 8 events, a matter of host load. Its records
    // must pass and say they timed; what the times are is
    // calibrate_boot_test's (in virtual time, exactly).
    const bool slope = std::string_view(b.name) == "calibrate";
    for (const char* config : {"native mmu=native", "native-builtin mmu=native", "xen mmu=batched"}) {
      const bool found = std::any_of(results.rows.begin(), results.rows.end(), [&](const Row& row) {
        return row.bench == b.name && row.config == config && row.pass &&
               (slope ? row.field("timed") == 1 : row.per_op > 0);
      });
      EXPECT_TRUE(found) << b.name << " on " << config;
    }
    EXPECT_NE(summary.find("### " + std::string(b.name) + " "), std::string::npos) << b.name;
    EXPECT_NE(csv.find("\n" + std::string(b.name) + ","), std::string::npos) << b.name;
  }
  // The sparse fork: the smoke suite's fork_dirty at two densities
  // (64 pages, stride=1 and 8: 8 dirtied pages), on both platforms.
  for (const char* config : {"native mmu=native", "xen mmu=batched"})
    for (const double stride : {1.0, 8.0}) {
      const auto row = std::find_if(results.rows.begin(), results.rows.end(), [&](const Row& r) {
        if (r.bench != "fork_dirty" || r.config != config) return false;
        for (const auto& [k, v] : r.params)
          if (k == "stride") return v.get<double>() == stride;
        return false;
      });
      ASSERT_NE(row, results.rows.end()) << config << " stride " << stride;
      EXPECT_TRUE(row->pass) << config << " stride " << stride;
      EXPECT_EQ(row->field("dirtied_pages"), 64 / stride) << config;
    }
  EXPECT_NE(summary.find("**fork_dirty at 64 pages against density: per fork (parent side)**"), std::string::npos);
  EXPECT_NE(summary.find("Break-even against density"), std::string::npos);
  // Under Xen the batched backend makes hypercalls; natively none.
  for (const auto& row : results.rows) {
    if (row.bench != "fork_dirty") continue;
    if (row.config == "xen mmu=batched") {
      EXPECT_GT(*row.field("hypercalls"), 0);
    }
    if (row.config == "native mmu=native") {
      EXPECT_EQ(*row.field("hypercalls"), 0);
    }
  }
  EXPECT_NE(summary.find("### Xen÷native"), std::string::npos);
  // Seed 001: the kernel times its page clearing; a fresh page's
  // write fault clears one page, Poke_full's too, the zero page's COW clears
  // (copies nothing).
  for (const char* config : {"native mmu=native", "native-builtin mmu=native", "xen mmu=batched"}) {
    auto row = [&](const char* bench) -> const Row* {
      for (const auto& r : results.rows)
        if (r.bench == bench && r.config == config) return &r;
      return nullptr;
    };
    for (const char* bench : {"fault_write", "poke_full", "fault_zero_cow"}) {
      const Row* r = row(bench);
      ASSERT_NE(r, nullptr) << bench << " on " << config;
      EXPECT_EQ(r->field("pages_cleared"), r->ops) << bench << " on " << config;
      EXPECT_GT(r->field("page_clear_cycles").value_or(0), 0) << bench << " on " << config;
      EXPECT_EQ(r->field("pages_copied"), 0) << bench << " on " << config;
    }
    const Row* exec = row("forkexec");
    ASSERT_NE(exec, nullptr) << config;
    // Each exec clears its stack page and kbworker's .bss (2 pages); the 17
    // pages its file fills are copied, never cleared first.
    EXPECT_GE(exec->field("pages_cleared").value_or(0), exec->ops) << config;
    EXPECT_LE(exec->field("pages_cleared").value_or(0), 4 * exec->ops) << config;
    // kernbench's smoke sweep: two loads (procs=1+4), each its own record.
    EXPECT_EQ(std::count_if(results.rows.begin(), results.rows.end(),
                            [&](const Row& r) { return r.bench == "kernbench" && r.config == config && r.pass; }),
              2)
        << config;
  }
  const size_t split_at = summary.find("### Seed 001: a fresh page's fault = fault path + clearing");
  ASSERT_NE(split_at, std::string::npos);
  const std::string split = summary.substr(split_at, summary.find("\n### ", split_at + 1) - split_at);
  for (const char* label : {"| native | ", "| native-builtin/native | ", "| xen/batched | "})
    EXPECT_NE(split.find(std::string(label)), std::string::npos) << label << "\n" << split;
  fs::remove_all(out);
}

}  // namespace
}  // namespace pvk::bench
