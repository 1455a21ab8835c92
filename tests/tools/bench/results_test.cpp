// Records into results: parameters, aggregation over repeated boots, JSON
// round trip and CSV.
#include "pvk/bench/results.hpp"

#include "fixtures.hpp"

#include <gtest/gtest.h>

namespace pvk::bench {
namespace {

using testing::bench_line;
using testing::sample;

// On pvk the bench driver's lines reach the console tagged "@pvk-user" (the
// kernel marks what programs write): they are the benchmark results all
// the same.
TEST(Records, ProgramRecordsTaggedByTheKernelAreResults) {
  const auto records = parse_records({
      R"(@pvk {"event":"boot","platform":"native","mmu":"native","pte":"attrs"})",
      "@pvk-user " + bench_line("getpid", "", 100, 90, 110, 10).substr(5),
      R"(@pvk-user {"event":"bench_done","benchmarks":1,"failed":0})",
  });
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1]["bench"], "getpid");
  EXPECT_EQ(records[2]["event"], "bench_done");
}

TEST(Records, ParsedInConsoleOrder) {
  const auto records = parse_records({
      "pvk: booting (native, bare metal)",
      R"(@pvk {"event":"boot","platform":"native","mmu":"native","pte":"attrs"})",
      "@pvk {broken",
      bench_line("ctx", R"("procs":2,"working_set":16384,"iters":200)", 4000, 3000, 9000, 400),
      R"(@pvk {"event":"bench_done","benchmarks":1,"failed":0})",
  });
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["event"], "boot");
  // Field order survives: the parameters are the fields between bench and unit.
  const Params p = record_params(records[1]);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].first, "procs");
  EXPECT_EQ(p[1].first, "working_set");
  EXPECT_EQ(p[2].first, "iters");
  EXPECT_EQ(params_text(p), "procs=2 working_set=16384 iters=200");
}

TEST(Records, ParamsWithoutUnitFallBackToNonResultFields) {
  const auto r = parse_records({R"(@pvk {"bench":"x","pages":5,"median":1,"per_op":1,"hypercalls":3,"exit_median":4,"pass":true})"});
  EXPECT_EQ(params_text(record_params(r.at(0))), "pages=5");
  const auto none = parse_records({bench_line("getpid", "", 100, 90, 110, 10)});
  EXPECT_TRUE(record_params(none.at(0)).empty());
}

Results three_boots() {
  Results results;
  results.configs = {make_config("xen", {{"mmu", "batched"}}), make_config("native", {{"mmu", "native"}})};
  const std::string xen = "xen mmu=batched", native = "native mmu=native";
  // Three boots of xen/batched: medians 300, 100, 200 (per op 3, 1, 2).
  results.records.push_back(sample(xen, bench_line("fork_dirty", R"("pages":1280)", 300, 250, 900, 100, 7), 1));
  results.records.push_back(sample(xen, bench_line("fork_dirty", R"("pages":1280)", 100, 80, 120, 100, 5), 2));
  results.records.push_back(sample(xen, bench_line("fork_dirty", R"("pages":1280)", 200, 190, 210, 100, 6), 3));
  results.records.push_back(sample(xen, bench_line("fork_dirty", R"("pages":12800)", 5000, 4000, 6000, 1), 1));
  results.records.push_back(sample(native, bench_line("fork_dirty", R"("pages":1280)", 50, 40, 60, 100), 1));
  results.records.push_back(sample(native, bench_line("getpid", R"("iters":10)", 10, 9, 11, 10), 1));
  results.records.push_back(sample(native, R"(@pvk {"event":"bench_done","benchmarks":2,"failed":0})", 1));
  return results;
}

const Row* find(const Results& r, const std::string& bench, const std::string& params, const std::string& config) {
  for (const auto& row : r.rows)
    if (row.bench == bench && params_text(row.params) == params && row.config == config) return &row;
  return nullptr;
}

TEST(Aggregate, MedianOfBootsAndExtremesOfReps) {
  Results results = three_boots();
  aggregate(results);
  ASSERT_EQ(results.rows.size(), 4u);
  const Row* r = find(results, "fork_dirty", "pages=1280", "xen mmu=batched");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->samples, 3);
  EXPECT_EQ(r->reps, 15);
  EXPECT_DOUBLE_EQ(r->median, 200);  // median of 300, 100, 200
  EXPECT_DOUBLE_EQ(r->min, 80);      // fastest rep of any boot
  EXPECT_DOUBLE_EQ(r->max, 900);     // slowest rep of any boot
  EXPECT_DOUBLE_EQ(r->ops, 100);
  EXPECT_DOUBLE_EQ(r->per_op, 2);
  EXPECT_DOUBLE_EQ(r->per_op_min, 0.8);
  EXPECT_DOUBLE_EQ(r->per_op_max, 9);
  EXPECT_DOUBLE_EQ(*r->field("hypercalls"), 6);  // median over the boots
  EXPECT_DOUBLE_EQ(*r->field("mmu_update_entries"), 12);
  EXPECT_TRUE(r->pass);
  EXPECT_FALSE(r->field("pages").has_value());  // a parameter, not a field
}

TEST(Aggregate, EvenCountTakesTheLowerMiddleLikeTheDriver) {
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({7}), 7);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

TEST(Aggregate, RowOrderFollowsTheSuiteThenParametersThenConfigurations) {
  Results results = three_boots();
  aggregate(results);
  std::vector<std::string> order;
  for (const auto& r : results.rows) order.push_back(r.bench + " " + params_text(r.params) + " @" + r.config);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "getpid iters=10 @native mmu=native",
                       "fork_dirty pages=1280 @xen mmu=batched",
                       "fork_dirty pages=1280 @native mmu=native",
                       "fork_dirty pages=12800 @xen mmu=batched",
                   }));
}

TEST(Aggregate, MinAndMaxFieldsKeepTheirExtremes) {
  Results results;
  results.configs = {make_config("xen", {{"mmu", "wrpt"}})};
  const std::string extra1 = R"(,"exit_median":50,"exit_min":40,"exit_max":70,"min_cycles":9)";
  const std::string extra2 = R"(,"exit_median":60,"exit_min":30,"exit_max":65,"min_cycles":8)";
  results.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":64)", 10, 9, 11, 1, 0, true, extra1)));
  results.records.push_back(sample("xen mmu=wrpt", bench_line("fork_dirty", R"("pages":64)", 10, 9, 11, 1, 0, true, extra2)));
  aggregate(results);
  ASSERT_EQ(results.rows.size(), 1u);
  const Row& r = results.rows[0];
  EXPECT_DOUBLE_EQ(*r.field("exit_median"), 50);  // lower middle of 50, 60
  EXPECT_DOUBLE_EQ(*r.field("exit_min"), 30);
  EXPECT_DOUBLE_EQ(*r.field("exit_max"), 70);
  EXPECT_DOUBLE_EQ(*r.field("min_cycles"), 8);
}

TEST(Aggregate, FailedBenchmarkIsMarked) {
  Results results;
  results.configs = {make_config("native", {{"mmu", "native"}})};
  results.records.push_back(sample("native mmu=native",
                                   R"(@pvk {"bench":"segv","iters":10,"unit":"ns","reps":1,"median":5,"min":5,"max":5,"ops":10,"per_op":0,"pass":false,"error":"handler not run"})"));
  aggregate(results);
  ASSERT_EQ(results.rows.size(), 1u);
  EXPECT_FALSE(results.rows[0].pass);
  EXPECT_EQ(results.rows[0].errors, std::vector<std::string>{"handler not run"});
}

TEST(Aggregate, UnknownConfigurationIsListed) {
  Results results;
  results.records.push_back(sample("linux-native", bench_line("getppid", R"("iters":10)", 10, 9, 11, 10, 0, false)));
  aggregate(results);
  ASSERT_EQ(results.configs.size(), 1u);
  EXPECT_EQ(results.configs[0].platform, "linux-native");
}

TEST(ResultsJson, RoundTrip) {
  Results results = three_boots();
  results.run = {{"started", "now"}, {"wall_s", 12.5}};
  BootRecord boot;
  boot.config = "xen mmu=batched";
  boot.rep = 2;
  boot.group = "all";
  boot.cmdline = "mmu=batched bench=all";
  boot.machine = {"2560", "2000M"};
  boot.ran = true;
  boot.pass = false;
  boot.reason = "frame leak";
  boot.elapsed_s = 31.5;
  boot.trouble = {"(XEN) Bad L1 flags"};
  results.boots.push_back(boot);
  aggregate(results);

  const OJson json = to_json(results);
  EXPECT_EQ(json["format"], "pvk-bench-results");
  EXPECT_EQ(json["records"].size(), results.records.size());
  EXPECT_EQ(json["records"][0]["configuration"], "xen mmu=batched");
  EXPECT_EQ(json["records"][0]["record"]["bench"], "fork_dirty");
  // Through text and back.
  const Results back = results_from_json(OJson::parse(json.dump()));
  EXPECT_EQ(back.run["wall_s"], 12.5);
  ASSERT_EQ(back.configs.size(), results.configs.size());
  EXPECT_EQ(back.configs[0].id(), "xen mmu=batched");
  ASSERT_EQ(back.boots.size(), 1u);
  EXPECT_EQ(back.boots[0].reason, "frame leak");
  EXPECT_EQ(back.boots[0].machine.dom0_memory, "2000M");
  EXPECT_EQ(back.boots[0].trouble, boot.trouble);
  ASSERT_EQ(back.rows.size(), results.rows.size());
  for (size_t i = 0; i < back.rows.size(); ++i) {
    EXPECT_EQ(back.rows[i].bench, results.rows[i].bench);
    EXPECT_EQ(params_text(back.rows[i].params), params_text(results.rows[i].params));
    EXPECT_EQ(back.rows[i].config, results.rows[i].config);
    EXPECT_DOUBLE_EQ(back.rows[i].per_op, results.rows[i].per_op);
    EXPECT_DOUBLE_EQ(back.rows[i].per_op_max, results.rows[i].per_op_max);
    EXPECT_EQ(back.rows[i].fields, results.rows[i].fields);
  }
  EXPECT_THROW(results_from_json(OJson::parse(R"({"rows":[]})")), std::runtime_error);
}

TEST(ResultsJson, RecordsWithoutRowsAreAggregated) {
  Results results = three_boots();
  OJson json = to_json(results);  // not aggregated: no rows
  EXPECT_TRUE(json["results"].empty());
  EXPECT_EQ(results_from_json(json).rows.size(), 4u);
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = false;
      else cell += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(cell), cell.clear();
    } else if (c == '\n') {
      rows.back().push_back(cell), cell.clear();
      rows.emplace_back();
    } else {
      cell += c;
    }
  }
  rows.pop_back();
  return rows;
}

TEST(ResultsCsv, OneLinePerRowWithEveryCounterAndEmptyCellsWhenAbsent) {
  Results results = three_boots();
  results.configs.push_back(config_from_id("linux-native"));
  // Linux has no pvk counters.
  results.records.push_back(sample("linux-native", bench_line("getpid", R"("iters":10)", 20, 19, 21, 10, 0, false)));
  aggregate(results);
  const auto csv = parse_csv(to_csv(results));
  ASSERT_EQ(csv.size(), 1 + results.rows.size());
  const auto& head = csv[0];
  auto col = [&](const std::string& name) {
    const auto it = std::find(head.begin(), head.end(), name);
    EXPECT_NE(it, head.end()) << name;
    return static_cast<size_t>(it - head.begin());
  };
  for (const char* name : {"bench", "params", "param_pages", "param_iters", "configuration", "platform", "mmu",
                           "samples", "median", "min", "max", "per_op", "per_op_min", "per_op_max", "hypercalls",
                           "ptwr_traps", "zero_page_maps", "free_frames_before"})
    col(name);
  for (const auto& line : csv) EXPECT_EQ(line.size(), head.size());
  auto line_of = [&](const std::string& bench, const std::string& params, const std::string& config) {
    for (const auto& line : csv)
      if (line[col("bench")] == bench && line[col("params")] == params && line[col("configuration")] == config)
        return line;
    ADD_FAILURE() << bench << " " << params << " @" << config;
    return head;
  };
  const auto xen = line_of("fork_dirty", "pages=1280", "xen mmu=batched");
  EXPECT_EQ(xen[col("bench")], "fork_dirty");
  EXPECT_EQ(xen[col("param_pages")], "1280");
  EXPECT_EQ(xen[col("configuration")], "xen mmu=batched");
  EXPECT_EQ(xen[col("mmu")], "batched");
  EXPECT_EQ(xen[col("samples")], "3");
  EXPECT_EQ(xen[col("median")], "200");
  EXPECT_EQ(xen[col("per_op")], "2");
  EXPECT_EQ(xen[col("hypercalls")], "6");
  EXPECT_EQ(xen[col("ptwr_traps")], "0");
  EXPECT_EQ(xen[col("zero_page_maps")], "");  // not in these records
  const auto linux_row = line_of("getpid", "iters=10", "linux-native");
  EXPECT_EQ(linux_row[col("platform")], "linux-native");
  EXPECT_EQ(linux_row[col("mmu")], "");
  EXPECT_EQ(linux_row[col("hypercalls")], "");
  EXPECT_EQ(linux_row[col("per_op")], "2");
}

}  // namespace
}  // namespace pvk::bench
