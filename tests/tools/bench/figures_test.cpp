// pvk figures: README's figures block from one run's
// results.json, everything outside the block untouched.
#include "pvk/bench/figures.hpp"

#include "pvk/bench/cli.hpp"
#include "pvk/bench/text_file.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;
using testing::bench_line;
using testing::sample;

Results run(const std::string& icount) {
  Results r;
  r.run = {{"started", "2026-12-01 11:49:16 UTC"},
           {"finished", "2026-12-01 11:54:38 UTC"},
           {"wall_s", 322.0},
           {"jobs", 2},
           {"reps", 3},
           {"command", icount.empty() ? "tools/pvk bench --jobs 2" : "tools/pvk bench --icount --jobs 2"},
           {"commit", "9d8b09f9edd0"},
           {"kernel", "/work/main/build/guest/pvk.elf"},
           {"qemu", "QEMU emulator version 7.2.22"},
           {"icount", icount},
           {"smp", 1},
           {"schedule", "paired"},
           {"aa", false},
           {"warmup", true},
           {"host_cpus", 2},
           {"cancelled", false}};
  r.configs = {config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt")};
  for (int rep = 1; rep <= 2; ++rep) {
    r.records.push_back(sample("xen mmu=batched", bench_line("fork_dirty", R"("pages":128000)", 500 + rep, 500, 510, 1), rep));
    r.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":128000)", 10000 + rep, 10000, 10010, 1), rep));
  }
  aggregate(r);
  return r;
}

const std::string kReadme = "# pvk\n\nIntro.\n\n## Figures\n\nWhat the block is.\n\n<!-- figures:begin -->\nNo run has "
                            "been recorded yet.\n<!-- figures:end -->\n\nAfter the block, `<!-- figures:begin -->` in "
                            "prose.\n\n## Next\n";

TEST(Figures, ReplacesOnlyTheBlock) {
  const std::string out = replace_figures_block(kReadme, "NEW\nBLOCK\n");
  EXPECT_EQ(out, "# pvk\n\nIntro.\n\n## Figures\n\nWhat the block is.\n\n<!-- figures:begin -->\nNEW\nBLOCK\n"
                 "<!-- figures:end -->\n\nAfter the block, `<!-- figures:begin -->` in prose.\n\n## Next\n");
  // Again: the same text, the block replaced once more.
  EXPECT_EQ(replace_figures_block(out, "NEW\nBLOCK\n"), out);
  EXPECT_EQ(replace_figures_block(out, "x"), replace_figures_block(kReadme, "x\n"));
}

TEST(Figures, MissingOrBrokenMarkersAreOneLineErrors) {
  for (const std::string& bad :
       {std::string("# pvk\n\nno block\n"), std::string("<!-- figures:begin -->\nonly the start\n"),
        std::string("<!-- figures:end -->\n<!-- figures:begin -->\n"),
        std::string("<!-- figures:begin -->\n<!-- figures:end -->\n<!-- figures:begin -->\n<!-- figures:end -->\n"),
        // In prose (not a line of its own) a marker does not count.
        std::string("see `<!-- figures:begin -->` and `<!-- figures:end -->`\n")}) {
    try {
      replace_figures_block(bad, "x\n");
      ADD_FAILURE() << "no error for:\n" << bad;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find("figures:"), std::string::npos) << what;
    }
  }
}

TEST(Figures, ProvenanceWallTime) {
  const std::string line = figures_provenance(run(""), "r.json");
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_NE(line.find("started 2026-12-01 11:49:16 UTC"), std::string::npos) << line;
  EXPECT_NE(line.find("command `tools/pvk bench --jobs 2`"), std::string::npos) << line;
  EXPECT_NE(line.find("commit `9d8b09f9edd0`"), std::string::npos) << line;
  EXPECT_NE(line.find("machine: 2 host CPUs, QEMU emulator version 7.2.22, guest -smp 1"), std::string::npos) << line;
  EXPECT_NE(line.find("mode: **wall time**"), std::string::npos) << line;
  EXPECT_EQ(line.find("icount"), std::string::npos) << line;
}

TEST(Figures, ProvenanceVirtualTime) {
  const std::string line = figures_provenance(run("shift=0,sleep=off"), "r.json");
  EXPECT_NE(line.find("command `tools/pvk bench --icount --jobs 2`"), std::string::npos) << line;
  EXPECT_NE(line.find("mode: **virtual time (-icount shift=0,sleep=off)**"), std::string::npos) << line;
  EXPECT_EQ(line.find("wall time"), std::string::npos) << line;
}

TEST(Figures, NoRunRecordIsAnError) {
  Results r = run("");
  r.run = OJson::object();
  EXPECT_THROW(figures_provenance(r, "r.json"), std::runtime_error);
}

TEST(Figures, BlockHasProvenanceThenTargetsAndSeeds) {
  const std::string block = figures_block(run(""), "r.json");
  const size_t provenance = block.find("**From one run**");
  const size_t targets = block.find("\n### Targets\n");
  const size_t seeds = block.find("\n### Seeds");
  ASSERT_NE(provenance, std::string::npos) << block;
  ASSERT_NE(targets, std::string::npos) << block;
  ASSERT_NE(seeds, std::string::npos) << block;
  EXPECT_LT(provenance, targets);
  EXPECT_LT(targets, seeds);
  // The run's figure for table sharing's goal: batched ÷ wrpt at 128,000 pages.
  EXPECT_NE(block.find("| fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × wrpt | 0.050"), std::string::npos)
      << block;
  // Nothing at the README's own heading levels.
  EXPECT_EQ(block.find("\n## "), std::string::npos) << block;
  EXPECT_NE(block[0], '#');
}

// Through pvk-cli's subcommand: files in, the README rewritten, or a
// one-line error and a failure status.
class FiguresCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("pvk-figures-{}", ::getpid());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "results.json") << to_json(run("shift=0,sleep=off")).dump();
  }
  void TearDown() override { fs::remove_all(dir_); }

  int figures(const fs::path& readme) {
    CLI::App app;
    Commands commands(app, dir_, dir_);
    const std::string results = (dir_ / "results.json").string(), readme_text = readme.string();
    const char* argv[] = {"pvk-cli", "figures", results.c_str(), "--readme", readme_text.c_str()};
    app.parse(5, argv);
    EXPECT_TRUE(commands.selected());
    return commands.run();
  }

  fs::path dir_;
};

TEST_F(FiguresCommand, RewritesTheReadme) {
  const fs::path readme = dir_ / "README.md";
  std::ofstream(readme) << kReadme;
  EXPECT_EQ(figures(readme), 0);
  const std::string out = read_text_file(readme).value();
  EXPECT_TRUE(out.starts_with("# pvk\n\nIntro.\n\n## Figures\n\nWhat the block is.\n\n<!-- figures:begin -->\n")) << out;
  EXPECT_TRUE(out.ends_with("<!-- figures:end -->\n\nAfter the block, `<!-- figures:begin -->` in prose.\n\n## Next\n"))
      << out;
  EXPECT_EQ(out.find("No run has been recorded yet."), std::string::npos) << out;
  // Named from the source tree's root (here the test's directory).
  EXPECT_NE(out.find("_Written by `tools/pvk figures results.json`"), std::string::npos) << out;
  EXPECT_NE(out.find("mode: **virtual time (-icount shift=0,sleep=off)**"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir_ / "README.md.figures-tmp"));
}

// Without --file: the source tree's docs/results/figures.md, not README.md
// (which has no block).
TEST_F(FiguresCommand, DefaultIsTheResultsFiguresFile) {
  const fs::path target = dir_ / "docs" / "results" / "figures.md";
  fs::create_directories(target.parent_path());
  std::ofstream(target) << kReadme;
  std::ofstream(dir_ / "README.md") << "# pvk\n\nNo block here.\n";
  CLI::App app;
  Commands commands(app, dir_, dir_);
  const std::string results = (dir_ / "results.json").string();
  const char* argv[] = {"pvk-cli", "figures", results.c_str()};
  app.parse(3, argv);
  ASSERT_TRUE(commands.selected());
  EXPECT_EQ(commands.run(), 0);
  EXPECT_NE(read_text_file(target).value().find("_Written by `tools/pvk figures results.json`"), std::string::npos);
  EXPECT_EQ(read_text_file(dir_ / "README.md").value(), "# pvk\n\nNo block here.\n");
}

TEST_F(FiguresCommand, NotAResultsFileFails) {
  const fs::path readme = dir_ / "README.md";
  std::ofstream(readme) << kReadme;
  std::ofstream(dir_ / "results.json") << "# not JSON\n";
  ::testing::internal::CaptureStderr();
  const int status = figures(readme);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(status, 0);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("results.json is not JSON"), std::string::npos) << err;
  EXPECT_EQ(read_text_file(readme).value(), kReadme);
}

TEST_F(FiguresCommand, ReadmeWithoutMarkersFails) {
  const fs::path readme = dir_ / "README.md";
  std::ofstream(readme) << "# pvk\n\nNo block here.\n";
  ::testing::internal::CaptureStderr();
  const int status = figures(readme);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(status, 0);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("pvk: error: " + readme.string() + ": no figures block"), std::string::npos) << err;
  EXPECT_EQ(read_text_file(readme).value(), "# pvk\n\nNo block here.\n");
}

}  // namespace
}  // namespace pvk::bench
