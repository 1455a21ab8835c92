// Security boot tests (issue 13): the user-mode attack suite tests/user/hostile
// as init ("init=hostile") and the syscall fuzzer tests/user/sysfuzz through
// the bench driver ("bench=sysfuzz:seed=..:iters=..:children=..:regress=1"),
// natively and under Xen with every backend. The attacks' own checks are
// hostile's (one record per attack); this file checks that every attack ran
// and passed, that the kernel saw init exit 0 with every frame back, and
// that a user program's fake "done" record never reached the console as a
// kernel record. The fuzzer must end with every child accounted for
// ("unexpected":0), the free frames back at baseline, and the item passed.
#include "../boot_support.hpp"

#include <array>
#include <ostream>
#include <string_view>
#include <vector>

namespace pvk::boot_test {
namespace {

// hostile's attacks (tests/user/hostile_attacks.cpp, kAttacks), each of
// which must report {"event":"test","name":...,"pass":true} exactly once.
constexpr std::array<std::string_view, 24> kAttacks = {
    "nx_exec",           "ud2_sigill",       "int3_sigtrap",     "int_n",
    "sysenter_int80_64", "flags_entries",    "flags_tf",         "flags_timer",
    "sigreturn_forged",  "sigaction_bad_handler", "top_page_syscall", "huge_write_console",
    "huge_pipe_kill",    "signal_high_bits", "default_ignored",  "kill_pid_high_bits",
    "fake_done_record",  "shared_stack_push", "gs_selectors",     "gs_wrgsbase",      "kill_init",        "compat_far",       "compat_far_lret",
    "compat_syscall",
};

// The fuzzer's short budget for tools/pvk test: a few thousand calls.
constexpr const char* kFuzzItem = "bench=sysfuzz:seed=1:iters=3000:children=6:regress=1";

enum class Suite { hostile, sysfuzz };

struct SecCase {
  Platform platform;
  std::string mmu;
  Suite suite;

  std::string params() const {
    return "mmu=" + mmu + " " + (suite == Suite::hostile ? std::string("init=hostile") : std::string(kFuzzItem));
  }
};

void PrintTo(const SecCase& c, std::ostream* out) { *out << platform_name(c.platform) << ": " << c.params(); }

std::vector<SecCase> cases(Platform platform, std::initializer_list<const char*> backends) {
  std::vector<SecCase> out;
  for (Suite s : {Suite::hostile, Suite::sysfuzz})
    for (const char* mmu : backends) out.push_back({platform, mmu, s});
  return out;
}

::testing::AssertionResult every_attack_passed(const RunResult& r) {
  for (std::string_view name : kAttacks) {
    unsigned seen = 0;
    for (const json& rec : r.records) {
      if (rec.value("event", "") != "test" || rec.value("name", "") != name) continue;
      ++seen;
      if (rec.value("pass", false) != true) return ::testing::AssertionFailure() << "attack failed: " << rec.dump();
    }
    if (seen != 1)
      return ::testing::AssertionFailure() << "attack \"" << name << "\" reported " << seen << " times (want once)";
  }
  for (const json& rec : r.records)
    if (rec.value("event", "") == "test" && rec.value("pass", false) != true)
      return ::testing::AssertionFailure() << "attack failed: " << rec.dump();
  const auto done = find_record(r, "hostile_done");
  if (!done) return ::testing::AssertionFailure() << "no {\"event\":\"hostile_done\",...} record";
  const json& d = r.records[*done];
  if (d.value("failed", 1) != 0 || d.value("passed", 0u) < kAttacks.size())
    return ::testing::AssertionFailure() << "hostile_done: " << d.dump();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult init_exited_cleanly(const RunResult& r, std::string_view program) {
  const auto at = find_record(r, "init_exit", "program", program);
  if (!at) return ::testing::AssertionFailure() << "no init_exit record for " << program;
  const json& rec = r.records[*at];
  if (rec.value("exited", false) != true || rec.value("code", -1) != 0)
    return ::testing::AssertionFailure() << "init did not exit 0: " << rec.dump();
  if (rec.value("free_frames_before", 0u) != rec.value("free_frames_after", 1u))
    return ::testing::AssertionFailure() << "frames leaked: " << rec.dump();
  return ::testing::AssertionSuccess();
}

// The console has exactly one line starting `@pvk {"event":"done"`: the
// kernel's own final record. hostile's fake ones must be tagged (@pvk-user)
// or absent.
::testing::AssertionResult no_fake_done_line(const RunResult& r) {
  constexpr std::string_view kDone = "@pvk {\"event\":\"done\"";
  unsigned n = 0;
  size_t last = 0;
  for (size_t i = 0; i < r.lines.size(); ++i)
    if (std::string_view(r.lines[i]).substr(0, kDone.size()) == kDone) ++n, last = i;
  if (n != 1) return ::testing::AssertionFailure() << n << " console lines start with " << kDone << " (want 1)";
  for (size_t i = last + 1; i < r.lines.size(); ++i)
    if (std::string_view(r.lines[i]).substr(0, 5) == "@pvk ")
      return ::testing::AssertionFailure() << "a record after the done line: " << r.lines[i];
  if (!r.done || r.done->value("origin", "kernel") == "user")
    return ::testing::AssertionFailure() << "the verdict's done record is not the kernel's";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult fuzzer_clean(const RunResult& r) {
  const auto at = find_record(r, "sysfuzz");
  if (!at) return ::testing::AssertionFailure() << "no {\"event\":\"sysfuzz\",...} record";
  const json& s = r.records[*at];
  if (s.value("pass", false) != true || s.value("unexpected", 1) != 0 || s.value("regression_failed", 1) != 0)
    return ::testing::AssertionFailure() << "sysfuzz: " << s.dump();
  if (s.value("free_frames_start", 0u) != s.value("free_frames_end", 1u))
    return ::testing::AssertionFailure() << "sysfuzz leaked frames: " << s.dump();
  if (s.value("syscalls", 0u) < 2000) return ::testing::AssertionFailure() << "too few calls made: " << s.dump();
  for (const json& rec : r.records)
    if (rec.value("event", "") == "sysfuzz_child" && rec.value("expected", false) != true)
      return ::testing::AssertionFailure() << "child ended unexpectedly: " << rec.dump();
  bool item = false;
  for (const json& rec : r.records)
    if (rec.value("bench", "") == "sysfuzz") {
      item = true;
      if (rec.value("pass", false) != true) return ::testing::AssertionFailure() << "bench item: " << rec.dump();
    }
  if (!item) return ::testing::AssertionFailure() << "no {\"bench\":\"sysfuzz\",...} record";
  return ::testing::AssertionSuccess();
}

class Security : public ::testing::TestWithParam<SecCase> {};

TEST_P(Security, Survives) {
  const SecCase& c = GetParam();
  const RunResult r = boot(c.platform, c.params());
  RecordProperty("boot_ms", static_cast<int>(r.elapsed.count()));
  EXPECT_TRUE(booted_with(r, "mmu", c.mmu)) << transcript(r);
  if (c.suite == Suite::hostile) {
    EXPECT_TRUE(every_attack_passed(r)) << transcript(r);
    EXPECT_TRUE(init_exited_cleanly(r, "hostile")) << transcript(r);
    EXPECT_TRUE(no_fake_done_line(r)) << transcript(r);
  } else {
    EXPECT_TRUE(fuzzer_clean(r)) << transcript(r);
    EXPECT_TRUE(init_exited_cleanly(r, "bench")) << transcript(r);
    if (const auto at = find_record(r, "sysfuzz"))
      RecordProperty("syscalls_per_s", static_cast<int>(r.records[*at].value("syscalls_per_s", 0u)));
  }
  ASSERT_TRUE(r.pass) << transcript(r);
}

std::string case_name(const ::testing::TestParamInfo<SecCase>& p) {
  return std::string(p.param.suite == Suite::hostile ? "hostile_" : "sysfuzz_") + p.param.mmu;
}

// Discovered by tests/boot/security/CMakeLists.txt (labels boot;security;<platform>).
INSTANTIATE_TEST_SUITE_P(SecurityNative, Security, ::testing::ValuesIn(cases(Platform::native, {"native"})), case_name);
INSTANTIATE_TEST_SUITE_P(SecurityXen, Security,
                         ::testing::ValuesIn(cases(Platform::xen, {"batched", "direct", "wrpt", "unhook", "auto"})),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
