// Boot tests: each test boots the real pvk.elf with a kernel command line
// and checks the console contract (DESIGN.md, "Console protocol" and "Boot
// parameters"). Every test is parameterised by platform, so running the
// suite under Xen is one more INSTANTIATE_TEST_SUITE_P, not a copy.
#include "pvk/record.hpp"
#include "pvk/run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

namespace pvk {
namespace {

using nlohmann::json;

// What a boot test needs to know about a platform.
struct PlatformCase {
  Platform platform;
  std::string working_mmu;      // an MMU backend that works on this platform
  std::string unavailable_mmu;  // one the kernel must refuse here, cleanly
};

// Readable parameter values in gtest output.
void PrintTo(const PlatformCase& c, std::ostream* out) { *out << platform_name(c.platform); }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains(std::string_view line, std::string_view word) { return line.find(word) != std::string_view::npos; }

// Human-text lines only: the contract puts error messages and fault reports
// in text, not records.
std::vector<std::string> text_lines(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& line : r.lines)
    if (parse_console_line(line).kind == ConsoleLine::Kind::text) out.push_back(line);
  return out;
}

bool any_text_line(const RunResult& r, const std::function<bool(std::string_view)>& pred) {
  const auto lines = text_lines(r);
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return pred(l); });
}

// Attached to failed assertions: the verdict and the end of the console.
std::string transcript(const RunResult& r) {
  constexpr size_t tail = 80;
  std::ostringstream out;
  out << "\n--- verdict: " << (r.pass ? "pass" : "FAIL") << ": " << r.reason << "\n--- console";
  if (r.lines.size() > tail) out << " (last " << tail << " of " << r.lines.size() << " lines)";
  out << ":\n";
  for (size_t i = r.lines.size() > tail ? r.lines.size() - tail : 0; i < r.lines.size(); ++i)
    out << r.lines[i] << "\n";
  for (const auto& line : r.xen_trouble) out << "--- xen trouble: " << line << "\n";
  return out.str();
}

// A failure the kernel handled itself: it printed done/fail and shut the
// machine down with a failing status, rather than hanging or crashing.
::testing::AssertionResult failed_cleanly(const RunResult& r) {
  if (r.pass) return ::testing::AssertionFailure() << "the run passed";
  if (r.timed_out) return ::testing::AssertionFailure() << "the run timed out";
  if (!r.done || r.done->value("status", "") != "fail")
    return ::testing::AssertionFailure() << "no done record with status fail";
  if (r.platform_exit.verdict != ExitVerdict::fail)
    return ::testing::AssertionFailure() << "the machine did not stop with a failing status ("
                                         << r.platform_exit.description << ")";
  return ::testing::AssertionSuccess();
}

class Boot : public ::testing::TestWithParam<PlatformCase> {
 protected:
  RunResult boot(const std::string& params) const {
    RunOptions options;
    options.platform = GetParam().platform;
    options.kernel = PVK_KERNEL_PATH;
    options.params = params;
    options.xen_cache_dir = PVK_XEN_CACHE_DIR;
    return run_kernel(options);
  }
  const std::string& working_mmu() const { return GetParam().working_mmu; }
  const std::string& unavailable_mmu() const { return GetParam().unavailable_mmu; }
};

TEST_P(Boot, MmSelftestPasses) {
  const RunResult r = boot("mmu=" + working_mmu() + " selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);

  const bool selftest_passed = std::any_of(r.records.begin(), r.records.end(), [](const json& rec) {
    return rec.value("event", "") == "selftest" && rec.value("pass", false) == true;
  });
  EXPECT_TRUE(selftest_passed) << "no {\"event\":\"selftest\",...,\"pass\":true} record" << transcript(r);

  // A leak is a failure: wherever the kernel reports frame counts around a
  // test, they must match.
  for (const json& rec : r.records) {
    if (rec.contains("free_frames_before") && rec.contains("free_frames_after")) {
      EXPECT_EQ(rec["free_frames_after"], rec["free_frames_before"]) << "frame leak: " << rec.dump();
    }
  }
}

TEST_P(Boot, DefaultParametersPass) {
  const RunResult r = boot("");
  EXPECT_TRUE(r.pass) << transcript(r);
}

TEST_P(Boot, UnavailableMmuBackendIsABootError) {
  const RunResult r = boot("mmu=" + unavailable_mmu());
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [&](std::string_view l) { return contains(l, "mmu") && contains(l, unavailable_mmu()); }))
      << "expected an error line naming mmu and " << unavailable_mmu() << transcript(r);
}

TEST_P(Boot, UnknownMmuValueIsABootError) {
  const RunResult r = boot("mmu=bogus");
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "mmu"); }))
      << "expected an error line naming mmu" << transcript(r);
}

TEST_P(Boot, UnknownParameterIsABootError) {
  const RunResult r = boot("frobnicate=1");
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "frobnicate"); }))
      << "expected an error line naming frobnicate" << transcript(r);
}

TEST_P(Boot, FaultIsReportedWithRegistersAndBacktrace) {
  const RunResult r = boot("selftest=fault");
  EXPECT_FALSE(r.timed_out) << transcript(r);
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "RIP"); })) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "CR2"); })) << transcript(r);

  // The backtrace starts at a line saying "backtrace" (or "call trace"); a
  // frame below it must name the faulting function.
  const auto lines = text_lines(r);
  const auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    const std::string low = lower(l);
    return contains(low, "backtrace") || contains(low, "call trace");
  });
  ASSERT_NE(header, lines.end()) << "no backtrace header line" << transcript(r);
  const bool symbolized = std::any_of(std::next(header), lines.end(), [](const std::string& l) {
    const std::string low = lower(l);
    return contains(low, "selftest") || contains(low, "fault");
  });
  EXPECT_TRUE(symbolized) << "no backtrace frame naming the selftest/fault function" << transcript(r);
}

std::string case_name(const ::testing::TestParamInfo<PlatformCase>& info) {
  return std::string(platform_name(info.param.platform));
}

// Natively, the Xen-only backends cannot work; batched stands for them.
INSTANTIATE_TEST_SUITE_P(Native, Boot, ::testing::Values(PlatformCase{Platform::native, "native", "batched"}),
                         case_name);

// Under Xen (with a matching gtest_discover_tests in CMakeLists.txt):
// INSTANTIATE_TEST_SUITE_P(Xen, Boot, ::testing::Values(PlatformCase{Platform::xen, "batched", "native"}),
//                          case_name);

}  // namespace
}  // namespace pvk
