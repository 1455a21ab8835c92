// Exhaustion boot tests: tests/user/exhaust as init runs a fork
// bomb and a memory hog to the end of the machine's frames, twice. The
// kernel must refuse forks with EAGAIN/ENOMEM, end the hog with an OOM kill
// (its oom_kill record) or ENOMEM, keep running, and get every frame back.
#include "../boot_support.hpp"

#include <ostream>

namespace pvk::boot_test {
namespace {

struct ExhaustCase {
  Platform platform;
  std::string mmu;
  std::string params() const { return "mmu=" + mmu + " init=exhaust"; }
};
void PrintTo(const ExhaustCase& c, std::ostream* out) { *out << platform_name(c.platform) << ": " << c.params(); }

class Exhaustion : public ::testing::TestWithParam<ExhaustCase> {};

TEST_P(Exhaustion, ForkBombAndMemoryHogEndCleanly) {
  const RunResult r = boot(GetParam().platform, GetParam().params());
  ASSERT_TRUE(r.pass) << transcript(r);
  const auto at = find_record(r, "exhaust");
  ASSERT_TRUE(at) << transcript(r);
  const json& rec = r.records[*at];
  EXPECT_EQ(rec.value("pass", false), true) << rec.dump();
  EXPECT_GE(rec.value("forks_max", 0), 32) << "the bomb should fill the process table: " << rec.dump();
  EXPECT_TRUE(rec.value("fork_error", 0) == -11 || rec.value("fork_error", 0) == -12) << rec.dump();
  EXPECT_EQ(rec.value("oom_kills", 0) + rec.value("mmap_enomem", 0), rec.value("rounds", 0)) << rec.dump();
  EXPECT_EQ(rec.value("free_frames_start", uint64_t{0}), rec.value("free_frames_end", uint64_t{1})) << rec.dump();
  if (rec.value("oom_kills", 0) > 0) {
    EXPECT_TRUE(find_record(r, "oom_kill")) << "an OOM kill says so in a record";
  }
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
}

std::string case_name(const ::testing::TestParamInfo<ExhaustCase>& p) { return p.param.mmu; }
INSTANTIATE_TEST_SUITE_P(ProcessNative, Exhaustion, ::testing::Values(ExhaustCase{Platform::native, "native"}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(ProcessXen, Exhaustion,
                         ::testing::Values(ExhaustCase{Platform::xen, "batched"}, ExhaustCase{Platform::xen, "wrpt"}),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
