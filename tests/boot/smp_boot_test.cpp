// SMP boot tests: with `--smp N` every CPU the machine has comes
// online — natively through the MADT and INIT/SIPI, under Xen PV (dom0, and
// a domU made by xl) through VCPUOP_initialise/VCPUOP_up — the boot record
// says so, and processes run on every CPU: the sched record at shutdown
// counts, per CPU, the processes it ran. Without --smp nothing changes: one
// CPU, no smp record.
#include "boot_support.hpp"

namespace pvk::boot_test {
namespace {

struct SmpCase {
  Platform platform;
  std::string mmu;
};

void PrintTo(const SmpCase& c, std::ostream* out) { *out << platform_name(c.platform) << "_" << c.mmu; }

// How a boot is timed. Virtual time (QEMU -icount, the vCPUs round-robin on
// one host thread, QEMU 10's fair budgets) for every test that judges an
// interleaving or a figure: its outcome is then the same on a busy host as
// on an idle one. Wall time (MTTCG) for the tests that only need the
// machine to work with real parallel vCPUs.
enum class Timing { wall, virtual_time };

RunResult boot_smp(Platform platform, const std::string& params, unsigned cpus, Timing timing = Timing::wall) {
  RunOptions options;
  if (timing == Timing::virtual_time) options.icount = "shift=0,sleep=off";
  options.platform = platform;
  options.kernel = PVK_KERNEL_PATH;
  options.params = params;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  options.dom0_cache_dir = PVK_SMP_DOM0_CACHE_DIR;
  options.tools_dir = PVK_SMP_TOOLS_DIR;
  options.smp = cpus;
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

// The boot record's cpus/cpus_online, and (with more than one CPU) the smp
// record's, all equal to `cpus`; and every AP took the wake-up bring-up
// sends it (natively an NMI, under Xen its IPI event channel).
::testing::AssertionResult all_online(const RunResult& r, unsigned cpus) {
  const auto boot = find_record(r, "boot");
  if (!boot) return ::testing::AssertionFailure() << "no boot record";
  const json& b = r.records[*boot];
  if (b.value("cpus", 0u) != cpus || b.value("cpus_online", 0u) != cpus)
    return ::testing::AssertionFailure() << "boot record says cpus=" << b.value("cpus", 0u)
                                         << " cpus_online=" << b.value("cpus_online", 0u) << ", expected " << cpus;
  const auto smp = find_record(r, "smp");
  if (cpus == 1) {
    if (smp) return ::testing::AssertionFailure() << "an smp record on a one-CPU boot";
    return ::testing::AssertionSuccess();
  }
  if (!smp) return ::testing::AssertionFailure() << "no smp record";
  const json& s = r.records[*smp];
  if (s.value("cpus_online", 0u) != cpus || s.value("cpus_failed", 1u) != 0)
    return ::testing::AssertionFailure() << "smp record: " << s.dump();
  for (unsigned id = 1; id < cpus; ++id)
    if (!s.contains("cpu" + std::to_string(id) + "_ns"))
      return ::testing::AssertionFailure() << "smp record has no cpu" << id << "_ns: " << s.dump();
  if (s.value("wakeups_sent", 0u) != cpus - 1 || s.value("wakeups_taken", 0u) != cpus - 1)
    return ::testing::AssertionFailure() << "not every AP took its wake-up: " << s.dump();
  return ::testing::AssertionSuccess();
}

// The sched record (written when init exits): at least `cpus` CPUs ran
// processes, and each CPU that did switched to one.
::testing::AssertionResult ran_on_cpus(const RunResult& r, unsigned cpus) {
  const auto sched = find_record(r, "sched");
  if (!sched) return ::testing::AssertionFailure() << "no sched record";
  const json& s = r.records[*sched];
  if (s.value("cpus_ran_processes", 0u) < cpus)
    return ::testing::AssertionFailure() << "processes ran on fewer than " << cpus << " CPUs: " << s.dump();
  for (unsigned id = 0; id < cpus; ++id) {
    const std::string c = "cpu" + std::to_string(id);
    if (s.value(c + "_processes", 0u) == 0 || s.value(c + "_switches", 0u) == 0)
      return ::testing::AssertionFailure() << c << " ran no process: " << s.dump();
  }
  return ::testing::AssertionSuccess();
}

class Smp : public ::testing::TestWithParam<SmpCase> {
 protected:
  RunResult boot(const std::string& params, unsigned cpus) const {
    return boot_smp(GetParam().platform, "mmu=" + GetParam().mmu + (params.empty() ? "" : " " + params), cpus);
  }
};

TEST_P(Smp, OneCpuWithoutSmp) {
  const RunResult r = boot("selftest=mm", 1);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 1)) << transcript(r);
}

TEST_P(Smp, TwoCpusComeOnline) {
  const RunResult r = boot("selftest=mm", 2);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 2)) << transcript(r);
}

// The whole process suite at --smp 2. Natively processes run on both CPUs
// (the kernel lock, migration between CPUs, per-CPU kernel stacks and
// timers, wake-up IPIs). Under Xen by default only the boot vCPU runs them
// (sched_cpus, kernel/main.cpp): the second vCPU stays idle and
// tickless, and the suite runs as fast as on one; the xen_sched label
// (SmpXenAllCpus below) runs it on both.
TEST_P(Smp, ProctestPassesWithTwoCpus) {
  const RunResult r = boot("init=proctest", 2);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 2)) << transcript(r);
  // The affinity test pinned itself to every CPU that runs processes (and
  // getcpu said it got there): both natively, only the boot vCPU here
  // under Xen.
  const json* affinity = nullptr;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "test" && rec.value("name", "") == "affinity") affinity = &rec;
  ASSERT_NE(affinity, nullptr) << transcript(r);
  EXPECT_TRUE(affinity->value("pass", false)) << affinity->dump();
  EXPECT_EQ(affinity->value("pinned", 0), GetParam().platform == Platform::native ? 2 : 1) << affinity->dump();
  if (GetParam().platform == Platform::native) {
    EXPECT_TRUE(ran_on_cpus(r, 2)) << transcript(r);
  } else {
    EXPECT_TRUE(ran_on_cpus(r, 1)) << transcript(r);
    const auto sched = find_record(r, "sched");
    ASSERT_TRUE(sched) << transcript(r);
    EXPECT_EQ(r.records[*sched].value("cpu1_processes", 1u), 0u) << transcript(r);
  }
}

// The attack suite (tests/user/hostile*) with a second CPU present: the
// boot CPU's GDT and gates are as before, and its GS base (now its PerCpu)
// points at kernel memory user mode cannot read.
TEST_P(Smp, HostileSuitePassesWithTwoCpus) {
  const RunResult r = boot("bench=hostile", 2);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 2)) << transcript(r);
}

TEST_P(Smp, FourCpusComeOnline) {
  const RunResult r = boot("", 4);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 4)) << transcript(r);
}

// A domU made by xl in the nested Xen host, with vcpus=2 (~45 s: Xen and a
// Linux dom0 boot first).
TEST(SmpDomU, TwoVcpusComeOnline) {
  const RunResult r = boot_smp(Platform::xen_domu, "mmu=batched selftest=mm", 2);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "role", "domU")) << transcript(r);
  EXPECT_TRUE(all_online(r, 2)) << transcript(r);
}

// Label smp_long (tests/boot/smp_long): four CPUs running the process
// suite, natively only (one short boot).
TEST(SmpLong, ProctestPassesWithFourCpusNative) {
  const RunResult r = boot_smp(Platform::native, "mmu=native init=proctest", 4);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 4)) << transcript(r);
  EXPECT_TRUE(ran_on_cpus(r, 3)) << transcript(r);  // the fourth may find nothing left to run
}

// Label xen_sched (tests/boot/xen_sched): under Xen with sched_cpus=all,
// processes run on both vCPUs. Slow under nested TCG (Xen's own cross-CPU
// TLB flushes; minutes on a loaded host), hence a label of its own.
class SmpXenAllCpus : public ::testing::TestWithParam<SmpCase> {};

TEST_P(SmpXenAllCpus, ProctestRunsOnBothVcpus) {
  const RunResult r = boot_smp(GetParam().platform, "mmu=" + GetParam().mmu + " sched_cpus=all init=proctest", 2);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(all_online(r, 2)) << transcript(r);
  EXPECT_TRUE(ran_on_cpus(r, 2)) << transcript(r);
}

// Stale translations on the other CPU (the threaded tests,
// tests/user/test_tlb.cpp), on both CPUs under every kind of shootdown:
// threads keep storing (reading) on CPU 1 while the main thread mprotects,
// forks and unmaps; after each call no store lands, the child's copy holds,
// no reader sees the frames' next owner. Each test reports the shootdowns
// its call made: more than none, or the race never crossed CPUs (and the
// test proved nothing). tlb_lazy (the lazy-TLB case, below with 3 CPUs)
// must pass here too; with two CPUs the runner's polling keeps both busy,
// so it proves nothing about lazy CPUs and reports no shootdowns to count.
// Only the tlb tests and fault_race (init_args: page faults of several
// threads on the same pages, without the kernel lock), so the boot is short
// even with processes on both vCPUs of a nested Xen.
// The same boot runs the signal kick tests (tests/user/test_sigkick.cpp): a
// thread spinning in user mode on the other CPU stops at once when tgkilled
// or when its process exit_groups, not at that CPU's next tick. They must
// pass, some of their tries must have caught the spinner running on the
// other CPU ("crossed"), and the sched record must count the kicks sent.
struct TlbCase {
  Platform platform;
  std::string params;
};
void PrintTo(const TlbCase& c, std::ostream* out) {
  *out << platform_name(c.platform) << " " << c.params;
}
// A proctest sub-test's record ("event":"test" with its name), or null.
const json* subtest_record(const RunResult& r, const char* name) {
  for (const json& rec : r.records)
    if (rec.value("event", "") == "test" && rec.value("name", "") == name) return &rec;
  return nullptr;
}

// Each named sub-test reported and passed.
void expect_subtests_pass(const RunResult& r, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const json* test = subtest_record(r, name);
    ASSERT_NE(test, nullptr) << transcript(r);
    EXPECT_TRUE(test->value("pass", false)) << test->dump();
  }
}

class SmpTlb : public ::testing::TestWithParam<TlbCase> {};

TEST_P(SmpTlb, NoStaleTranslationOnTheOtherCpu) {
  const RunResult r = boot_smp(GetParam().platform,
                               GetParam().params +
                                   " sched_cpus=all init=proctest init_args=tlb_mprotect,tlb_cow_fork,tlb_munmap,"
                                   "tlb_lazy,fault_race,sigkick_tgkill,sigkick_exit_group",
                               2, Timing::virtual_time);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(ran_on_cpus(r, 2)) << transcript(r);
  const auto test_record = [&](const char* name) { return subtest_record(r, name); };
  for (const char* name : {"tlb_mprotect", "tlb_cow_fork", "tlb_munmap", "tlb_lazy"}) {
    SCOPED_TRACE(name);
    const json* test = test_record(name);
    ASSERT_NE(test, nullptr) << transcript(r);
    EXPECT_TRUE(test->value("pass", false)) << test->dump();
    if (std::string(name) != "tlb_lazy") EXPECT_GT(test->value("shootdowns", int64_t{0}), 0) << test->dump();
  }
  // Each sigkick test crosses CPUs in most boots, but a loaded host can
  // keep the two threads from running at once in every try of one of them.
  int64_t crossed = 0;
  for (const char* name : {"sigkick_tgkill", "sigkick_exit_group"}) {
    SCOPED_TRACE(name);
    const json* test = test_record(name);
    ASSERT_NE(test, nullptr) << transcript(r);
    EXPECT_TRUE(test->value("pass", false)) << test->dump();
    crossed += test->value("crossed", int64_t{0});
  }
  EXPECT_GT(crossed, 0) << "no sigkick try caught the spinner on the other CPU";
  const auto sched = find_record(r, "sched");
  ASSERT_TRUE(sched) << transcript(r);
  uint64_t kicks = 0;
  for (unsigned id = 0; id < 2; ++id) kicks += r.records[*sched].value("cpu" + std::to_string(id) + "_signal_kicks", 0u);
  EXPECT_GT(kicks, 0u) << r.records[*sched].dump();
  // Page faults without the kernel lock: threads of one space fault the
  // same pages at once, fresh and COW after fork; every thread sees every
  // store, and no frame is left over (boot_smp checks the leak).
  const json* race = test_record("fault_race");
  ASSERT_NE(race, nullptr) << transcript(r);
  EXPECT_TRUE(race->value("pass", false)) << race->dump();
}

// Lifetimes with the sibling thread on the other CPU (tests/user/
// test_lifetimes.cpp), natively and under every Xen backend, processes on
// both CPUs: a close or dup2 of the descriptor a sleeper is in while
// another process makes pipes, a timed futex wait while the other CPU
// makes system calls (it froze every other CPU when it spun holding the
// kernel lock: here the test's "crossed" says the two threads were seen on
// two CPUs at the wait), two threads' execve at once.
class SmpLifetimes : public ::testing::TestWithParam<SmpCase> {};

TEST_P(SmpLifetimes, SleepersKeepWhatTheyUseAndTimedWaitsLetOthersRun) {
  const RunResult r = boot_smp(GetParam().platform,
                               "mmu=" + GetParam().mmu +
                                   " sched_cpus=all init=proctest init_args=lifetime_pipe_close,lifetime_pipe_dup2,"
                                   "lifetime_pipe_write,futex_timed_progress,futex_timeouts,exec_race",
                               2, Timing::virtual_time);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(ran_on_cpus(r, 2)) << transcript(r);
  expect_subtests_pass(r, {"lifetime_pipe_close", "lifetime_pipe_dup2", "lifetime_pipe_write", "futex_timed_progress",
                           "futex_timeouts", "exec_race"});
}

// FP/SIMD state with processes on both CPUs (tests/user/test_fpu.cpp):
// threads keep their vector registers and MXCSR while they migrate between
// CPUs, are preempted and signalled; fork, exec and forged sigreturn
// frames as on one CPU. The boot record names the save method.
class SmpFpu : public ::testing::TestWithParam<SmpCase> {};

TEST_P(SmpFpu, VectorRegistersFollowThreadsAcrossCpus) {
  const RunResult r = boot_smp(GetParam().platform,
                               "mmu=" + GetParam().mmu +
                                   " sched_cpus=all init=proctest init_args=fpu_switch,fpu_signal,fpu_fork,fpu_exec,"
                                   "fpu_sigreturn_forged",
                               2, Timing::virtual_time);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(ran_on_cpus(r, 2)) << transcript(r);
  const auto boot = find_record(r, "boot");
  ASSERT_TRUE(boot) << transcript(r);
  const std::string method = r.records[*boot].value("fpu", "");
  EXPECT_TRUE(method == "xsaveopt" || method == "xsave" || method == "fxsave") << r.records[*boot].dump();
  EXPECT_GE(r.records[*boot].value("fpu_size", 0u), 512u) << r.records[*boot].dump();
  expect_subtests_pass(r, {"fpu_switch", "fpu_signal", "fpu_fork", "fpu_exec", "fpu_sigreturn_forged"});
}

// Lazy TLB at --smp 2 natively: mprotect_threads with reader threads, then
// with none, in one boot. When the readers are gone the CPU that ran them
// idles with the space still loaded (in its mask); with threads=0 every
// mprotect's flush skips that lazy CPU: no shootdown at all, and lazy CPUs
// left out (before lazy TLB each of those mprotects shot the idle CPU
// down: 400 shootdowns). Two readers rather than one: with three threads on
// two CPUs one of them surely runs on the second CPU even on a loaded host
// (one reader may share the main thread's CPU for the whole set, and then
// the second CPU never holds the space and there is nothing to skip).
class SmpLazyTlb : public ::testing::TestWithParam<Platform> {};

TEST_P(SmpLazyTlb, AnIdleCpuIsLeftOutOfTheFlushes) {
  const RunResult r = boot_smp(
      GetParam(), "sched_cpus=all bench=mprotect_threads:pages=1:threads=2:reps=1,mprotect_threads:pages=1:threads=0:reps=1",
      2);
  ASSERT_TRUE(r.pass) << transcript(r);
  const json* idle = nullptr;
  for (const json& rec : r.records)
    if (rec.value("bench", "") == "mprotect_threads" && rec.value("threads", uint64_t{9}) == 0) idle = &rec;
  ASSERT_NE(idle, nullptr) << "no threads=0 record" << transcript(r);
  EXPECT_EQ(idle->value("shootdowns", uint64_t{1}), 0u) << "the other CPU is idle on the space: skipped\n" << idle->dump();
  EXPECT_GT(idle->value("shootdown_lazy_skipped", uint64_t{0}), 0u) << idle->dump();
}

// tlb_lazy with 3 CPUs (proctest's runner polls on one, the test's main
// thread spins on another): the third idles on the test's space each time
// a storer exits, the read-only mprotect skips it (lazy_skipped), and the
// next storer it takes must fault — it flushed everything when it came
// back (lazy_catchups). Without the catch-up flush the store lands.
TEST_P(SmpLazyTlb, AnIdleCpuCatchesUpBeforeItRunsTheSpaceAgain) {
  const RunResult r = boot_smp(GetParam(), "sched_cpus=all init=proctest init_args=tlb_lazy", 3, Timing::virtual_time);
  ASSERT_TRUE(r.pass) << transcript(r);
  const json* test = nullptr;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "test" && rec.value("name", "") == "tlb_lazy") test = &rec;
  ASSERT_NE(test, nullptr) << transcript(r);
  EXPECT_TRUE(test->value("pass", false)) << test->dump();
  EXPECT_GT(test->value("lazy_skipped", int64_t{0}), 0) << test->dump();
  EXPECT_GT(test->value("lazy_catchups", int64_t{0}), 0) << test->dump();
}

INSTANTIATE_TEST_SUITE_P(Tlb, SmpLazyTlb, ::testing::Values(Platform::native),
                         [](const ::testing::TestParamInfo<Platform>& i) { return std::string(platform_name(i.param)); });

INSTANTIATE_TEST_SUITE_P(
    Tlb, SmpTlb,
    ::testing::Values(TlbCase{Platform::native, "mmu=native"}, TlbCase{Platform::xen, "mmu=batched shootdown=hypercall"},
                      TlbCase{Platform::xen, "mmu=batched shootdown=ipi"}, TlbCase{Platform::xen, "mmu=wrpt"}));

INSTANTIATE_TEST_SUITE_P(Lifetimes, SmpLifetimes,
                         ::testing::Values(SmpCase{Platform::native, "native"}, SmpCase{Platform::xen, "batched"},
                                           SmpCase{Platform::xen, "direct"}, SmpCase{Platform::xen, "wrpt"},
                                           SmpCase{Platform::xen, "unhook"}, SmpCase{Platform::xen, "auto"}));

INSTANTIATE_TEST_SUITE_P(Fpu, SmpFpu,
                         ::testing::Values(SmpCase{Platform::native, "native"}, SmpCase{Platform::xen, "batched"},
                                           SmpCase{Platform::xen, "wrpt"}));

INSTANTIATE_TEST_SUITE_P(XenSched, SmpXenAllCpus,
                         ::testing::Values(SmpCase{Platform::xen, "batched"}, SmpCase{Platform::xen, "wrpt"}));

INSTANTIATE_TEST_SUITE_P(SmpNative, Smp, ::testing::Values(SmpCase{Platform::native, "native"}));
INSTANTIATE_TEST_SUITE_P(SmpXen, Smp,
                         ::testing::Values(SmpCase{Platform::xen, "batched"}, SmpCase{Platform::xen, "wrpt"}));

}  // namespace
}  // namespace pvk::boot_test
