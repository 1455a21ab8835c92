// The process runner: line streaming, exit status, timeouts and stopping.
#include "pvk/process.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace pvk {
namespace {

using namespace std::chrono_literals;

struct Captured {
  ProcessResult result;
  std::vector<std::string> lines;
};

Captured run(std::vector<std::string> argv, std::chrono::milliseconds timeout = 10s) {
  Captured c;
  ProcessOptions options;
  options.argv = std::move(argv);
  options.timeout = timeout;
  c.result = run_process(options, [&](std::string_view line) {
    c.lines.emplace_back(line);
    return LineAction::keep_going;
  });
  return c;
}

TEST(Process, StreamsLinesAndReturnsExitCode) {
  const Captured c = run({"sh", "-c", "printf 'one\\ntwo\\r\\nthree'; exit 7"});
  EXPECT_EQ(c.result.exit_code, 7);
  EXPECT_FALSE(c.result.timed_out);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"one", "two", "three"}));
}

// A guest that writes megabytes without a newline must not make the host
// hold them: the line arrives in bounded pieces, every byte accounted for.
TEST(Process, ALineThatNeverEndsArrivesInBoundedPieces) {
  const Captured c = run({"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo after"});
  ASSERT_GE(c.lines.size(), 3u);
  size_t bytes = 0;
  for (size_t i = 0; i + 1 < c.lines.size(); ++i) {
    EXPECT_LE(c.lines[i].size(), 64u * 1024) << i;
    bytes += c.lines[i].size();
  }
  EXPECT_EQ(bytes, 1000000u);
  EXPECT_EQ(c.lines.back(), "after");
}

TEST(Process, MergesStderrIntoTheSameStream) {
  const Captured c = run({"sh", "-c", "echo out; echo err >&2"});
  EXPECT_EQ(c.result.exit_code, 0);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"out", "err"}));
}

TEST(Process, ArgumentsAreNotInterpretedByAShell) {
  const Captured c = run({"printf", "%s\\n", "$HOME; echo injected"});
  EXPECT_EQ(c.lines, (std::vector<std::string>{"$HOME; echo injected"}));
}

TEST(Process, StdinIsEmpty) {
  const Captured c = run({"sh", "-c", "cat; echo end"});
  EXPECT_EQ(c.lines, (std::vector<std::string>{"end"}));
}

TEST(Process, TimeoutKillsTheProcessGroup) {
  const auto start = std::chrono::steady_clock::now();
  // The grandchild sleep shares the pipe: only killing the whole group ends it.
  const Captured c = run({"sh", "-c", "echo started; sleep 10 & sleep 10"}, 1s);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(c.result.timed_out);
  EXPECT_NE(c.result.term_signal, 0);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"started"}));
  EXPECT_GE(took, 1s);
  EXPECT_LT(took, 5s);
}

TEST(Process, PlainSleepTimesOut) {
  const Captured c = run({"sleep", "10"}, 1s);
  EXPECT_TRUE(c.result.timed_out);
  EXPECT_LT(c.result.elapsed, 5s);
}

TEST(Process, TermIgnoringChildIsKilledAfterGrace) {
  ProcessOptions options;
  options.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"};
  options.timeout = 500ms;
  options.kill_grace = 300ms;
  const ProcessResult r = run_process(options, [](std::string_view) { return LineAction::keep_going; });
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.elapsed, 5s);
}

TEST(Process, SinkCanStopTheChild) {
  ProcessOptions options;
  options.argv = {"sh", "-c", "echo a; echo halt; echo after; sleep 10"};
  options.timeout = 10s;
  std::vector<std::string> seen;
  const ProcessResult r = run_process(options, [&](std::string_view line) {
    seen.emplace_back(line);
    return line == "halt" ? LineAction::stop : LineAction::keep_going;
  });
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.elapsed, 5s);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen[1], "halt");
  EXPECT_EQ(seen.back(), "halt") << "nothing is delivered after a stop";
}

TEST(Process, CancelFlagStopsTheChild) {
  std::atomic<bool> cancel{true};
  ProcessOptions options;
  options.argv = {"sleep", "10"};
  options.cancel = &cancel;
  const ProcessResult r = run_process(options, [](std::string_view) { return LineAction::keep_going; });
  EXPECT_TRUE(r.stopped);
  EXPECT_LT(r.elapsed, 5s);
}

TEST(Process, SinkExceptionDoesNotLeakTheChild) {
  ProcessOptions options;
  options.argv = {"sh", "-c", "echo boom; sleep 10"};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_process(options, [](std::string_view) -> LineAction { throw std::runtime_error("sink"); }),
               std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Process, MissingProgramThrows) {
  EXPECT_THROW(run({"pvk-no-such-program-xyz"}), std::system_error);
}

TEST(Process, RunToFileWritesStdout) {
  const auto path = std::filesystem::temp_directory_path() / ("pvk_run_to_file_" + std::to_string(::getpid()));
  EXPECT_EQ(run_to_file({"printf", "abc"}, path), 0);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "abc");
  std::filesystem::remove(path);
  EXPECT_EQ(run_to_file({"false"}, path), 1);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pvk
