#include "pvk/bench/cost_profile.hpp"

#include "pvk/bench/cost_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

namespace pvk::bench {
namespace {

using Json = nlohmann::json;

[[noreturn]] void refuse(const std::string& where, const std::string& field, const std::string& what) {
  throw ProfileError(fmt::format("{}: {}: {}", where, field, what));
}

// A {"<key>": number, "source": "..."} object at `field`.
SourcedCost sourced(const Json& j, const std::string& where, const std::string& field, std::string_view key,
                    bool zero_allowed) {
  if (!j.is_object()) refuse(where, field, "not an object (want {\"" + std::string(key) + "\": N, \"source\": \"...\"})");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != key && it.key() != "source" && it.key() != "note")
      refuse(where, field + "." + it.key(), fmt::format("unknown field (a cost here is \"{}\")", key));
  const auto v = j.find(std::string(key));
  if (v == j.end()) refuse(where, field + "." + std::string(key), "missing cost");
  if (!v->is_number()) refuse(where, field + "." + std::string(key), "not a number");
  const double ns = v->get<double>();
  if (!std::isfinite(ns)) refuse(where, field + "." + std::string(key), "not a finite number");
  if (ns < 0) refuse(where, field + "." + std::string(key), fmt::format("negative cost ({})", ns));
  if (ns == 0 && !zero_allowed) refuse(where, field + "." + std::string(key), "zero: an instruction costs something");
  const auto s = j.find("source");
  if (s == j.end() || !s->is_string() || s->get<std::string>().find_first_not_of(" \t") == std::string::npos)
    refuse(where, field + ".source", "missing: every number needs its source (a paper, a mailing-list measurement, or a "
                                     "`pvk calibrate` run)");
  return {ns, s->get<std::string>()};
}

}  // namespace

const SourcedCost* CostProfile::event(std::string_view n) const {
  const auto it = events.find(std::string(n));
  return it == events.end() ? nullptr : &it->second;
}

CostProfile parse_profile(const Json& json, const std::string& name, const std::string& where) {
  if (!json.is_object()) refuse(where, "(top)", "not a JSON object");
  static const std::set<std::string> fields{"format", "version", "description", "instruction", "events", "not_timed",
                                            "machine", "calibration"};
  for (auto it = json.begin(); it != json.end(); ++it)
    if (!fields.count(it.key())) refuse(where, it.key(), "unknown field");
  const auto format = json.find("format");
  if (format == json.end()) refuse(where, "format", "missing (want \"pvk-cost-profile\")");
  if (!format->is_string() || format->get<std::string>() != "pvk-cost-profile")
    refuse(where, "format", "not \"pvk-cost-profile\"");
  CostProfile p;
  p.name = name;
  if (const auto d = json.find("description"); d != json.end() && d->is_string()) p.description = d->get<std::string>();
  const auto ins = json.find("instruction");
  if (ins == json.end()) refuse(where, "instruction", "missing (the factor for ordinary instructions)");
  p.instruction = sourced(*ins, where, "instruction", "ns", false);
  if (const auto nt = json.find("not_timed"); nt != json.end()) {
    if (!nt->is_object()) refuse(where, "not_timed", "not an object");
    for (auto it = nt->begin(); it != nt->end(); ++it) {
      if (!find_cost_event(it.key()))
        refuse(where, "not_timed." + it.key(), fmt::format("unknown event (known: {})", cost_event_names()));
      if (!it->is_string() || it->get<std::string>().empty()) refuse(where, "not_timed." + it.key(), "needs the reason");
      p.not_timed[it.key()] = it->get<std::string>();
    }
  }
  const auto events = json.find("events");
  if (events == json.end()) refuse(where, "events", "missing");
  if (!events->is_object()) refuse(where, "events", "not an object");
  for (auto it = events->begin(); it != events->end(); ++it) {
    const CostEvent* e = find_cost_event(it.key());
    if (!e) refuse(where, "events." + it.key(), fmt::format("unknown event (known: {})", cost_event_names()));
    if (p.not_timed.count(it.key())) refuse(where, "events." + it.key(), "also listed as not timed");
    p.events[it.key()] = sourced(*it, where, "events." + it.key(), e->unit, true);
  }
  return p;
}

nlohmann::ordered_json profile_to_json(const CostProfile& p) {
  nlohmann::ordered_json out;
  out["format"] = "pvk-cost-profile";
  out["version"] = 1;
  out["description"] = p.description;
  out["instruction"] = {{"ns", p.instruction.ns}, {"source", p.instruction.source}};
  nlohmann::ordered_json events = nlohmann::ordered_json::object();
  for (const auto& e : cost_events()) {
    const SourcedCost* c = p.event(e.name);
    if (!c) continue;
    events[std::string(e.name)] = {{std::string(e.unit), c->ns}, {"source", c->source}};
  }
  out["events"] = events;
  if (!p.not_timed.empty()) {
    nlohmann::ordered_json nt = nlohmann::ordered_json::object();
    for (const auto& e : cost_events())
      if (const auto it = p.not_timed.find(std::string(e.name)); it != p.not_timed.end()) nt[it->first] = it->second;
    out["not_timed"] = nt;
  }
  return out;
}

std::vector<std::string> profile_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

CostProfile load_profile(const std::filesystem::path& dir, const std::string& name) {
  const std::filesystem::path file = dir / (name + ".json");
  std::ifstream in(file);
  if (name.empty() || name.find('/') != std::string::npos || !in) {
    std::string known;
    for (const auto& n : profile_names(dir)) known += (known.empty() ? "" : ", ") + n;
    throw ProfileError(fmt::format("no cost profile named '{}' in {} (profiles: {})", name, dir.string(),
                                   known.empty() ? "none" : known));
  }
  const Json json = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) throw ProfileError(fmt::format("{}: not valid JSON", file.string()));
  return parse_profile(json, name, file.string());
}

}  // namespace pvk::bench
