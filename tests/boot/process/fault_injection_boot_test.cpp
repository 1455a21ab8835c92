// Fault injection boot tests (fail=): proctest runs as init while
// the frame allocator and (under Xen) the hypervisor refuse allocations and
// page-table updates on a seeded schedule. The
// workload is expected to see ENOMEM (a test whose fork fails fails), so
// the kernel is judged instead: the run ends with the kernel's pass (it
// kept running, no panic), failures were really injected, and every frame
// came back — no half-built address space leaked one.
#include "../boot_support.hpp"

#include <ostream>
#include <vector>

namespace pvk::boot_test {
namespace {

// proctest under injected failures: a test whose fork or pipe failed may
// wait for a child that never came, and the runner's guard ends it. 20 s,
// not its default (a hang guard of 120 s, more than a native boot's
// whole 60 s), so the suite still finishes inside the boot.
constexpr const char* kProctestUnderInjection = "init=proctest init_args=timeout=20";

struct FaultCase {
  Platform platform;
  std::string mmu;
  std::string fail;  // the fail= value
  uint64_t seed;
  std::vector<std::string> injected;  // kinds that must have failed at least once
  std::string workload = kProctestUnderInjection;

  std::string params() const {
    return "mmu=" + mmu + " " + workload + " fail=" + fail + " fail_seed=" + std::to_string(seed);
  }
};

void PrintTo(const FaultCase& c, std::ostream* out) { *out << platform_name(c.platform) << ": " << c.params(); }

class FaultInjection : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultInjection, TheKernelSurvivesAndGetsEveryFrameBack) {
  const FaultCase& c = GetParam();
  const RunResult r = boot(c.platform, c.params());
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_FALSE(find_record(r, "crash")) << transcript(r);
  EXPECT_FALSE(find_record(r, "panic")) << transcript(r);
  const auto fi = find_record(r, "fault_injection");
  ASSERT_TRUE(fi) << transcript(r);
  const json& rec = r.records[*fi];
  for (const std::string& kind : c.injected) {
    EXPECT_GT(rec.value(kind + "_injected", uint64_t{0}), 0u) << kind << ": " << rec.dump();
    EXPECT_GT(rec.value(kind + "_trials", uint64_t{0}), rec.value(kind + "_injected", uint64_t{0})) << rec.dump();
  }
  EXPECT_EQ(rec.value("seed", uint64_t{0}), c.seed);
  const auto init = find_record(r, "init_exit");
  ASSERT_TRUE(init) << transcript(r);
  EXPECT_EQ(r.records[*init].value("free_frames_before", uint64_t{0}),
            r.records[*init].value("free_frames_after", uint64_t{1}))
      << r.records[*init].dump();
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
}

// Prefixes as proctest's, so tests/boot/process/CMakeLists.txt labels them.
std::string case_name(const ::testing::TestParamInfo<FaultCase>& p) {
  const bool fuzz = p.param.workload.starts_with("bench=sysfuzz");
  const bool ptshare = p.param.workload.find("ptshare=on") != std::string::npos;
  return p.param.mmu + (fuzz ? "_sysfuzz" : "") + (ptshare ? "_ptshare_on" : "") + "_seed" +
         std::to_string(p.param.seed);
}
INSTANTIATE_TEST_SUITE_P(ProcessNative, FaultInjection,
                         ::testing::Values(FaultCase{Platform::native, "native", "frame_alloc:1/60", 1, {"frame_alloc"}},
                                           FaultCase{Platform::native, "native", "frame_alloc:1/20", 2, {"frame_alloc"}},
                                           // Table copy-outs and gate openings (table sharing) without frames.
                                           FaultCase{Platform::native, "native", "frame_alloc:1/40", 5, {"frame_alloc"},
                                                     std::string(kProctestUnderInjection) + " ptshare=on"}),
                         case_name);
// Refused updates: a fault's mapping fails (OOM kill of that process),
// teardown, fork and mprotect send the refused requests again.
INSTANTIATE_TEST_SUITE_P(
    ProcessXen, FaultInjection,
    ::testing::Values(FaultCase{Platform::xen, "batched", "mmu_update:1/100,mmuext_op:1/50,frame_alloc:1/100", 3,
                                {"mmu_update", "mmuext_op", "frame_alloc"}},
                      FaultCase{Platform::xen, "direct", "mmu_update:1/200,frame_alloc:1/100", 6,
                                {"mmu_update", "frame_alloc"}},
                      FaultCase{Platform::xen, "wrpt", "mmu_update:1/20,frame_alloc:1/60", 4,
                                {"mmu_update", "frame_alloc"}},
                      // Refused L2 stores and table pins in copy-outs, gate
                      // openings and whole-table mprotects (ptshare=on).
                      FaultCase{Platform::xen, "batched", "mmu_update:1/60,mmuext_op:1/30,frame_alloc:1/100", 7,
                                {"mmu_update", "mmuext_op", "frame_alloc"}, std::string(kProctestUnderInjection) + " ptshare=on"},
                      // Unhook: refused L2 stores when a table is unhooked or
                      // rehooked, refused queued entries in auto's queued tables.
                      FaultCase{Platform::xen, "unhook", "mmu_update:1/40,mmuext_op:1/30,frame_alloc:1/100", 8,
                                {"mmu_update", "frame_alloc"}},
                      FaultCase{Platform::xen, "auto", "mmu_update:1/40,mmuext_op:1/30,frame_alloc:1/100", 9,
                                {"mmu_update", "frame_alloc"}},
                      // The syscall fuzzer under refusals: hostile calls and
                      // failing page-table work at once.
                      FaultCase{Platform::xen, "batched", "mmu_update:1/30,mmuext_op:1/20,frame_alloc:1/100", 21,
                                {"mmu_update", "frame_alloc"},
                                // pgd_cache=off: the fuzzer's own frame count
                                // must match exactly (cached roots hold frames)
                                "bench=sysfuzz:seed=21:iters=2000 pgd_cache=off"}),
    case_name);

}  // namespace
}  // namespace pvk::boot_test
