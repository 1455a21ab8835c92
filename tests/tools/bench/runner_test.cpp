// Running a plan with a stand-in for the platforms: parallel boots, failed
// boots recorded while the others' results stay, boots that cannot start,
// cancellation, and the records gathered per configuration.
#include "pvk/bench/runner.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <unistd.h>

namespace pvk::bench {
namespace {

using testing::bench_line;

class FakeRunner : public BootRunner {
 public:
  BootOutcome boot(const Config& config, const Boot& boot) override {
    {
      std::lock_guard lock(mutex);
      ++running;
      max_running = std::max(max_running, running);
      seen.insert(fmt::format("{} {} rep {}", config.id(), boot.cmdline, boot.rep));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
      std::lock_guard lock(mutex);
      --running;
    }
    if (config.get("mmu") == "direct") throw std::runtime_error("no such machine");
    BootOutcome out;
    out.started = true;
    out.elapsed = std::chrono::milliseconds{1500};
    out.lines = {"pvk: booting", R"(@pvk {"event":"boot","platform":")" + config.platform + R"("})",
                 bench_line("getpid", R"("iters":10)", 100 * boot.rep, 90, 110, 10)};
    if (config.get("mmu") == "wrpt") {
      out.lines.push_back(R"(@pvk {"bench":"segv","iters":10,"unit":"ns","reps":1,"median":5,"min":5,"max":5,"ops":10,"per_op":0,"pass":false,"error":"no signal"})");
      out.lines.push_back(R"(@pvk {"event":"done","status":"fail"})");
      out.reason = "the kernel reported failure";
      out.trouble = {"(XEN) something"};
    } else {
      out.lines.push_back(R"(@pvk {"event":"done","status":"pass"})");
      out.pass = true;
      out.reason = "pass";
    }
    return out;
  }
  std::mutex mutex;
  int running = 0, max_running = 0;
  std::set<std::string> seen;
};

Plan plan_of(int reps) {
  MatrixOptions o;
  o.with_variations = false;
  o.reps = reps;
  o.items = parse_items("getpid");
  return build_plan(o);
}

TEST(Execute, EveryBootRunsAndFailuresAreRecorded) {
  const Plan plan = plan_of(2);
  ASSERT_EQ(plan.boots.size(), 8u);
  FakeRunner runner;
  std::vector<std::string> progress;
  std::mutex progress_mutex;
  ExecuteOptions options;
  options.jobs = 3;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("pvk-runner-test-" + std::to_string(::getpid()));
  options.log_dir = dir / "logs";
  options.out_dir = dir;
  options.progress = [&](const std::string& line) {
    std::lock_guard lock(progress_mutex);
    progress.push_back(line);
  };
  const Results results = execute(plan, runner, options);

  EXPECT_EQ(runner.seen.size(), 8u);
  EXPECT_GT(runner.max_running, 1);
  EXPECT_LE(runner.max_running, 3);
  EXPECT_EQ(progress.size(), 8u);
  ASSERT_EQ(results.boots.size(), 8u);
  int passed = 0;
  for (const auto& b : results.boots) {
    passed += b.pass;
    if (b.config == "xen mmu=wrpt") {
      EXPECT_TRUE(b.ran);
      EXPECT_FALSE(b.pass);
      EXPECT_EQ(b.failed, 1);
      EXPECT_EQ(b.benchmarks, 2);
      EXPECT_EQ(b.trouble.size(), 2u);  // Xen's line and the failed benchmark
      EXPECT_TRUE(std::filesystem::exists(dir / b.log)) << b.log;
    }
    if (b.config == "xen mmu=direct") {
      EXPECT_FALSE(b.ran);
      EXPECT_EQ(b.reason, "could not boot: no such machine");
      EXPECT_TRUE(b.log.empty());
    }
  }
  EXPECT_EQ(passed, 4);  // native and batched, two reps each
  // Boots are listed by configuration and rep; records carry their boot.
  EXPECT_EQ(results.boots[0].config, "native mmu=native");
  EXPECT_EQ(results.boots[0].rep, 1);
  EXPECT_EQ(results.boots[1].rep, 2);
  size_t getpids = 0;
  for (const auto& s : results.records)
    if (s.record.contains("bench") && s.record["bench"] == "getpid") {
      ++getpids;
      EXPECT_EQ(s.record["median"], 100 * s.rep);
    }
  EXPECT_EQ(getpids, 6u);  // every boot that started
  std::filesystem::remove_all(dir);
}

TEST(Execute, CancelledBootsAreNotRun) {
  const Plan plan = plan_of(1);
  FakeRunner runner;
  std::atomic<bool> cancel{true};
  ExecuteOptions options;
  options.cancel = &cancel;
  options.progress = [](const std::string&) {};
  const Results results = execute(plan, runner, options);
  EXPECT_TRUE(runner.seen.empty());
  ASSERT_EQ(results.boots.size(), plan.boots.size());
  for (const auto& b : results.boots) {
    EXPECT_FALSE(b.ran);
    EXPECT_EQ(b.reason, "not run (cancelled)");
  }
}

// SMP: a boot whose machine has several CPUs runs alone (wall time:
// its vCPUs must not wait for host CPUs another QEMU holds), after the
// others; the one-CPU boots still run side by side.
class AloneRunner : public FakeRunner {
 public:
  BootOutcome boot(const Config& config, const Boot& boot) override {
    {
      std::lock_guard lock(mutex);
      if (boot.exclusive && running != 0) exclusive_had_company = true;
      if (!boot.exclusive && exclusive_running) exclusive_had_company = true;
      if (boot.exclusive) exclusive_running = true;
      if (!boot.exclusive && exclusive_seen) one_cpu_after_exclusive = true;
      if (boot.exclusive) exclusive_seen = true;
    }
    BootOutcome out = FakeRunner::boot(config, boot);
    std::lock_guard lock(mutex);
    if (boot.exclusive) exclusive_running = false;
    return out;
  }
  bool exclusive_running = false, exclusive_seen = false;
  bool exclusive_had_company = false, one_cpu_after_exclusive = false;
};

TEST(Execute, BootsWithSeveralCpusRunAloneAndLast) {
  MatrixOptions o;
  o.with_variations = false;
  o.mmus = {"native", "batched"};
  o.reps = 3;
  o.items = parse_items("getpid");
  Plan plan = build_plan(o);
  // Interleave exclusive boots among the others (as a schedule might).
  for (size_t i = 0; i < plan.boots.size(); i += 2) {
    plan.boots[i].exclusive = true;
    plan.boots[i].machine.cpus = 2;
  }
  AloneRunner runner;
  ExecuteOptions options;
  options.jobs = 3;
  options.progress = [](const std::string&) {};
  const Results results = execute(plan, runner, options);
  EXPECT_EQ(runner.seen.size(), plan.boots.size());
  EXPECT_GT(runner.max_running, 1);  // the one-CPU boots still overlap
  EXPECT_FALSE(runner.exclusive_had_company);
  EXPECT_FALSE(runner.one_cpu_after_exclusive);
}

// The options of one boot: its machine's CPUs, and the run's -icount with
// any number of them (QEMU 10's round robin is fair under -icount).
TEST(Execute, BootRunOptionsTimeSeveralCpusInVirtualTimeToo) {
  RunMachine machine;
  machine.icount = "shift=0,sleep=off";
  Boot boot;
  boot.cmdline = "mmu=native bench=getpid";
  boot.machine = {"2G", "", 1};
  boot.timeout = std::chrono::seconds{30};
  RunOptions one = boot_run_options(machine, boot);
  EXPECT_EQ(one.icount, "shift=0,sleep=off");
  EXPECT_EQ(one.smp, 1u);
  EXPECT_EQ(one.memory, "2G");
  EXPECT_EQ(one.params, "mmu=native bench=getpid");
  EXPECT_EQ(one.timeout, std::chrono::seconds{30});
  boot.machine.cpus = 2;
  RunOptions two = boot_run_options(machine, boot);
  EXPECT_EQ(two.icount, "shift=0,sleep=off");
  machine.icount.clear();  // a wall-time run
  EXPECT_EQ(boot_run_options(machine, boot).icount, "");
  EXPECT_EQ(two.smp, 2u);
}

TEST(Execute, ClockText) {
  EXPECT_EQ(clock_text(12.4), "12 s");
  EXPECT_EQ(clock_text(185), "3:05");
  EXPECT_EQ(clock_text(3723), "1:02:03");
}

}  // namespace
}  // namespace pvk::bench

namespace pvk::bench {
namespace {

TEST(PlatformRunners, DispatchByPlatform) {
  FakeRunner native, xen;
  PlatformRunners runners;
  runners.add("native", native);
  runners.add("xen", xen);
  Boot boot;
  boot.cmdline = "bench=getpid";
  EXPECT_TRUE(runners.boot(config_from_id("native mmu=native"), boot).pass);
  EXPECT_TRUE(runners.boot(config_from_id("xen mmu=batched"), boot).pass);
  EXPECT_EQ(native.seen.size(), 1u);
  EXPECT_EQ(xen.seen.size(), 1u);
  EXPECT_THROW(runners.boot(config_from_id("linux-native"), boot), std::runtime_error);
}

}  // namespace
}  // namespace pvk::bench
