// Process-model boot tests: the user-mode suite tests/user/proctest run as
// init ("init=proctest"), natively and under Xen on every backend, and with
// each mm switch turned away from its default (zero_page=off, pgd_cache=off,
// pte=flags on one backend; ptshare=on on every backend). The fork, COW,
// signal, pipe and mm semantics are proctest's
// own checks, one record per sub-test; this file checks that every sub-test
// ran and passed, that the kernel saw init exit 0 with no frame leaked, and
// that the switch under test took effect. One suite, parameterised by
// (platform, backend, switch): a configuration is a row of data.
#include "../boot_support.hpp"

#include <array>
#include <ostream>
#include <string_view>
#include <vector>

namespace pvk::boot_test {
namespace {

// proctest's sub-tests (tests/user/proctest.cpp, kTests, plus the runner's
// own "leak"), each of which must report {"event":"test","name":...,"pass":true}.
constexpr std::array<std::string_view, 46> kSubTests = {
    "fork_cow",           "fork_tree",          "fork_exec",          "mprotect_segv",
    "sigfpe",             "unhandled_signals",  "kill_handler",       "pipes",
    "pipe_full_writers",
    "zero_page",          "mmap_shared",        "munmap",             "efault",
    "bad_args",           "misc",               "own_calls",               "kernel_isolation",   "ptshare_both_write",
    "ptshare_child_exits", "ptshare_chain",     "ptshare_mprotect",   "ptshare_read_into",
    "ptshare_munmap",
    // Threads (tests/user/test_threads.cpp): clone, futex, TLS, thread exit.
    "threads_shared",     "threads_futex",      "threads_signals",    "threads_exit",
    "threads_fork",       "threads_exec",       "threads_hostile",    "threads_churn",
    // Stale translations on other CPUs (tests/user/test_tlb.cpp).
    "tlb_mprotect",       "tlb_cow_fork",       "tlb_munmap",
    // Lifetimes across sleeps, timed sleeps, exec races (tests/user/test_lifetimes.cpp).
    "lifetime_pipe_close", "lifetime_pipe_dup2", "lifetime_pipe_write", "futex_timed_progress",
    "futex_timeouts",     "exec_race",
    // FP/SIMD state across switches, signals, fork, exec; forged FP images (tests/user/test_fpu.cpp).
    "fpu_switch",         "fpu_signal",         "fpu_fork",           "fpu_exec",
    "fpu_sigreturn_forged",
    "leak",
};

// The sub-tests over whole shared L1 tables (tests/user/test_ptshare.cpp).
// Each record carries the counter deltas of its case: "fork_shares" (the
// tables the region's first fork shared) and the ptshare counters.
constexpr std::array<std::string_view, 6> kPtshareSubTests = {
    "ptshare_both_write", "ptshare_child_exits", "ptshare_chain",
    "ptshare_mprotect",   "ptshare_read_into",   "ptshare_munmap",
};
// The ptshare counters, all 0 with ptshare=off.
constexpr std::array<std::string_view, 5> kPtshareCounters = {
    "pt_shares", "pt_copyouts", "pt_gate_opens", "pt_pushdowns", "l2_protects",
};

// One boot-parameter switch moved off its default, or none.
enum class Switch { none, zero_page_off, pgd_cache_off, pte_flags, ptshare_on, pvpatch_off, pvpatch_off_pte_flags };

struct SwitchInfo {
  Switch sw;
  const char* param;   // on the command line
  const char* name;    // in the test name
  bool every_backend;  // booted with each backend, not only the platform's first
  bool skip_direct = false;  // ... except direct (the same sites as batched)
};
constexpr SwitchInfo kSwitches[] = {
    {Switch::none, "", "", false},
    {Switch::zero_page_off, "zero_page=off", "_zero_page_off", false},
    {Switch::pgd_cache_off, "pgd_cache=off", "_pgd_cache_off", false},
    {Switch::pte_flags, "pte=flags", "_pte_flags", true, true},
    {Switch::ptshare_on, "ptshare=on", "_ptshare_on", true},
    // pvpatch=on is the default: every case above runs patched sites.
    {Switch::pvpatch_off, "pvpatch=off", "_pvpatch_off", true, true},
    {Switch::pvpatch_off_pte_flags, "pvpatch=off pte=flags", "_pvpatch_off_pte_flags", true, true},
};
const SwitchInfo& info(Switch sw) {
  for (const SwitchInfo& s : kSwitches)
    if (s.sw == sw) return s;
  return kSwitches[0];
}

struct ProcCase {
  Platform platform;
  std::string mmu;
  Switch sw = Switch::none;
  Image image = Image::pvops;

  std::string params() const {
    std::string p = "mmu=" + mmu + " init=proctest";
    if (*info(sw).param) p += std::string(" ") + info(sw).param;
    return p;
  }
  bool zero_page() const { return sw != Switch::zero_page_off; }
  bool ptshare() const { return sw == Switch::ptshare_on; }
  const char* pte() const {
    return sw == Switch::pte_flags || sw == Switch::pvpatch_off_pte_flags ? "flags" : "attrs";
  }
  bool pvpatch() const { return sw != Switch::pvpatch_off && sw != Switch::pvpatch_off_pte_flags; }
};

void PrintTo(const ProcCase& c, std::ostream* out) {
  *out << platform_name(c.platform) << (c.image == Image::builtin ? " (pvk-builtin.elf)" : "") << ": " << c.params();
}

// Each backend with its defaults, `with_switches` also with every switch,
// and every backend with the switches that concern all of them (ptshare=on).
std::vector<ProcCase> cases(Platform platform, std::initializer_list<const char*> backends,
                            const char* with_switches) {
  std::vector<ProcCase> out;
  for (const char* mmu : backends) out.push_back({platform, mmu, Switch::none});
  for (const SwitchInfo& s : kSwitches) {
    if (s.sw == Switch::none) continue;
    if (!s.every_backend) {
      out.push_back({platform, with_switches, s.sw});
      continue;
    }
    for (const char* mmu : backends)
      if (!(s.skip_direct && std::string_view(mmu) == "direct")) out.push_back({platform, mmu, s.sw});
  }
  // The compiled-in native baseline runs the same suite.
  if (platform == Platform::native) out.push_back({platform, "native", Switch::none, Image::builtin});
  return out;
}

// Every expected sub-test reported exactly once, with pass true; no record
// of any test says pass false.
::testing::AssertionResult every_sub_test_passed(const RunResult& r) {
  for (std::string_view name : kSubTests) {
    unsigned seen = 0;
    for (const json& rec : r.records) {
      if (rec.value("event", "") != "test" || rec.value("name", "") != name) continue;
      ++seen;
      if (rec.value("pass", false) != true) return ::testing::AssertionFailure() << "sub-test failed: " << rec.dump();
    }
    if (seen != 1)
      return ::testing::AssertionFailure() << "sub-test \"" << name << "\" reported " << seen
                                           << " times (want once)";
  }
  for (const json& rec : r.records)
    if (rec.value("event", "") == "test" && rec.value("pass", false) != true)
      return ::testing::AssertionFailure() << "sub-test failed: " << rec.dump();
  return ::testing::AssertionSuccess();
}

// {"event":"user_tests","passed":N,"failed":0,...} with N covering every sub-test.
::testing::AssertionResult suite_summary_clean(const RunResult& r) {
  const auto at = find_record(r, "user_tests");
  if (!at) return ::testing::AssertionFailure() << "no {\"event\":\"user_tests\",...} record";
  const json& rec = r.records[*at];
  const auto passed = rec.find("passed"), failed = rec.find("failed");
  if (passed == rec.end() || !passed->is_number_unsigned() || failed == rec.end() || !failed->is_number_unsigned())
    return ::testing::AssertionFailure() << "user_tests without unsigned passed/failed: " << rec.dump();
  if (failed->get<uint64_t>() != 0) return ::testing::AssertionFailure() << "failed sub-tests: " << rec.dump();
  if (passed->get<uint64_t>() < kSubTests.size())
    return ::testing::AssertionFailure() << "fewer than " << kSubTests.size() << " sub-tests passed: " << rec.dump();
  return ::testing::AssertionSuccess();
}

// The kernel's view: init exited 0, and the free-frame count is back to
// what it was before init started.
::testing::AssertionResult init_exited_cleanly(const RunResult& r) {
  const auto at = find_record(r, "init_exit", "program", "proctest");
  if (!at) return ::testing::AssertionFailure() << "no {\"event\":\"init_exit\",\"program\":\"proctest\",...} record";
  const json& rec = r.records[*at];
  if (rec.value("exited", false) != true || rec.value("code", -1) != 0)
    return ::testing::AssertionFailure() << "init did not exit 0: " << rec.dump();
  const auto before = rec.find("free_frames_before"), after = rec.find("free_frames_after");
  if (before == rec.end() || !before->is_number_unsigned() || after == rec.end() || !after->is_number_unsigned())
    return ::testing::AssertionFailure() << "init_exit without unsigned free_frames_before/after: " << rec.dump();
  if (*before != *after) return ::testing::AssertionFailure() << "frames leaked: " << rec.dump();
  return ::testing::AssertionSuccess();
}

// zero_page=on maps the shared zero page on the read faults of the zero_page
// sub-test (its "zero_page_maps" counter delta) and the whole run's
// init_exit count; zero_page=off never does.
::testing::AssertionResult zero_page_used_as_configured(const RunResult& r, bool on) {
  const std::pair<std::optional<size_t>, const char*> sources[] = {
      {find_record(r, "test", "name", "zero_page"), "the zero_page sub-test"},
      {find_record(r, "init_exit"), "init_exit"},
  };
  for (const auto& [at, what] : sources) {
    if (!at) return ::testing::AssertionFailure() << "no record from " << what;
    const json& rec = r.records[*at];
    const auto maps = rec.find("zero_page_maps");
    if (maps == rec.end() || !maps->is_number_integer())
      return ::testing::AssertionFailure() << what << " reports no zero_page_maps: " << rec.dump();
    const int64_t n = maps->get<int64_t>();
    if (on ? n <= 0 : n != 0)
      return ::testing::AssertionFailure() << "zero_page=" << (on ? "on" : "off") << " but " << what
                                           << " has zero_page_maps " << n << ": " << rec.dump();
  }
  return ::testing::AssertionSuccess();
}

// ptshare=on shares L1 tables: every ptshare_* sub-test's region fork shared
// its three tables ("fork_shares" >= 3), and the sub-tests' counter deltas
// show copy-outs or gate openings, and L2 protections in ptshare_mprotect
// (the sub-tests check the details themselves; this catches a switch that
// does nothing, which they cannot tell from ptshare=off). ptshare=off never
// shares: every ptshare counter delta of every ptshare_* sub-test is 0, and
// so are the init_exit record's where it has them.
::testing::AssertionResult ptshare_used_as_configured(const RunResult& r, bool on) {
  auto number = [](const json& rec, std::string_view key) -> std::optional<int64_t> {
    const auto it = rec.find(key);
    if (it == rec.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  // The boot record names the switch once the kernel reports it.
  if (const auto boot = find_record(r, "boot"); boot && r.records[*boot].contains("ptshare")) {
    if (!booted_with(r, "ptshare", on ? "on" : "off")) return booted_with(r, "ptshare", on ? "on" : "off");
  }
  int64_t copyouts_or_gates = 0;
  for (std::string_view name : kPtshareSubTests) {
    const auto at = find_record(r, "test", "name", std::string(name));
    if (!at) return ::testing::AssertionFailure() << "no record of the " << name << " sub-test";
    const json& rec = r.records[*at];
    const auto fork_shares = number(rec, "fork_shares");
    if (!fork_shares) return ::testing::AssertionFailure() << name << " reports no fork_shares: " << rec.dump();
    for (std::string_view counter : kPtshareCounters)
      if (!number(rec, counter))
        return ::testing::AssertionFailure() << name << " reports no " << counter << ": " << rec.dump();
    if (on) {
      if (*fork_shares < 3)
        return ::testing::AssertionFailure() << "ptshare=on but " << name << "'s fork shared " << *fork_shares
                                             << " of its 3 tables: " << rec.dump();
      copyouts_or_gates += *number(rec, "pt_copyouts") + *number(rec, "pt_gate_opens");
      if (name == "ptshare_mprotect" && *number(rec, "l2_protects") <= 0)
        return ::testing::AssertionFailure() << "ptshare=on but no whole-table mprotect was done at L2: "
                                             << rec.dump();
    } else {
      if (*fork_shares != 0)
        return ::testing::AssertionFailure() << "ptshare=off but " << name << " shared tables: " << rec.dump();
      for (std::string_view counter : kPtshareCounters)
        if (*number(rec, counter) != 0)
          return ::testing::AssertionFailure() << "ptshare=off but " << name << " has " << counter << " "
                                               << *number(rec, counter) << ": " << rec.dump();
    }
  }
  if (on && copyouts_or_gates <= 0)
    return ::testing::AssertionFailure() << "ptshare=on but no shared table was ever copied out or opened";
  if (!on) {
    const auto at = find_record(r, "init_exit");
    if (!at) return ::testing::AssertionFailure() << "no init_exit record";
    for (std::string_view counter : kPtshareCounters)
      if (const auto n = number(r.records[*at], counter); n && *n != 0)
        return ::testing::AssertionFailure() << "ptshare=off but init_exit has " << counter << " " << *n << ": "
                                             << r.records[*at].dump();
  }
  return ::testing::AssertionSuccess();
}

// pvpatch=on rewrote every recorded site and the self-check read each one
// back (direct calls, and inline code for pte_flags everywhere and for the
// native encodings natively); off left them all as indirect calls. The
// compiled-in image has no sites and no pvpatch record.
::testing::AssertionResult pvpatch_as_configured(const RunResult& r, const ProcCase& c) {
  const auto at = find_record(r, "pvpatch");
  if (c.image == Image::builtin) {
    if (at) return ::testing::AssertionFailure() << "the compiled-in image patched sites: " << r.records[*at].dump();
    return booted_with(r, "image", "builtin");
  }
  if (!booted_with(r, "image", "pvops")) return booted_with(r, "image", "pvops");
  if (!booted_with(r, "pvpatch", c.pvpatch() ? "on" : "off")) return booted_with(r, "pvpatch", c.pvpatch() ? "on" : "off");
  if (!at) return ::testing::AssertionFailure() << "no pvpatch record";
  const json& rec = r.records[*at];
  auto n = [&](const char* key) { return rec.value(key, uint64_t{0}); };
  const uint64_t sites = n("sites");
  if (sites < 50) return ::testing::AssertionFailure() << "implausibly few sites: " << rec.dump();
  if (!c.pvpatch()) {
    if (n("unpatched") != sites || n("direct") || n("inlined") || n("verified"))
      return ::testing::AssertionFailure() << "pvpatch=off but sites were rewritten: " << rec.dump();
    return ::testing::AssertionSuccess();
  }
  if (n("verified") != sites ||
      n("direct") + n("inlined") + n("native_body") + n("generic_jumps") + n("native_copies") + n("generic_copies") +
              n("attrs_copies") + n("flags_copies") !=
          sites ||
      n("unpatched"))
    return ::testing::AssertionFailure() << "not every site patched and verified: " << rec.dump();
  if (n("direct") == 0 || n("inline_pte_flags") == 0)
    return ::testing::AssertionFailure() << "no direct calls or no inline pte_flags: " << rec.dump();
  const bool native = c.platform == Platform::native;
  // Natively the native-body sites fall into their bodies (those of the
  // walk's verbs only under pte=attrs); under Xen every one keeps its jump.
  if (native != (n("native_body") > 0) || (!native && n("generic_jumps") == 0))
    return ::testing::AssertionFailure() << "native bodies " << (native ? "unused natively" : "run under Xen") << ": "
                                         << rec.dump();
  // So do the copy switches of functions compiled twice (the lazy-MMU
  // section's): natively their native copies run, under Xen the generic ones.
  if (n("native_copies") + n("generic_copies") == 0 || native != (n("native_copies") > 0) ||
      native == (n("generic_copies") > 0))
    return ::testing::AssertionFailure() << "copy switches " << (native ? "not native natively" : "native under Xen")
                                         << ": " << rec.dump();
  // And the encoding switches of functions compiled once per encoding
  // (mprotect's): the pte=flags copy runs only on the native backend under
  // pte=flags, where its inlined body is the backend's.
  const bool flags_copy = native && std::string_view(c.pte()) == "flags";
  if (n("attrs_copies") + n("flags_copies") == 0 || flags_copy != (n("flags_copies") > 0) ||
      flags_copy == (n("attrs_copies") > 0))
    return ::testing::AssertionFailure() << "encoding switches " << (flags_copy ? "not" : "") << " on the pte=flags copy: "
                                         << rec.dump();
  if (native != (n("inline_pte_pfn") > 0 && n("inline_make_pte") > 0))
    return ::testing::AssertionFailure() << "native encodings inlined " << (native ? "nowhere" : "under Xen") << ": "
                                         << rec.dump();
  return ::testing::AssertionSuccess();
}

class Proctest : public ::testing::TestWithParam<ProcCase> {};

TEST_P(Proctest, EverySubTestPasses) {
  const ProcCase& c = GetParam();
  const RunResult r = boot(c.platform, c.params(), c.image);
  RecordProperty("boot_ms", static_cast<int>(r.elapsed.count()));
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", c.mmu)) << transcript(r);
  EXPECT_TRUE(booted_with(r, "pte", c.pte())) << transcript(r);
  EXPECT_TRUE(suite_summary_clean(r)) << transcript(r);
  EXPECT_TRUE(every_sub_test_passed(r)) << transcript(r);
  EXPECT_TRUE(init_exited_cleanly(r)) << transcript(r);
  EXPECT_TRUE(zero_page_used_as_configured(r, c.zero_page())) << transcript(r);
  EXPECT_TRUE(ptshare_used_as_configured(r, c.ptshare())) << transcript(r);
  EXPECT_TRUE(pvpatch_as_configured(r, c)) << transcript(r);
}

std::string case_name(const ::testing::TestParamInfo<ProcCase>& p) {
  return (p.param.image == Image::builtin ? "builtin_" : "") + p.param.mmu + info(p.param.sw).name;
}

// Discovered by tests/boot/process/CMakeLists.txt, which labels them
// boot;process;<platform>: the prefixes must not start with the parent's
// "Native/" and "Xen/" filters.
INSTANTIATE_TEST_SUITE_P(ProcessNative, Proctest, ::testing::ValuesIn(cases(Platform::native, {"native"}, "native")),
                         case_name);
INSTANTIATE_TEST_SUITE_P(ProcessXen, Proctest,
                         ::testing::ValuesIn(cases(Platform::xen, {"batched", "direct", "wrpt", "unhook", "auto"}, "batched")),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
