// The calibration item as the harness reads it (calibration.hpp), and
// projected time in a run's results (projection.hpp).
#include "pvk/bench/calibration.hpp"
#include "pvk/bench/output.hpp"
#include "pvk/bench/projection.hpp"
#include "pvk/bench/report.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace pvk::bench {
namespace {

using testing::sample;

// bench/calibrate.cpp's kEvents, in order, are the harness's names.
TEST(Calibration, EventsMatchTheItem) {
  std::ifstream in(std::string(PVK_SOURCE_DIR) + "/bench/calibrate.cpp");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  const std::regex entry(R"re(\{"(\w+)", (PROBE_\w+|kUserSyscall)\})re");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), entry); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  std::vector<std::string> ours(calibration_events().begin(), calibration_events().end());
  EXPECT_EQ(names, ours);
  // Every probe a calibration source names is one of them.
  for (const auto& s : calibration_sources())
    EXPECT_NE(std::find(ours.begin(), ours.end(), s.probe), ours.end()) << s.probe;
}

// A calibrate record: per_op ns per event over `count` events, counters for them.
std::string calibrate_line(int event, long per_op, const std::string& counters, bool timed = true) {
  if (!timed)
    return fmt::format(R"(@pvk {{"bench":"calibrate","event":{},"count":256,"unit":"ns","reps":0,"timed":0,"errno":95,"pass":true}})",
                       event);
  return fmt::format(R"(@pvk {{"bench":"calibrate","event":{},"count":256,"unit":"ns","reps":5,"median":{},"min":{},"max":{},"ops":256,"per_op":{}{}{},"timed":1,"pass":true}})",
                     event, per_op * 256, per_op * 256, per_op * 256, per_op, counters.empty() ? "" : ",", counters);
}

Results run_of(std::vector<std::pair<std::string, std::string>> records, bool virtual_time) {
  Results r;
  r.run = {{"icount", virtual_time ? "shift=0,sleep=off" : ""}};
  r.configs = {config_from_id("native mmu=native"), config_from_id("xen mmu=batched")};
  for (const auto& [config, line] : records) r.records.push_back(sample(config, line));
  aggregate(r);
  return r;
}

TEST(Calibration, InputPairsEachTimingWithItsVirtualTwin) {
  const Results v = run_of({{"native mmu=native", calibrate_line(12, 58, "")},
                            {"native mmu=native", calibrate_line(1, 306, R"("syscall_entries":256)")},
                            {"native mmu=native", calibrate_line(8, 0, "", false)},
                            {"xen mmu=batched", calibrate_line(8, 500, R"("hypercalls":256)")}},
                           true);
  const Results w = run_of({{"native mmu=native", calibrate_line(12, 87, "")},
                            {"native mmu=native", calibrate_line(1, 900, R"("syscall_entries":256)")},
                            {"native mmu=native", calibrate_line(8, 0, "", false)},
                            {"xen mmu=batched", calibrate_line(8, 3000, R"("hypercalls":256)")}},
                           false);
  const CalibrationInput in = calibration_input(v, w);
  ASSERT_TRUE(in.timings.count("native/walk"));
  EXPECT_DOUBLE_EQ(in.timings.at("native/walk").ns, 87);
  EXPECT_DOUBLE_EQ(in.timings.at("native/walk").instructions, 58);
  EXPECT_DOUBLE_EQ(in.timings.at("native/syscall").counters.at("syscall_entries"), 1);
  EXPECT_DOUBLE_EQ(in.timings.at("xen/hypercall").ns, 3000);
  EXPECT_NE(in.missing.at("native/hypercall").find("Xen only"), std::string::npos);
  const CostProfile p = derive_costs(in.timings, in.missing, "t", "test");
  EXPECT_NEAR(p.instruction.ns, 87.0 / 58, 1e-12);
  EXPECT_NEAR(p.event("syscall")->ns, 900 - 87.0 / 58 * (306 - 2), 1e-9);
}

// A small virtual-time run: getppid natively (counters included) and on
// Xen, fork_dirty natively; a wall-time Linux row that cannot be projected.
Results small_run() {
  Results r = run_of({}, true);
  r.configs.push_back(config_from_id("linux-native"));
  const std::string counters =
      R"("syscall_entries":10000,"exception_entries":0,"interrupt_entries":1,"ipis_taken":0,"ipi_sends":0,)"
      R"("xen_syscall_bounces":0,"xen_fault_bounces":0,"hypercalls":0,"multicall_calls":0,"mmu_update_entries":0,)"
      R"("ptwr_traps":0,"tlb_flush_one":0,"root_loads":0,"tlb_flush_all":0,"rep_clear_bytes":0,"rep_copy_bytes":0)";
  r.records.push_back(sample("native mmu=native",
                             testing::bench_line("getppid", R"("iters":10000)", 3060000, 3060000, 3060000, 10000, 0,
                                                 false, "," + counters)));
  r.records.push_back(sample("linux-native", testing::bench_line("getppid", R"("iters":10000)", 900000, 900000, 900000,
                                                                 10000, 0, false)));
  aggregate(r);
  return r;
}

TEST(Projection, ProjectsVirtualTimeRowsWithTheirCounters) {
  Results r = small_run();
  const CostProfile p = parse_profile(nlohmann::json::parse(R"({"format":"pvk-cost-profile",
      "instruction":{"ns":0.5,"source":"x"},"events":{"syscall":{"ns":70,"source":"y"}}})"),
                                      "m", "m.json");
  apply_profiles(r, {p});
  ASSERT_EQ(r.rows.size(), 2u);
  const Row& pvk = r.rows[0].config == "native mmu=native" ? r.rows[0] : r.rows[1];
  const Row& linux_row = &pvk == &r.rows[0] ? r.rows[1] : r.rows[0];
  ASSERT_TRUE(pvk.projected.count("m"));
  // 306 instructions per getppid, 2 of them the syscall: 0.5 × 304 + 70.
  EXPECT_NEAR(pvk.projected.at("m"), 0.5 * 304 + 70, 1e-9);
  EXPECT_TRUE(linux_row.projected.empty());
  // Labelled as a model in the summary and in results.json.
  const std::string md = summary_markdown(r, {}, {}) + projection_section(r, {p}, builtin_ratios());
  EXPECT_NE(md.find("model: m"), std::string::npos);
  EXPECT_NE(md.find("a model, not a measurement"), std::string::npos);
  const OJson j = to_json(r);
  bool labelled = false;
  for (const auto& row : j["results"])
    if (row.contains("projected")) labelled = row["projected"]["m"]["model"].get<bool>();
  EXPECT_TRUE(labelled);
  EXPECT_EQ(j["cost_model"][0]["name"], "m");
  // Read back, the profile is there to print the section again (--from).
  const Results again = results_from_json(OJson::parse(j.dump()));
  ASSERT_EQ(applied_profiles(again).size(), 1u);
  EXPECT_DOUBLE_EQ(applied_profiles(again)[0].event("syscall")->ns, 70);
}

TEST(Projection, WallTimeRowsAreNotProjected) {
  Results r = small_run();
  r.run["icount"] = "";
  const CostProfile p = parse_profile(nlohmann::json::parse(R"({"format":"pvk-cost-profile",
      "instruction":{"ns":0.5,"source":"x"},"events":{}})"),
                                      "m", "m.json");
  apply_profiles(r, {p});
  for (const auto& row : r.rows) EXPECT_TRUE(row.projected.empty()) << row.config;
  EXPECT_NE(projection_section(r, {p}, {}).find("No row of this run can be projected"), std::string::npos);
}

TEST(Projection, RatiosReadInTheModel) {
  Results r;
  r.run = {{"icount", "shift=0,sleep=off"}};
  r.configs = {config_from_id("xen mmu=batched"), config_from_id("xen mmu=wrpt")};
  auto line = [](long per_op, long hypercalls, long traps) {
    return testing::bench_line("mprotect", R"("pages":64)", per_op, per_op, per_op, 1, 0, false,
                               fmt::format(R"(,"syscall_entries":0,"exception_entries":0,"interrupt_entries":0,)"
                                           R"("ipis_taken":0,"ipi_sends":0,"xen_syscall_bounces":0,"xen_fault_bounces":0,)"
                                           R"("multicall_calls":0,"mmu_update_entries":0,"tlb_flush_one":0,"root_loads":0,)"
                                           R"("tlb_flush_all":0,"rep_clear_bytes":0,"rep_copy_bytes":0,"hypercalls":{},)"
                                           R"("ptwr_traps":{})",
                                           hypercalls, traps));
  };
  r.records.push_back(sample("xen mmu=batched", line(10000, 0, 0)));
  r.records.push_back(sample("xen mmu=wrpt", line(10000, 0, 64)));
  aggregate(r);
  const CostProfile p = parse_profile(nlohmann::json::parse(R"({"format":"pvk-cost-profile",
      "instruction":{"ns":1,"source":"x"},"events":{"ptwr_trap":{"ns":1001,"source":"y"}}})"),
                                      "m", "m.json");
  apply_profiles(r, {p});
  // The same virtual time; in the model wrpt pays 64 traps of 1000 ns more.
  const Results model = projected_results(r, p);
  const auto ratios = compute_ratios(model, builtin_ratios());
  const auto it = std::find_if(ratios.begin(), ratios.end(), [](const Ratio& x) { return x.spec == "batched÷wrpt"; });
  ASSERT_NE(it, ratios.end());
  EXPECT_NEAR(it->shown(), 10000.0 / (10000 + 64 * 1000), 1e-9);
  const std::string md = projection_section(r, {p}, builtin_ratios());
  EXPECT_NE(md.find("| batched÷wrpt | mprotect |"), std::string::npos) << md;
  EXPECT_NE(md.find("Targets in the model (m)"), std::string::npos);
}

}  // namespace
}  // namespace pvk::bench
