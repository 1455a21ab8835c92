// The plans `pvk bench --dry-run` prints, against the ones recorded before
// the experiments moved into bench/experiments.json (data/plans/*.txt): the
// same boots, in the same order, with the same machines, timeouts and
// command lines. A change to the experiments that means to change the plan
// records the new one here (`pvk-cli bench --dry-run ARGS > data/plans/NAME.txt`).
#include "pvk/bench/cli.hpp"
#include "pvk/bench/text_file.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

struct PlanCase {
  const char* name;  // data/plans/NAME.txt
  std::vector<std::string> args;
};

std::string dry_run(const std::vector<std::string>& args) {
  CLI::App app;
  const fs::path dir = fs::temp_directory_path();
  const fs::path source(PVK_SOURCE_DIR);
  Commands commands(app, dir, source);
  std::vector<std::string> words{"pvk-cli", "bench", "--dry-run"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  EXPECT_TRUE(commands.selected());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int status = commands.run();
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 0) << err;
  return out;
}

class Plans : public ::testing::TestWithParam<PlanCase> {};

TEST_P(Plans, AsRecorded) {
  const fs::path file = fs::path(PVK_SOURCE_DIR) / "tests/tools/bench/data/plans" / (std::string(GetParam().name) + ".txt");
  const auto recorded = read_text_file(file);
  ASSERT_TRUE(recorded) << file;
  const std::string planned = dry_run(GetParam().args);
  // Line by line, so a difference names the boot.
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start);
      out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return out;
  };
  const auto want = lines(*recorded), got = lines(planned);
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i)
    EXPECT_EQ(i < got.size() ? got[i] : "(none)", i < want.size() ? want[i] : "(none)") << "line " << i + 1;
}

INSTANTIATE_TEST_SUITE_P(
    DryRun, Plans,
    ::testing::Values(PlanCase{"default", {}}, PlanCase{"full", {"--full"}}, PlanCase{"linux", {"--linux"}},
                      PlanCase{"full_linux", {"--full", "--linux"}}, PlanCase{"wall", {"--wall"}},
                      PlanCase{"smp_2", {"--smp", "2"}}, PlanCase{"smoke", {"--smoke"}},
                      PlanCase{"mmu_unhook_auto", {"--mmu", "unhook,auto"}}, PlanCase{"aa", {"--aa"}},
                      PlanCase{"schedule_heaviest", {"--schedule", "heaviest"}},
                      PlanCase{"scaling_linux", {"--smp", "1,2,4,8", "--linux"}}),
    [](const ::testing::TestParamInfo<PlanCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pvk::bench
