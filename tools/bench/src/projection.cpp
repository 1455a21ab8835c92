#include "pvk/bench/projection.hpp"

#include "pvk/bench/calibration.hpp"
#include "pvk/bench/cost_model.hpp"
#include "pvk/bench/report.hpp"

#include <fmt/format.h>

#include <map>

namespace pvk::bench {
namespace {

bool projectable(const Results& results, const Row& row) {
  const Config* c = results.find_config(row.config);
  return c && results.virtual_time(*c) && !model_platform(*c).empty() && row.per_op > 0 && row.ops > 0;
}

// Counters per operation: the median rep's deltas over its operations.
CounterLookup per_op_counters(const std::map<std::string, double>& fields, double ops) {
  return [&fields, ops](std::string_view name) -> std::optional<double> {
    const auto it = fields.find(std::string(name));
    if (it == fields.end()) return std::nullopt;
    return it->second / ops;
  };
}

std::optional<double> project_value(const CostProfile& profile, double per_op, const std::map<std::string, double>& fields,
                                    double ops) {
  const auto p = project(profile, per_op, per_op_counters(fields, ops));
  if (!p) return std::nullopt;
  return p->ns;
}

std::string ratio_key(const Ratio& r) {
  return r.spec + "\n" + r.bench + "\n" + r.denominator_bench + "\n" + params_text(r.params) + "\n" + r.numerator +
         "\n" + r.denominator;
}

std::vector<RatioSpec> per_op_specs(const std::vector<RatioSpec>& specs) {
  std::vector<RatioSpec> out;
  for (const auto& s : specs)
    if (s.field.empty()) out.push_back(s);
  return out;
}

std::string cost_text(const CostEvent& e, const SourcedCost& c) {
  return fmt::format("{:.4g} ns{}", c.ns, e.unit == "ns" ? "" : " per KiB");
}

}  // namespace

std::vector<CostProfile> applied_profiles(const Results& results) {
  std::vector<CostProfile> out;
  for (const auto& m : results.cost_model) {
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string()) continue;
    nlohmann::json j = nlohmann::json::parse(m.dump());
    const std::string name = j["name"];
    j.erase("name");
    try {
      out.push_back(parse_profile(j, name, "results.json cost_model"));
    } catch (const ProfileError&) {
    }
  }
  return out;
}

std::optional<double> project_row(const Results& results, const Row& row, const CostProfile& profile) {
  if (!projectable(results, row)) return std::nullopt;
  return project_value(profile, row.per_op, row.fields, row.ops);
}

void apply_profiles(Results& results, const std::vector<CostProfile>& profiles) {
  results.cost_model = OJson::array();
  for (const auto& p : profiles) {
    OJson j = OJson::parse(profile_to_json(p).dump());
    j["name"] = p.name;
    results.cost_model.push_back(std::move(j));
  }
  for (auto& row : results.rows) {
    row.projected.clear();
    for (const auto& p : profiles)
      if (const auto v = project_row(results, row, p)) row.projected[p.name] = *v;
  }
}

Results projected_results(const Results& results, const CostProfile& profile) {
  Results out = results;
  out.records.clear();
  out.rows.clear();
  for (const auto& row : results.rows) {
    const auto v = project_row(results, row, profile);
    if (!v) continue;
    Row r = row;
    // The reps' spread scales with the figure (a rep's counters are not kept).
    const double scale = row.per_op > 0 ? *v / row.per_op : 1;
    r.per_op = *v;
    r.per_op_min = row.per_op_min * scale;
    r.per_op_max = row.per_op_max * scale;
    r.median = row.median * scale;
    r.min = row.min * scale;
    r.max = row.max * scale;
    for (auto& b : r.boots) {
      const auto bv = b.fields.empty() ? std::optional<double>(b.per_op * scale)
                                       : project_value(profile, b.per_op, b.fields, row.ops);
      b.per_op = bv.value_or(b.per_op * scale);
    }
    out.rows.push_back(std::move(r));
  }
  return out;
}

OJson projection_ratios_json(const Results& results, const std::vector<CostProfile>& profiles,
                             const std::vector<RatioSpec>& specs) {
  OJson out = OJson::object();
  for (const auto& p : profiles) {
    OJson list = OJson::array();
    for (const auto& r : compute_ratios(projected_results(results, p), per_op_specs(specs))) {
      OJson params = OJson::object();
      for (const auto& [k, v] : r.params) params[k] = v;
      OJson j{{"ratio", r.spec}, {"bench", r.bench}, {"params", params}, {"numerator", r.numerator},
              {"denominator", r.denominator}, {"pair", r.pair}, {"value", r.shown()}, {"model", true}};
      if (!r.denominator_bench.empty()) j["denominator_bench"] = r.denominator_bench;
      list.push_back(std::move(j));
    }
    out[p.name] = list;
  }
  return out;
}

std::string projection_section(const Results& results, const std::vector<CostProfile>& profiles,
                               const std::vector<RatioSpec>& specs) {
  if (profiles.empty()) return "";
  size_t projectable_rows = 0;
  for (const auto& row : results.rows) projectable_rows += !row.projected.empty();
  std::string md =
      "\n## Projected time (a model, not a measurement)\n\n"
      "Virtual time charges every instruction 1 ns, a privilege transition, a TLB operation or an IPI included, "
      "and a rep string one instruction per byte. The model re-prices them (docs/benchmarks.md, \"Projected time\"): "
      "projected = factor × (virtual ns − the instructions of the events below) + Σ events × their cost, with the "
      "events counted by the kernel (base/counters.inc). The `model:` columns of the benchmark tables are this "
      "figure; here the profiles, then every ratio of the run in virtual time beside the model's.\n";
  if (projectable_rows == 0)
    md += "\nNo row of this run can be projected: the model needs rows timed in virtual time, on pvk, with the "
          "kernel's event counters.\n";
  for (const auto& p : profiles) {
    md += fmt::format("\n### Profile {}{}\n\n", p.name, p.description.empty() ? "" : ": " + p.description);
    md += "| | cost | source |\n|---|---:|---|\n";
    md += fmt::format("| instruction | {:.3g} ns | {} |\n", p.instruction.ns, p.instruction.source);
    for (const auto& e : cost_events()) {
      if (const SourcedCost* c = p.event(e.name))
        md += fmt::format("| {} | {} | {} |\n", e.name, cost_text(e, *c), c->source);
      else if (const auto it = p.not_timed.find(std::string(e.name)); it != p.not_timed.end())
        md += fmt::format("| {} | — | not timed: {} (priced as its instructions) |\n", e.name, it->second);
      else
        md += fmt::format("| {} | — | not in this profile (priced as its instructions) |\n", e.name);
    }
  }
  if (projectable_rows == 0) return md;
  // Every ratio, virtual time beside each model.
  const std::vector<RatioSpec> usable = per_op_specs(specs);
  const std::vector<Ratio> virtual_ratios = compute_ratios(results, usable);
  std::vector<std::map<std::string, const Ratio*>> model_maps(profiles.size());
  std::vector<std::vector<Ratio>> model_ratios;
  for (const auto& p : profiles) model_ratios.push_back(compute_ratios(projected_results(results, p), usable));
  for (size_t i = 0; i < profiles.size(); ++i)
    for (const auto& r : model_ratios[i]) model_maps[i][ratio_key(r)] = &r;
  md += "\n### Ratios in virtual time and in the model\n\n";
  std::string head = "| ratio | benchmark | parameters | pair | virtual time |";
  std::string rule = "|---|---|---|---|---:|";
  for (const auto& p : profiles) {
    head += fmt::format(" model: {} |", p.name);
    rule += "---:|";
  }
  md += head + "\n" + rule + "\n";
  for (const auto& r : virtual_ratios) {
    std::string line = fmt::format("| {} | {}{} | {} | {} | {} |", r.spec, r.bench,
                                   r.denominator_bench.empty() ? "" : " ÷ " + r.denominator_bench,
                                   params_text(r.params), r.pair.empty() ? "defaults" : r.pair, format_ratio(r.shown()));
    for (size_t i = 0; i < profiles.size(); ++i) {
      const auto it = model_maps[i].find(ratio_key(r));
      line += fmt::format(" {} |", it == model_maps[i].end() ? "—" : format_ratio(it->second->shown()));
    }
    md += line + "\n";
  }
  for (size_t i = 0; i < profiles.size(); ++i) {
    std::string targets = targets_section(model_ratios[i]);
    const std::string from = "\n## Targets\n";
    if (targets.starts_with(from))
      targets = fmt::format("\n### Targets in the model ({}){}", profiles[i].name, targets.substr(from.size() - 1));
    md += targets;
  }
  return md;
}

}  // namespace pvk::bench
