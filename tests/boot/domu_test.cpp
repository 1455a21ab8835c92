// pvk as a real Xen PV domU: created by `xl` in a Linux dom0, the way a Xen
// host runs it, on the nested Xen host (`pvk run --platform xen-domu`: Xen
// and Debian's Linux as dom0 in QEMU TCG, running the xl driver
// tools/xl/pvk-xl.sh). One suite, parameterised by MMU backend: the console
// ring and event channel carry the output, SCHEDOP_shutdown's reason is what
// xl reports, and every backend must work here as it does in dom0.
#include "domu_support.hpp"

namespace pvk::boot_test {
namespace {

class DomU : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& mmu() const { return GetParam(); }
  RunResult boot(const std::string& params) const {
    RunResult r = boot_domu("mmu=" + mmu() + " " + params);
    EXPECT_TRUE(booted_with(r, "role", "domU")) << transcript(r);
    EXPECT_TRUE(booted_with(r, "mmu", mmu())) << transcript(r);
    return r;
  }
};

// selftest=mm under every Xen backend; the process suite under the two that
// matter most for it (batched hypercalls vs trapped page-table writes).
class DomUMm : public DomU {};
class DomUProcesses : public DomU {};

// xl saw the domain power off (not crash, not time out), as the driver says.
::testing::AssertionResult powered_off(const RunResult& r) {
  if (r.platform_exit.verdict != ExitVerdict::pass)
    return ::testing::AssertionFailure() << "the domain did not power off: " << r.platform_exit.description;
  return ::testing::AssertionSuccess();
}

TEST_P(DomUMm, SelftestPasses) {
  const RunResult r = boot("selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(powered_off(r)) << transcript(r);
  EXPECT_TRUE(find_record(r, "selftest", [](const json& rec) {
    return rec.value("name", "") == "mm" && rec.value("pass", false) == true;
  })) << "no {\"event\":\"selftest\",\"name\":\"mm\",...,\"pass\":true} record" << transcript(r);
  for (const char* step : {"map", "protect_ro", "protect_rw", "unmap"}) {
    std::string why;
    EXPECT_TRUE(step_counters(r, "mm", step, &why)) << why << transcript(r);
  }
}

// The user-program suite (fork/COW, exec, signals, pipes, mmap, ...), as the
// first process: it reports one record per test and a summary.
TEST_P(DomUProcesses, ProcessTestsPass) {
  const RunResult r = boot("init=proctest");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(powered_off(r)) << transcript(r);
  const auto summary = find_record(r, "user_tests");
  ASSERT_TRUE(summary) << "no {\"event\":\"user_tests\",...} record" << transcript(r);
  const json& rec = r.records[*summary];
  EXPECT_GT(rec.value("passed", 0), 0) << rec.dump();
  EXPECT_EQ(rec.value("failed", -1), 0) << rec.dump();
}

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(XenDomU, DomUMm, ::testing::Values("batched", "wrpt", "direct"), backend_name);
INSTANTIATE_TEST_SUITE_P(XenDomU, DomUProcesses, ::testing::Values("batched", "wrpt"), backend_name);

// A kernel fault: pvk prints its report and the done/fail record and crashes
// the domain (SCHEDOP_shutdown crash); xl reports reason "crash", and the run
// fails with both in its reason.
TEST(XenDomUFailure, CrashIsAFailureWithTheReason) {
  const RunResult r = boot_domu("selftest=fault");
  EXPECT_FALSE(r.pass) << transcript(r);
  EXPECT_FALSE(r.timed_out) << transcript(r);
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_NE(r.reason.find("crashed"), std::string::npos) << "reason: " << r.reason << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "RIP"); })) << transcript(r);
  EXPECT_TRUE(std::any_of(r.xen_trouble.begin(), r.xen_trouble.end(),
                          [](const std::string& l) { return contains(l, "reason code 3"); }))
      << "the failure summary should quote xl's shutdown reason" << transcript(r);
}

// A parameter error is a clean failure too, reported before any work.
TEST(XenDomUFailure, UnavailableBackendIsABootError) {
  const RunResult r = boot_domu("mmu=native");
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "mmu") && contains(l, "native"); }))
      << transcript(r);
}

// The same domU through libvirt: in the nested dom0, libvirtd's libxl driver
// defines and starts tools/libvirt/pvk-xen.xml (pvk-xl --via libvirt), and
// libvirt's shut-off reason (shutdown / crashed) is the platform's verdict.
RunResult boot_domu_libvirt(const std::string& params) {
  RunOptions options;
  options.platform = Platform::xen_domu;
  options.via = Via::libvirt;
  options.kernel = PVK_KERNEL_PATH;
  options.params = params;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  options.dom0_cache_dir = PVK_DOM0_CACHE_DIR;
  options.tools_dir = PVK_TOOLS_DIR;
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

TEST(XenDomULibvirt, MmSelftestPasses) {
  const RunResult r = boot_domu_libvirt("mmu=wrpt selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "role", "domU")) << transcript(r);
  EXPECT_TRUE(powered_off(r)) << transcript(r);
}

TEST(XenDomULibvirt, CrashIsAFailureWithTheReason) {
  const RunResult r = boot_domu_libvirt("selftest=fault");
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_NE(r.reason.find("crashed"), std::string::npos) << "reason: " << r.reason << transcript(r);
}

}  // namespace
}  // namespace pvk::boot_test
