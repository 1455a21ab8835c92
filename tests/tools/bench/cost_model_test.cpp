// The cost model's arithmetic (cost_model.hpp): projecting a row, and
// deriving a profile from events timed alone.
#include "pvk/bench/cost_model.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pvk::bench {
namespace {

CostProfile profile(double factor, std::map<std::string, double> costs) {
  CostProfile p;
  p.name = "t";
  p.instruction = {factor, "test"};
  for (const auto& [e, c] : costs) p.events[e] = {c, "test"};
  return p;
}

// Counters by name; every counter the events use is there (0 unless given).
CounterLookup counters(std::map<std::string, double> given) {
  return [given](std::string_view name) -> std::optional<double> {
    const auto it = given.find(std::string(name));
    return it == given.end() ? 0.0 : it->second;
  };
}

TEST(CostModel, NoEventsIsTheFactorTimesTheInstructions) {
  const auto p = project(profile(0.5, {}), 1000, counters({}));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->ns, 500);
  EXPECT_DOUBLE_EQ(p->ordinary_instructions, 1000);
  EXPECT_TRUE(p->counts.empty());
}

TEST(CostModel, EventsReplaceTheirInstructions) {
  // 3 system calls (2 instructions each in virtual time) at 70 ns, 2
  // invlpgs (1 each) at 80: 0.5 × (1000 − 6 − 2) + 210 + 160.
  const auto p = project(profile(0.5, {{"syscall", 70}, {"invlpg", 80}}), 1000,
                         counters({{"syscall_entries", 3}, {"tlb_flush_one", 2}}));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->ordinary_instructions, 992);
  EXPECT_DOUBLE_EQ(p->event_ns, 370);
  EXPECT_DOUBLE_EQ(p->ns, 0.5 * 992 + 370);
  EXPECT_DOUBLE_EQ(p->counts.at("syscall"), 3);
  EXPECT_TRUE(p->unpriced.empty());
}

TEST(CostModel, AnEventTheProfileLeavesOutKeepsItsInstructions) {
  const auto p = project(profile(2, {{"syscall", 70}}), 100, counters({{"tlb_flush_one", 4}}));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->ns, 200);  // the invlpgs stay instructions, at the factor
  ASSERT_EQ(p->unpriced.size(), 1u);
  EXPECT_EQ(p->unpriced[0], "invlpg");
}

TEST(CostModel, RepStringsArePricedPerKiB) {
  // A 4 KiB clear: 4096 instructions in virtual time, 4 KiB at 25 ns.
  const auto p = project(profile(0.33, {{"rep_clear", 25}}), 4096 + 100, counters({{"rep_clear_bytes", 4096}}));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->counts.at("rep_clear"), 4);
  EXPECT_NEAR(p->ns, 0.33 * 100 + 100, 1e-9);
}

TEST(CostModel, InterruptsLeaveOutTheIpis) {
  const auto p = project(profile(1, {{"interrupt", 10}, {"ipi", 100}}), 50,
                         counters({{"interrupt_entries", 5}, {"ipis_taken", 3}, {"ipi_sends", 3}}));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->counts.at("interrupt"), 2);
  EXPECT_DOUBLE_EQ(p->ns, (50 - 2 - 3) + 2 * 10 + 3 * 100);
}

TEST(CostModel, EventsCannotTakeMoreThanTheInstructions) {
  const auto p = project(profile(1, {{"syscall", 5}}), 3, counters({{"syscall_entries", 10}}));
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->ordinary_instructions, 0);
  EXPECT_DOUBLE_EQ(p->ns, 50);
}

TEST(CostModel, AMissingCounterMeansNoProjection) {
  const CounterLookup none = [](std::string_view) -> std::optional<double> { return std::nullopt; };
  EXPECT_FALSE(project(profile(1, {}), 100, none));
}

// Timings made by a known profile, as a calibration would measure them.
EventTiming timed_by(const CostProfile& p, double instructions, std::map<std::string, double> c) {
  EventTiming t;
  t.instructions = instructions;
  t.counters = c;
  t.ns = project(p, instructions, counters(c))->ns;
  return t;
}

TEST(CostModel, DeriveGivesBackTheProfileThatMadeTheTimings) {
  const CostProfile truth =
      profile(1.5, {{"syscall", 700}, {"exception", 900}, {"invlpg", 250}, {"cr3_load", 3000}, {"rep_clear", 2500},
                    {"rep_copy", 3500}, {"hypercall", 1200}, {"multicall_entry", 40}, {"mmu_update_entry", 300},
                    {"ptwr_trap", 2000}, {"xen_syscall", 5000}, {"xen_exception", 6000}});
  std::map<std::string, EventTiming> t;
  t["native/walk"] = timed_by(truth, 700, {});
  t["native/syscall"] = timed_by(truth, 306, {{"syscall_entries", 1}, {"user_returns", 1}});
  t["native/exception"] = timed_by(truth, 166, {{"exception_entries", 1}, {"user_returns", 1}});
  t["native/invlpg"] = timed_by(truth, 12, {{"tlb_flush_one", 1}});
  t["native/cr3_reload"] = timed_by(truth, 15, {{"tlb_flush_all", 1}});
  t["native/clear"] = timed_by(truth, 4110, {{"rep_clear_bytes", 4096}});
  t["native/copy"] = timed_by(truth, 4110, {{"rep_copy_bytes", 4096}});
  t["xen/hypercall"] = timed_by(truth, 400, {{"hypercalls", 1}});
  t["xen/multicall"] = timed_by(truth, 90, {{"multicall_calls", 1}, {"hypercalls", 1.0 / 32}, {"multicalls", 1.0 / 32}});
  t["xen/mmu_update"] = timed_by(truth, 600, {{"mmu_update_entries", 1}, {"hypercalls", 1.0 / 32}});
  t["xen/ptwr"] = timed_by(truth, 900, {{"ptwr_traps", 1}});
  // Under Xen a system call is also a `syscall` event: derive takes the
  // native one out.
  t["xen/syscall"] = timed_by(truth, 2500, {{"syscall_entries", 1}, {"xen_syscall_bounces", 1}});
  t["xen/exception"] = timed_by(truth, 3000, {{"exception_entries", 1}, {"xen_fault_bounces", 1}});
  const CostProfile got = derive_costs(t, {{"native/ipi", "needs two CPUs"}}, "derived", "test run");
  EXPECT_NEAR(got.instruction.ns, 1.5, 1e-12);
  for (const auto& [name, cost] : truth.events) {
    ASSERT_NE(got.event(name), nullptr) << name;
    EXPECT_NEAR(got.event(name)->ns, cost.ns, 1e-6) << name;
    EXPECT_NE(got.event(name)->source.find("test run"), std::string::npos) << name;
  }
  EXPECT_EQ(got.not_timed.at("ipi"), "needs two CPUs");
  // No probe can raise an interrupt at will: never timed, never a zero.
  EXPECT_EQ(got.event("interrupt"), nullptr);
  EXPECT_TRUE(got.not_timed.count("interrupt"));
}

TEST(CostModel, AVirtualTimeCalibrationGivesEachEventItsInstructions) {
  // Under -icount ns = instructions: the factor is 1 and each event costs
  // what it is in virtual time, so projecting a row gives the row back.
  std::map<std::string, EventTiming> t;
  auto same = [](double instructions, std::map<std::string, double> c) {
    EventTiming e;
    e.ns = e.instructions = instructions;
    e.counters = c;
    return e;
  };
  t["native/walk"] = same(704, {});
  t["native/syscall"] = same(306, {{"syscall_entries", 1}});
  t["native/clear"] = same(4114, {{"rep_clear_bytes", 4096}});
  t["xen/syscall"] = same(2500, {{"syscall_entries", 1}, {"xen_syscall_bounces", 1}});
  const CostProfile icount = derive_costs(t, {}, "icount", "test");
  EXPECT_DOUBLE_EQ(icount.instruction.ns, 1);
  EXPECT_DOUBLE_EQ(icount.event("syscall")->ns, find_cost_event("syscall")->instructions);
  EXPECT_DOUBLE_EQ(icount.event("rep_clear")->ns, 1024);
  EXPECT_DOUBLE_EQ(icount.event("xen_syscall")->ns, find_cost_event("xen_syscall")->instructions);
  const auto p = project(icount, 12345, counters({{"syscall_entries", 7}, {"rep_clear_bytes", 8192},
                                                  {"xen_syscall_bounces", 2}}));
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->ns, 12345, 1e-9);
}

TEST(CostModel, DeriveClampsACostBelowItsInstructionsAndSaysSo) {
  std::map<std::string, EventTiming> t;
  EventTiming work;
  work.ns = 1000;
  work.instructions = 1000;
  t["native/walk"] = work;
  EventTiming fast;
  fast.ns = 10;  // less than its 100 instructions at 1 ns each
  fast.instructions = 100;
  fast.counters = {{"tlb_flush_one", 1}};
  t["native/invlpg"] = fast;
  const CostProfile p = derive_costs(t, {}, "t", "test");
  ASSERT_NE(p.event("invlpg"), nullptr);
  EXPECT_DOUBLE_EQ(p.event("invlpg")->ns, 0);
  EXPECT_NE(p.event("invlpg")->source.find("clamped"), std::string::npos);
}

TEST(CostModel, DeriveNeedsTheFactorAndReportsWhatItCouldNotTime) {
  EXPECT_THROW(derive_costs({}, {}, "t", "test"), ProfileError);
  std::map<std::string, EventTiming> t;
  EventTiming work;
  work.ns = work.instructions = 100;
  t["native/walk"] = work;
  // A probe that moved none of its event's counters times nothing.
  EventTiming idle;
  idle.ns = idle.instructions = 50;
  t["native/cr3_reload"] = idle;
  // An IPI at two CPUs has no virtual-time twin: taken whole.
  EventTiming ipi;
  ipi.ns = 20000;
  ipi.whole = true;
  ipi.counters = {{"ipi_sends", 1}, {"interrupt_entries", 1}, {"ipis_taken", 1}};
  t["native/ipi"] = ipi;
  const CostProfile p = derive_costs(t, {{"xen/hypercall", "no hypercalls natively"}}, "t", "test");
  EXPECT_EQ(p.event("cr3_load"), nullptr);
  EXPECT_NE(p.not_timed.at("cr3_load").find("made no cr3_load"), std::string::npos);
  EXPECT_EQ(p.not_timed.at("hypercall"), "no hypercalls natively");
  EXPECT_NE(p.not_timed.at("syscall").find("native"), std::string::npos);
  ASSERT_NE(p.event("ipi"), nullptr);
  EXPECT_DOUBLE_EQ(p.event("ipi")->ns, 20000);
  EXPECT_NE(p.event("ipi")->source.find("whole"), std::string::npos);
}

}  // namespace
}  // namespace pvk::bench
