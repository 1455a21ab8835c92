// `pvk calibrate` end to end, and the calibration item's records on every
// platform: behaviour and counts, never how fast the host is.
//  - natively: the profile it writes parses, carries a source per number
//    and leaves out (with the reason) what one CPU without Xen cannot time;
//    with --icount each event comes out at exactly its own instructions.
//  - under Xen (pvk run, wall time: quick): the hypervisor's probes time,
//    each making the events it claims.
//  - natively on two CPUs: the IPI round trip.
#include "pvk/bench/cost_events.hpp"
#include "pvk/bench/cost_profile.hpp"
#include "pvk/bench/results.hpp"
#include "pvk/process.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

struct Cli {
  int exit_code = -1;
  std::vector<std::string> lines;
  std::string text() const {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

Cli cli(std::vector<std::string> args) {
  ProcessOptions run;
  run.argv = {PVK_CLI, "--build-dir", PVK_BUILD_DIR};
  run.argv.insert(run.argv.end(), args.begin(), args.end());
  run.timeout = std::chrono::seconds{400};
  Cli c;
  const ProcessResult r = run_process(run, [&](std::string_view line) {
    c.lines.emplace_back(line);
    return LineAction::keep_going;
  });
  c.exit_code = r.exit_code;
  return c;
}

fs::path scratch(const char* what) {
  const fs::path dir = fs::temp_directory_path() / (std::string("pvk-calibrate-") + what + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Calibrate, NativeProfileParsesAndSaysWhatItCouldNotTime) {
  const fs::path dir = scratch("native");
  const Cli c = cli({"calibrate", "--platforms", "native", "--count", "32", "--jobs", "1", "--out",
                     (dir / "native.json").string(), "--runs", (dir / "runs").string()});
  ASSERT_EQ(c.exit_code, 0) << c.text();
  const CostProfile p = load_profile(dir, "native");  // parses, or throws naming the field
  EXPECT_GT(p.instruction.ns, 0);
  EXPECT_NE(p.instruction.source.find("pvk calibrate"), std::string::npos);
  for (const char* timed : {"syscall", "exception", "invlpg", "cr3_load", "rep_clear", "rep_copy"}) {
    ASSERT_NE(p.event(timed), nullptr) << timed;
    EXPECT_NE(p.event(timed)->source.find("pvk calibrate"), std::string::npos) << timed;
  }
  // What one CPU without a hypervisor cannot time: left out, with why.
  for (const char* missing : {"ipi", "hypercall", "multicall_entry", "mmu_update_entry", "ptwr_trap", "xen_syscall",
                              "xen_exception", "interrupt"}) {
    EXPECT_EQ(p.event(missing), nullptr) << missing;
    ASSERT_TRUE(p.not_timed.count(missing)) << missing;
    EXPECT_FALSE(p.not_timed.at(missing).empty()) << missing;
  }
  EXPECT_NE(p.not_timed.at("ipi").find("--smp 2"), std::string::npos) << p.not_timed.at("ipi");
  fs::remove_all(dir);
}

TEST(Calibrate, VirtualTimeGivesEachEventItsInstructions) {
  const fs::path dir = scratch("icount");
  const Cli c = cli({"calibrate", "--icount", "--platforms", "native", "--count", "32", "--out",
                     (dir / "icount.json").string(), "--runs", (dir / "runs").string()});
  ASSERT_EQ(c.exit_code, 0) << c.text();
  const CostProfile p = load_profile(dir, "icount");
  EXPECT_NEAR(p.instruction.ns, 1, 1e-9);
  for (const char* e : {"syscall", "exception", "invlpg", "cr3_load", "rep_clear", "rep_copy"}) {
    ASSERT_NE(p.event(e), nullptr) << e;
    EXPECT_NEAR(p.event(e)->ns, find_cost_event(e)->instructions, 1e-6) << e;
  }
  fs::remove_all(dir);
}

// The records of one boot of the calibration item, by event name.
std::map<std::string, OJson> calibrate_records(const Cli& c) {
  static const char* const kNames[] = {"work", "syscall", "exception", "invlpg", "cr3_reload", "clear", "copy",
                                       "ipi",  "hypercall", "multicall", "mmu_update", "ptwr", "walk"};
  std::map<std::string, OJson> out;
  for (const auto& r : parse_records(c.lines))
    if (r.value("bench", "") == "calibrate" && r.contains("event")) {
      const auto k = r["event"].get<size_t>();
      if (k < std::size(kNames)) out[kNames[k]] = r;
    }
  return out;
}

double per_event(const OJson& r, const char* counter) { return r.value(counter, 0.0) / r.value("ops", 1.0); }

// A record's counters are the difference of an `ops` sample and a
// `2 x ops` one: a tick that lands in the first (the baseline) and not in
// the second takes its own events off. How many landed there hangs on the
// host's speed; the record says (baseline_interrupts), and each tick makes
// at most one of the events asserted on here, so a figure may sit that many
// below the probe's own.
double baseline_interrupts(const OJson& r) {
  EXPECT_TRUE(r.contains("baseline_interrupts")) << r.dump();
  return r.value("baseline_interrupts", 0.0);
}

TEST(Calibrate, XenProbesMakeTheirEvents) {
  const Cli c = cli({"run", "--platform", "xen", "--append", "mmu=batched bench=calibrate:count=64:reps=3"});
  ASSERT_EQ(c.exit_code, 0) << c.text();
  const auto rec = calibrate_records(c);
  for (const char* e : {"hypercall", "multicall", "mmu_update", "ptwr", "syscall", "exception"}) {
    ASSERT_TRUE(rec.count(e)) << e;
    EXPECT_EQ(rec.at(e).value("timed", 0), 1) << e;
    EXPECT_TRUE(rec.at(e).value("pass", false)) << e;
  }
  // One hypercall per event; a tick adds one (re-arming the one-shot timer)
  // in either sample, so ticks in the baseline take some off.
  const OJson& hypercall = rec.at("hypercall");
  EXPECT_GE(hypercall.value("hypercalls", 0.0), hypercall.value("ops", 0.0) - baseline_interrupts(hypercall))
      << hypercall.dump();
  EXPECT_DOUBLE_EQ(per_event(rec.at("multicall"), "multicall_calls"), 1);
  EXPECT_DOUBLE_EQ(per_event(rec.at("mmu_update"), "mmu_update_entries"), 1);
  EXPECT_DOUBLE_EQ(per_event(rec.at("ptwr"), "ptwr_traps"), 1);
  // Under Xen a system call is bounced by Xen, an exception passed on by it.
  EXPECT_DOUBLE_EQ(per_event(rec.at("syscall"), "xen_syscall_bounces"), 1);
  EXPECT_GE(per_event(rec.at("exception"), "xen_fault_bounces"), 1);
  // One vCPU: no IPI to time, said in the record.
  ASSERT_TRUE(rec.count("ipi"));
  EXPECT_EQ(rec.at("ipi").value("timed", 1), 0);
  EXPECT_EQ(rec.at("ipi").value("errno", 0), 95);
}

TEST(Calibrate, NativeCountersAndTheIpiOnTwoCpus) {
  const Cli one = cli({"run", "--platform", "native", "--append", "bench=calibrate:count=64:reps=3"});
  ASSERT_EQ(one.exit_code, 0) << one.text();
  const auto rec = calibrate_records(one);
  EXPECT_DOUBLE_EQ(per_event(rec.at("syscall"), "syscall_entries"), 1);
  // Every timed call returns to user mode, except the one that reads the
  // counters at the end (its entry is counted, its return comes after):
  // 63 of 64. Timer ticks from user mode add returns: those in the 2 x 64
  // sample raise the figure, those in the baseline lower it.
  const OJson& syscall = rec.at("syscall");
  EXPECT_GE(syscall.value("user_returns", 0.0), syscall.value("ops", 0.0) - 1 - baseline_interrupts(syscall)) << syscall.dump();
  EXPECT_DOUBLE_EQ(per_event(rec.at("exception"), "exception_entries"), 1);
  EXPECT_DOUBLE_EQ(per_event(rec.at("exception"), "xen_fault_bounces"), 0);
  EXPECT_DOUBLE_EQ(per_event(rec.at("invlpg"), "tlb_flush_one"), 1);
  EXPECT_DOUBLE_EQ(per_event(rec.at("cr3_reload"), "tlb_flush_all"), 1);
  EXPECT_DOUBLE_EQ(per_event(rec.at("clear"), "rep_clear_bytes"), 4096);
  EXPECT_DOUBLE_EQ(per_event(rec.at("copy"), "rep_copy_bytes"), 4096);
  for (const char* xen_only : {"hypercall", "multicall", "mmu_update", "ptwr"}) {
    EXPECT_EQ(rec.at(xen_only).value("timed", 1), 0) << xen_only;
    EXPECT_EQ(rec.at(xen_only).value("errno", 0), 95) << xen_only;
  }
  const Cli two = cli({"run", "--platform", "native", "--smp", "2", "--append", "bench=calibrate:event=7:count=64:reps=3"});
  ASSERT_EQ(two.exit_code, 0) << two.text();
  const auto ipi = calibrate_records(two);
  ASSERT_TRUE(ipi.count("ipi"));
  EXPECT_EQ(ipi.at("ipi").value("timed", 0), 1);
  EXPECT_GE(per_event(ipi.at("ipi"), "ipi_sends"), 1);
  EXPECT_GE(per_event(ipi.at("ipi"), "ipis_taken"), 1);
}

}  // namespace
}  // namespace pvk::bench
