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
    for (const char* config : {"native mmu=native", "native-builtin mmu=native", "xen mmu=batched"}) {
      const bool found = std::any_of(results.rows.begin(), results.rows.end(), [&](const Row& row) {
        return row.bench == b.name && row.config == config && row.pass && row.per_op > 0;
      });
      EXPECT_TRUE(found) << b.name << " on " << config;
    }
    EXPECT_NE(summary.find("### " + std::string(b.name) + " "), std::string::npos) << b.name;
    EXPECT_NE(csv.find("\n" + std::string(b.name) + ","), std::string::npos) << b.name;
  }
  // Issue 12's sparse fork: the smoke suite's fork_dirty at two densities
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
  fs::remove_all(out);
}

}  // namespace
}  // namespace pvk::bench
