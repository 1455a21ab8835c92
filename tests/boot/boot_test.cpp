// Boot tests: each test boots the real pvk.elf with a kernel command line
// and checks the console contract (docs/design.md, "Console protocol", and
// docs/boot-parameters.md). Every test is parameterised by platform: the same tests run
// natively and under Xen (as dom0), one INSTANTIATE_TEST_SUITE_P each.
#include "boot_support.hpp"

#include <algorithm>

namespace pvk::boot_test {
namespace {

// What a boot test needs to know about a platform.
struct PlatformCase {
  Platform platform;
  std::string working_mmu;      // an MMU backend that works on this platform
  std::string unavailable_mmu;  // one the kernel must refuse here, cleanly
  // When the kernel fails, the last console line must contain this: the
  // platform's own word that the machine stopped, which the runner stops at
  // (Xen would otherwise wait 5 s and reboot). Empty: nothing to check.
  std::string failure_stop_line;
};

// Readable parameter values in gtest output.
void PrintTo(const PlatformCase& c, std::ostream* out) { *out << platform_name(c.platform); }

class Boot : public ::testing::TestWithParam<PlatformCase> {
 protected:
  RunResult boot(const std::string& params) const { return boot_test::boot(GetParam().platform, params); }
  const std::string& working_mmu() const { return GetParam().working_mmu; }
  const std::string& unavailable_mmu() const { return GetParam().unavailable_mmu; }

  // failed_cleanly, and the platform's report of the failure is in the
  // console and in the failure summary (RunResult::xen_trouble), and the run
  // ended right there.
  ::testing::AssertionResult failed_cleanly_here(const RunResult& r) const {
    if (auto clean = failed_cleanly(r); !clean) return clean;
    const std::string& stop = GetParam().failure_stop_line;
    if (stop.empty()) return ::testing::AssertionSuccess();
    if (r.lines.empty() || !contains(r.lines.back(), stop))
      return ::testing::AssertionFailure() << "the run did not end at the platform's line \"" << stop << "\"";
    if (std::none_of(r.xen_trouble.begin(), r.xen_trouble.end(),
                     [&](const std::string& l) { return contains(l, stop); }))
      return ::testing::AssertionFailure() << "the failure summary does not show \"" << stop << "\"";
    return ::testing::AssertionSuccess();
  }
};

TEST_P(Boot, MmSelftestPasses) {
  const RunResult r = boot("mmu=" + working_mmu() + " selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", working_mmu())) << transcript(r);
  EXPECT_TRUE(find_record(r, "selftest", [](const json& rec) {
    return rec.value("name", "") == "mm" && rec.value("pass", false) == true;
  })) << "no {\"event\":\"selftest\",\"name\":\"mm\",...,\"pass\":true} record" << transcript(r);
}

// pte=flags routes every PTE flag read through pvops (docs/boot-parameters.md); the mm selftest must pass in that mode too.
TEST_P(Boot, MmSelftestPassesWithPteFlags) {
  const RunResult r = boot("mmu=" + working_mmu() + " pte=flags selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", working_mmu())) << transcript(r);
  EXPECT_TRUE(booted_with(r, "pte", "flags")) << transcript(r);
  EXPECT_TRUE(find_record(r, "selftest", [](const json& rec) {
    return rec.value("name", "") == "mm" && rec.value("pass", false) == true;
  })) << "no {\"event\":\"selftest\",\"name\":\"mm\",...,\"pass\":true} record" << transcript(r);
}

TEST_P(Boot, DefaultParametersPass) {
  const RunResult r = boot("");
  EXPECT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", working_mmu())) << "the default backend" << transcript(r);
}

TEST_P(Boot, UnavailableMmuBackendIsABootError) {
  const RunResult r = boot("mmu=" + unavailable_mmu());
  EXPECT_TRUE(failed_cleanly_here(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [&](std::string_view l) { return contains(l, "mmu") && contains(l, unavailable_mmu()); }))
      << "expected an error line naming mmu and " << unavailable_mmu() << transcript(r);
}

TEST_P(Boot, UnknownMmuValueIsABootError) {
  const RunResult r = boot("mmu=bogus");
  EXPECT_TRUE(failed_cleanly_here(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "mmu"); }))
      << "expected an error line naming mmu" << transcript(r);
}

TEST_P(Boot, UnknownParameterIsABootError) {
  const RunResult r = boot("frobnicate=1");
  EXPECT_TRUE(failed_cleanly_here(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "frobnicate"); }))
      << "expected an error line naming frobnicate" << transcript(r);
}

TEST_P(Boot, FaultIsReportedWithRegistersAndBacktrace) {
  const RunResult r = boot("selftest=fault");
  EXPECT_FALSE(r.timed_out) << transcript(r);
  EXPECT_TRUE(failed_cleanly_here(r)) << transcript(r);
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
INSTANTIATE_TEST_SUITE_P(Native, Boot, ::testing::Values(PlatformCase{Platform::native, "native", "batched", ""}),
                         case_name);

// Under Xen the kernel is dom0: batched is the default, native cannot work
// (page tables are read-only to a PV guest), and a failing dom0 makes Xen
// say "Hardware Dom0 crashed", where the runner stops QEMU.
INSTANTIATE_TEST_SUITE_P(Xen, Boot,
                         ::testing::Values(PlatformCase{Platform::xen, "batched", "native", "Hardware Dom0 crashed"}),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
