// Linux side by side end to end: `pvk bench --smoke` on linux-native and
// linux-xen boots Debian's kernel natively and as Xen's PV dom0, each running
// the static bench driver (the smoke suite) as init. Checks that every
// benchmark's record arrived from both, with the boot and done records the
// runner writes for Linux, and that the harness made rows and tables of them.
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

TEST(LinuxSmoke, NativeAndXenDom0) {
  const fs::path out = fs::temp_directory_path() / ("pvk-linux-smoke-" + std::to_string(::getpid()));
  fs::remove_all(out);
  ProcessOptions run;
  run.argv = {PVK_CLI, "--build-dir", PVK_BUILD_DIR, "--source-dir", PVK_SOURCE_DIR, "bench", "--smoke",
              "--platforms", "linux-native,linux-xen", "--no-plots", "--out", out.string()};
  run.timeout = std::chrono::seconds{360};
  std::string console;
  const ProcessResult r = run_process(run, [&](std::string_view line) {
    console += std::string(line) + "\n";
    return LineAction::keep_going;
  });
  ASSERT_EQ(r.exit_code, 0) << console;

  const Results results = results_from_json(OJson::parse(read(out / "results.json")));
  ASSERT_EQ(results.boots.size(), 2u);
  std::set<std::string> platforms;
  for (const auto& b : results.boots) {
    EXPECT_TRUE(b.pass) << b.config << ": " << b.reason;
    EXPECT_EQ(b.failed, 0) << b.config;
    EXPECT_GT(b.benchmarks, 0) << b.config;
    platforms.insert(b.config);
  }
  EXPECT_EQ(platforms, (std::set<std::string>{"linux-native", "linux-xen"}));

  // The records Linux does not print, written by the runner, and the driver's own.
  for (const char* config : {"linux-native", "linux-xen"}) {
    std::vector<std::string> events;
    for (const auto& s : results.records)
      if (s.config == config && s.record.contains("event")) events.push_back(s.record["event"]);
    EXPECT_EQ(events, (std::vector<std::string>{"boot", "bench_start", "bench_done", "done"})) << config;
    for (const auto& s : results.records) {
      if (s.config != config || !s.record.contains("event") || s.record["event"] != "boot") continue;
      EXPECT_EQ(s.record["platform"], config);
      EXPECT_EQ(s.record["mmu"], "linux");
      EXPECT_TRUE(s.record.value("kernel", "").ends_with("-amd64")) << s.record.dump();
    }
  }

  // A passing row with a time for every benchmark of the suite on both, and
  // no pvk counters (Linux answers SYS_pvk_counters with -ENOSYS).
  const std::string summary = read(out / "summary.md");
  for (const auto& b : benchmarks()) {
    if (b.pvk_only) continue;  // the driver leaves it out on Linux
    for (const char* config : {"linux-native", "linux-xen"}) {
      const auto row = std::find_if(results.rows.begin(), results.rows.end(),
                                    [&](const Row& row) { return row.bench == b.name && row.config == config; });
      ASSERT_NE(row, results.rows.end()) << b.name << " on " << config;
      EXPECT_TRUE(row->pass) << b.name << " on " << config;
      EXPECT_GT(row->per_op, 0) << b.name << " on " << config;
      EXPECT_FALSE(row->field("hypercalls").has_value()) << b.name << " on " << config;
    }
    EXPECT_NE(summary.find("### " + std::string(b.name) + " "), std::string::npos) << b.name;
  }
  EXPECT_NE(summary.find("| linux-native |"), std::string::npos);
  EXPECT_NE(summary.find("| linux-xen |"), std::string::npos);
  fs::remove_all(out);
}

}  // namespace
}  // namespace pvk::bench
