// TLB shootdown boot tests: selftest=shootdown at
// --smp 2 natively and under Xen PV (batched, both shootdown= modes), and
// the shootdown= switch's refusals.
//
// The selftest needs cross-CPU requests (base/arch/cross_cpu.h), which
// reach the APs natively (a fixed-vector IPI) and under Xen (event
// channels): only a pass with shootdowns counted is accepted — a skip, a
// failure or a pass without them fails these tests.
#include "boot_support.hpp"

namespace pvk::boot_test {
namespace {

RunResult boot_two_cpus(Platform platform, const std::string& params) {
  RunOptions options;
  options.platform = platform;
  options.kernel = PVK_KERNEL_PATH;
  options.params = params;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  options.smp = 2;
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

// The selftest's verdict: a pass with shootdowns counted the backend's way
// (IPIs natively and with shootdown=ipi, MMUEXT_*_MULTI with
// shootdown=hypercall).
::testing::AssertionResult shot_down(const RunResult& r, std::string_view via) {
  const auto i = find_record(r, "selftest", "name", "shootdown");
  if (!i) return ::testing::AssertionFailure() << "no selftest record for shootdown";
  const json& s = r.records[*i];
  if (s.value("skipped", false)) return ::testing::AssertionFailure() << "skipped: " << s.dump();
  if (!s.value("pass", false) || !r.pass) return ::testing::AssertionFailure() << "failed: " << s.dump();
  if (s.value("shootdowns", 0u) < 2) return ::testing::AssertionFailure() << "fewer than 2 shootdowns: " << s.dump();
  const uint64_t used = s.value(std::string(via), uint64_t{0});
  if (used == 0) return ::testing::AssertionFailure() << "no " << via << " counted: " << s.dump();
  return ::testing::AssertionSuccess();
}

TEST(ShootdownNative, SelftestWithTwoCpus) {
  const RunResult r = boot_two_cpus(Platform::native, "mmu=native selftest=shootdown");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(shot_down(r, "ipis_sent")) << transcript(r);
}

TEST(ShootdownNative, HypercallModeIsRefusedInOneLine) {
  const RunResult r = boot(Platform::native, "shootdown=hypercall");
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) {
    return contains(l, "'shootdown=hypercall'") && contains(l, "accepted here: ipi");
  })) << transcript(r);
}

TEST(ShootdownNative, MalformedValueIsRefused) {
  const RunResult r = boot(Platform::native, "shootdown=ipis");
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [](std::string_view l) { return contains(l, "hypercall|ipi"); })) << transcript(r);
}

class XenShootdown : public ::testing::TestWithParam<std::string> {};

TEST_P(XenShootdown, BatchedSelftestWithTwoVcpus) {
  const RunResult r = boot_two_cpus(Platform::xen, "mmu=batched shootdown=" + GetParam() + " selftest=shootdown");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(shot_down(r, GetParam() == "ipi" ? "ipis_sent" : "tlb_flush_multi")) << transcript(r);
  // The verb's flushes of vCPU 1 went the mode's way, and Xen refused
  // none: hypercall mode as MMUEXT_*_MULTI ops, ipi mode as event-channel
  // requests (no fallback to the hypercall needed).
  const auto step = find_record(r, "selftest_step", "step", "xen_flush_multi");
  ASSERT_TRUE(step) << transcript(r);
  const json& s = r.records[*step];
  if (GetParam() == "hypercall") {
    EXPECT_GE(s.value("tlb_flush_multi", 0u), 2u) << transcript(r);
  } else {
    EXPECT_GE(s.value("ipis_sent", 0u), 2u) << transcript(r);
  }
  EXPECT_FALSE(find_record(r, "hypercall_error")) << transcript(r);
  EXPECT_FALSE(find_record(r, "shootdown_fallback")) << transcript(r);
}

INSTANTIATE_TEST_SUITE_P(ShootdownXen, XenShootdown, ::testing::Values("hypercall", "ipi"));

}  // namespace
}  // namespace pvk::boot_test
