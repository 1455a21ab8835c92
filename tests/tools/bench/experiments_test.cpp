// bench/experiments.json: the file in the tree loads, is what the harness
// was built with, and a bad file is refused in one line naming the field.
#include "pvk/bench/experiments.hpp"
#include "pvk/bench/json_fields.hpp"
#include "pvk/bench/text_file.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pvk::bench {
namespace {

using Json = nlohmann::ordered_json;

std::string tree_text() {
  const auto text = read_text_file(std::string(PVK_SOURCE_DIR) + "/bench/experiments.json");
  EXPECT_TRUE(text);
  return text.value_or("");
}

TEST(Experiments, TheTreesFileIsTheCompiledOne) {
  EXPECT_EQ(tree_text(), experiments_text());
  const Experiments x = parse_experiments(tree_text(), "bench/experiments.json");
  EXPECT_EQ(x.platforms.size(), platform_specs().size());
  EXPECT_EQ(x.ratios.size(), builtin_ratios().size());
  ASSERT_NE(find_platform("xen"), nullptr);
  EXPECT_EQ(find_platform("xen")->large.dom0_memory, "2000M");
  EXPECT_EQ(find_platform("xen")->timeout, std::chrono::seconds{1200});
  EXPECT_GT(find_platform("xen")->standard.holds_mib, 0u);
  EXPECT_EQ(find_platform("xen")->smp_switches.size(), 2u);
  EXPECT_EQ(experiments().seed003_lines.size(), 2u);
  EXPECT_EQ(experiments().seed001_split.fault, 2300);
  // Seed 003's per-page pairing is data, not code (seeds.cpp names no backend).
  EXPECT_EQ(experiments().seed003_per_page.platform, "xen");
  EXPECT_EQ(experiments().seed003_per_page.switch_name, "mmu");
  EXPECT_EQ(experiments().seed003_per_page.numerator, "batched");
  EXPECT_EQ(experiments().seed003_per_page.denominator, "wrpt");
}

// The file with one change made by `edit`, parsed: the error it gives.
std::string refusal(const std::function<void(Json&)>& edit) {
  Json json = Json::parse(tree_text());
  edit(json);
  try {
    parse_experiments(json.dump(2), "bench/experiments.json");
  } catch (const JsonFieldError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Experiments, ABadFileIsRefusedInOneLineNamingTheField) {
  const std::vector<std::pair<std::function<void(Json&)>, std::string>> cases{
      {[](Json& j) { j["targets"][3]["at_most"] = "0.8"; }, "targets[3].at_most: expected a number"},
      {[](Json& j) { j["targets"][0].erase("ratio"); }, "targets[0].ratio: missing"},
      {[](Json& j) { j["targets"][0]["ratio"] = "nosuch"; }, "targets[0].ratio: no ratio named 'nosuch'"},
      // A platform's backends come from the registry; the file only says which of them.
      {[](Json& j) { j["platforms"][2]["backends"] = "batched"; }, "platforms[2].backends: expected matrix, default or none"},
      {[](Json& j) { j["platforms"][2]["backends_of"] = "arm"; }, "platforms[2].backends_of: expected native or xen"},
      {[](Json& j) { j["platforms"][0]["standard"].erase("holds_mib"); }, "platforms[0].standard.holds_mib: missing"},
      {[](Json& j) { j["platforms"][0]["timeout"] = 300; }, "platforms[0].timeout: unknown field"},
      {[](Json& j) { j["platforms"][1]["name"] = "native"; }, "platforms[1].name: a second platform of that name"},
      {[](Json& j) { j["platforms"][2]["smp_switches"][0] = "mmu"; }, "platforms[2].smp_switches: 'mmu' is not key=value"},
      {[](Json& j) { j["variations"][0]["benches"][1] = "getpidd"; }, "variations[0].benches: no benchmark named 'getpidd'"},
      {[](Json& j) { j["ratios"][0]["numerator"] = "platform"; },
       "ratios[0].numerator: selector 'platform': 'platform' is not key=value"},
      {[](Json& j) { j["seed_figures"][0]["claim"] = "maybe"; },
       "seed_figures[0].claim: 'maybe' is not no_difference, below_one, above_one or reference"},
      {[](Json& j) { j["seed000_runs"][0]["before"][2] = "4.51"; }, "seed000_runs[0].before: expected an array of numbers"},
      {[](Json& j) { j["seed003_lines"][0]["us"].erase(1); }, "seed003_lines[0].us: expected one time per page count"},
      {[](Json& j) { j["seed003_per_page"]["denominator"] = "batched"; },
       "seed003_per_page.denominator: the same as numerator"},
      {[](Json& j) { j["seed003_per_page"].erase("switch"); }, "seed003_per_page.switch: missing"},
      {[](Json& j) { j.erase("ratios"); }, "ratios: missing"},
      {[](Json& j) { j["extra"] = 1; }, "extra: unknown field"},
  };
  for (const auto& [edit, want] : cases) {
    const std::string got = refusal(edit);
    EXPECT_EQ(got, "bench/experiments.json: " + want);
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
  // Not JSON at all: one line too.
  try {
    parse_experiments("{\n\"platforms\": [\n", "bench/experiments.json");
    ADD_FAILURE() << "accepted";
  } catch (const JsonFieldError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("bench/experiments.json: not JSON: ")) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  // A comment is allowed anywhere.
  EXPECT_EQ(refusal([](Json& j) { j["targets"][1]["comment"] = "why"; }), "(accepted)");
}

}  // namespace
}  // namespace pvk::bench
