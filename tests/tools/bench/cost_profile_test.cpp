// Cost profiles (cost_profile.hpp): every refusal in one line naming the
// field, unknown names listing the profiles, and the shipped profiles.
#include "pvk/bench/cost_profile.hpp"

#include "pvk/bench/cost_events.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace pvk::bench {
namespace {

using Json = nlohmann::json;

Json good() {
  return Json::parse(R"({
    "format": "pvk-cost-profile", "version": 1, "description": "test",
    "instruction": {"ns": 0.5, "source": "a paper"},
    "events": {"syscall": {"ns": 100, "source": "a list"},
               "rep_clear": {"ns_per_kib": 20, "source": "a run"}},
    "not_timed": {"ipi": "one CPU"}})");
}

// The refusal's message, which must be one line naming `field`.
std::string refusal(const Json& j, const std::string& field) {
  try {
    parse_profile(j, "t", "t.json");
  } catch (const ProfileError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("t.json: " + field), std::string::npos) << "want the field " << field << " named in: " << m;
    return m;
  }
  ADD_FAILURE() << "accepted a profile that should be refused at " << field;
  return "";
}

TEST(CostProfile, ParsesAGoodOne) {
  const CostProfile p = parse_profile(good(), "t", "t.json");
  EXPECT_EQ(p.name, "t");
  EXPECT_DOUBLE_EQ(p.instruction.ns, 0.5);
  EXPECT_EQ(p.instruction.source, "a paper");
  ASSERT_NE(p.event("syscall"), nullptr);
  EXPECT_DOUBLE_EQ(p.event("syscall")->ns, 100);
  ASSERT_NE(p.event("rep_clear"), nullptr);
  EXPECT_DOUBLE_EQ(p.event("rep_clear")->ns, 20);
  EXPECT_EQ(p.event("exception"), nullptr);
  EXPECT_EQ(p.not_timed.at("ipi"), "one CPU");
  // And back: what profile_to_json writes parses to the same numbers.
  const CostProfile again = parse_profile(Json::parse(profile_to_json(p).dump()), "t", "again");
  EXPECT_DOUBLE_EQ(again.event("rep_clear")->ns, 20);
  EXPECT_EQ(again.event("syscall")->source, "a list");
  EXPECT_EQ(again.not_timed, p.not_timed);
}

TEST(CostProfile, RefusesTheShapeAndTheFormat) {
  refusal(Json::array(), "(top)");
  Json j = good();
  j.erase("format");
  refusal(j, "format");
  j = good();
  j["format"] = "something-else";
  refusal(j, "format");
  j = good();
  j["colour"] = "blue";
  refusal(j, "colour");
}

TEST(CostProfile, RefusesAMissingNegativeOrZeroFactor) {
  Json j = good();
  j.erase("instruction");
  refusal(j, "instruction");
  j = good();
  j["instruction"].erase("ns");
  refusal(j, "instruction.ns");
  j = good();
  j["instruction"]["ns"] = -1;
  EXPECT_NE(refusal(j, "instruction.ns").find("negative"), std::string::npos);
  j = good();
  j["instruction"]["ns"] = 0;
  refusal(j, "instruction.ns");
  j = good();
  j["instruction"]["ns"] = "fast";
  refusal(j, "instruction.ns");
  j = good();
  j["instruction"] = 0.5;
  refusal(j, "instruction");
}

TEST(CostProfile, RefusesEventsWithoutACostOrWithANegativeOne) {
  Json j = good();
  j["events"]["syscall"].erase("ns");
  EXPECT_NE(refusal(j, "events.syscall.ns").find("missing"), std::string::npos);
  j = good();
  j["events"]["syscall"]["ns"] = -70;
  EXPECT_NE(refusal(j, "events.syscall.ns").find("negative"), std::string::npos);
  j = good();
  j["events"]["syscall"]["ns"] = nullptr;
  refusal(j, "events.syscall.ns");
  // A rep event is priced per KiB: "ns" there is the wrong key.
  j = good();
  j["events"]["rep_clear"] = {{"ns", 20}, {"source", "x"}};
  refusal(j, "events.rep_clear.ns");
  j = good();
  j.erase("events");
  refusal(j, "events");
  j = good();
  j["events"] = Json::array();
  refusal(j, "events");
  // Zero is a cost (an event that is free): allowed.
  j = good();
  j["events"]["syscall"]["ns"] = 0;
  EXPECT_DOUBLE_EQ(parse_profile(j, "t", "t.json").event("syscall")->ns, 0);
}

TEST(CostProfile, RefusesUnknownEvents) {
  Json j = good();
  j["events"]["syscal"] = {{"ns", 1}, {"source", "x"}};
  const std::string m = refusal(j, "events.syscal");
  EXPECT_NE(m.find("unknown event"), std::string::npos) << m;
  EXPECT_NE(m.find("syscall"), std::string::npos) << "the known events are listed: " << m;
  j = good();
  j["not_timed"]["teleport"] = "no";
  refusal(j, "not_timed.teleport");
}

TEST(CostProfile, RefusesANumberWithoutItsSource) {
  Json j = good();
  j["events"]["syscall"].erase("source");
  EXPECT_NE(refusal(j, "events.syscall.source").find("source"), std::string::npos);
  j = good();
  j["events"]["syscall"]["source"] = "  ";
  refusal(j, "events.syscall.source");
  j = good();
  j["events"]["syscall"]["source"] = 3;
  refusal(j, "events.syscall.source");
  j = good();
  j["instruction"].erase("source");
  refusal(j, "instruction.source");
}

TEST(CostProfile, RefusesAnEventBothPricedAndNotTimed) {
  Json j = good();
  j["not_timed"]["syscall"] = "no";
  refusal(j, "events.syscall");
  j = good();
  j["not_timed"]["exception"] = "";
  refusal(j, "not_timed.exception");
}

TEST(CostProfile, UnknownNamesListTheProfiles) {
  const auto dir = std::filesystem::temp_directory_path() / "pvk-cost-profile-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "alpha.json") << good().dump();
  std::ofstream(dir / "broken.json") << "{ not json";
  try {
    load_profile(dir, "beta");
    ADD_FAILURE() << "beta does not exist";
  } catch (const ProfileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'beta'"), std::string::npos) << m;
    EXPECT_NE(m.find("alpha, broken"), std::string::npos) << "lists the profiles: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
  EXPECT_THROW(load_profile(dir, "broken"), ProfileError);
  EXPECT_THROW(load_profile(dir, "../alpha"), ProfileError);
  EXPECT_EQ(load_profile(dir, "alpha").name, "alpha");
  std::filesystem::remove_all(dir);
}

// The profiles bench/profiles ships: each parses, every number has a source,
// and the default one is there.
TEST(CostProfile, ShippedProfilesParse) {
  const std::filesystem::path dir = std::filesystem::path(PVK_SOURCE_DIR) / "bench" / "profiles";
  const auto names = profile_names(dir);
  for (const char* want : {kDefaultProfile, "p4-2006", "tcg", "icount"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    const CostProfile p = load_profile(dir, n);
    EXPECT_FALSE(p.instruction.source.empty());
    for (const auto& [event, cost] : p.events) EXPECT_FALSE(cost.source.empty()) << event;
    // Every event is either priced or said why not, in a calibrated profile.
    if (n == "tcg" || n == "icount")
      for (const auto& e : cost_events())
        EXPECT_TRUE(p.event(e.name) || p.not_timed.count(std::string(e.name))) << e.name;
  }
}

}  // namespace
}  // namespace pvk::bench
