#include "pvk/bench/model_check.hpp"

#include "pvk/bench/calibration.hpp"
#include "pvk/bench/cost_model.hpp"
#include "pvk/bench/projection.hpp"
#include "pvk/bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace pvk::bench {

ModelCheck model_check(const Results& virtual_run, const Results& wall_run, const CostProfile& profile) {
  ModelCheck out;
  std::map<std::string, const Row*> wall;
  for (const auto& r : wall_run.rows) wall[r.bench + "\n" + params_text(r.params) + "\n" + r.config] = &r;
  std::map<std::string, std::vector<double>> by_bench;
  std::vector<std::string> order;
  std::vector<double> all;
  for (const auto& r : virtual_run.rows) {
    const auto w = wall.find(r.bench + "\n" + params_text(r.params) + "\n" + r.config);
    if (r.bench == "calibrate" || w == wall.end() || w->second->per_op <= 0 || !r.pass || !w->second->pass) continue;
    const auto projected = project_row(virtual_run, r, profile);
    if (!projected) continue;
    const Config* c = virtual_run.find_config(r.config);
    ModelCheckLine line{r.bench, params_text(r.params), c ? c->label() : r.config, r.per_op, *projected,
                        w->second->per_op, *projected / w->second->per_op - 1};
    if (!by_bench.count(r.bench)) order.push_back(r.bench);
    by_bench[r.bench].push_back(std::fabs(line.error));
    all.push_back(std::fabs(line.error));
    out.lines.push_back(std::move(line));
  }
  for (const auto& b : order) out.median_by_bench.emplace_back(b, median_of(by_bench[b]));
  out.median_abs_error = median_of(all);
  return out;
}

namespace {

// One configuration's rows of a run, or one boot of them (rep > 0): each
// row's figures that boot's own.
Results slice(const Results& run, const std::string& config, int rep) {
  Results out;
  out.run = run.run;
  out.configs = run.configs;
  out.boots = run.boots;
  for (const auto& r : run.rows) {
    if (r.config != config) continue;
    if (rep <= 0) {
      out.rows.push_back(r);
      continue;
    }
    for (const auto& b : r.boots)
      if (b.rep == rep) {
        Row one = r;
        one.per_op = b.per_op;
        if (!b.fields.empty()) one.fields = b.fields;
        one.boots = {b};
        out.rows.push_back(std::move(one));
      }
  }
  return out;
}

}  // namespace

ModelCheck paired_model_check(const Results& virtual_run, const Results& wall_run, std::string* profiles_text) {
  ModelCheck out;
  std::map<std::string, std::vector<double>> by_bench;
  std::vector<std::string> order;
  std::vector<double> all, factors;
  // A Xen configuration's profile needs the native events (and the
  // factor) too: from the native configuration's boot of the same rep.
  const Config* native = nullptr;
  for (const auto& c : virtual_run.configs)
    if (c.platform == "native" && c.cpus() == 1 && !native) native = &c;
  auto with_native = [&](Results r, const Results& run, const Config& config, int rep) {
    if (native && model_platform(config) == "xen")
      for (auto& row : slice(run, native->id(), rep).rows)
        if (row.bench == "calibrate") r.rows.push_back(std::move(row));
    return r;
  };
  for (const auto& config : virtual_run.configs) {
    const Results v = with_native(slice(virtual_run, config.id(), 0), virtual_run, config, 0);
    std::set<int> reps;
    for (const auto& r : wall_run.rows)
      if (r.config == config.id())
        for (const auto& b : r.boots) reps.insert(b.rep);
    // Per row: each boot's projection, measurement and error.
    std::map<std::string, std::vector<double>> projected, measured, errors;
    for (const int rep : reps) {
      const Results w = with_native(slice(wall_run, config.id(), rep), wall_run, config, rep);
      const CalibrationInput in = calibration_input(v, w);
      CostProfile p;
      try {
        p = derive_costs(in.timings, in.missing, "paired", "this boot's calibrate rows");
      } catch (const ProfileError&) {
        continue;  // this boot timed no calibration
      }
      factors.push_back(p.instruction.ns);
      std::map<std::string, const Row*> wall_rows;
      for (const auto& r : w.rows) wall_rows[r.bench + "\n" + params_text(r.params)] = &r;
      for (const auto& r : v.rows) {
        const auto m = wall_rows.find(r.bench + "\n" + params_text(r.params));
        if (r.config != config.id() || r.bench == "calibrate" || m == wall_rows.end() || m->second->per_op <= 0 || !r.pass) continue;
        const auto x = project_row(virtual_run, r, p);
        if (!x) continue;
        const std::string key = r.bench + "\n" + params_text(r.params);
        projected[key].push_back(*x);
        measured[key].push_back(m->second->per_op);
        errors[key].push_back(*x / m->second->per_op - 1);
      }
    }
    for (const auto& r : v.rows) {
      const std::string key = r.bench + "\n" + params_text(r.params);
      if (r.config != config.id() || !errors.count(key)) continue;
      ModelCheckLine line{r.bench, params_text(r.params), config.label(), r.per_op, median_of(projected[key]),
                          median_of(measured[key]), median_of(errors[key])};
      if (!by_bench.count(r.bench)) order.push_back(r.bench);
      by_bench[r.bench].push_back(std::fabs(line.error));
      all.push_back(std::fabs(line.error));
      out.lines.push_back(std::move(line));
    }
  }
  for (const auto& b : order) out.median_by_bench.emplace_back(b, median_of(by_bench[b]));
  out.median_abs_error = median_of(all);
  if (profiles_text && !factors.empty())
    *profiles_text = fmt::format("a profile per configuration and boot, from its calibrate rows ({} boots; factor "
                                 "{:.3g}–{:.3g} ns)",
                                 factors.size(), *std::min_element(factors.begin(), factors.end()),
                                 *std::max_element(factors.begin(), factors.end()));
  return out;
}

std::string model_check_text(const ModelCheck& check, const CostProfile* profile, const std::string& paired_text,
                             const std::string& virtual_name, const std::string& wall_name) {
  std::string md = fmt::format(
      "# The cost model against wall time\n\nRows of {} (virtual time) projected with {}, beside the same rows of "
      "{} (wall time). Error: projected ÷ measured − 1.\n\n",
      virtual_name, profile ? "profile `" + profile->name + "`" : paired_text, wall_name);
  if (profile) {
    md += fmt::format("The profile: instruction {:.3g} ns", profile->instruction.ns);
    for (const auto& e : cost_events())
      if (const SourcedCost* c = profile->event(e.name))
        md += fmt::format(", {} {:.4g} ns{}", e.name, c->ns, e.unit == "ns" ? "" : "/KiB");
    md += ".\n\n";
  }
  md += "| benchmark | parameters | configuration | virtual | projected | measured | error |\n";
  md += "|---|---|---|---:|---:|---:|---:|\n";
  for (const auto& l : check.lines)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {:+.0f} % |\n", l.bench, l.params, l.config,
                      format_ns(l.virtual_ns), format_ns(l.projected_ns), format_ns(l.measured_ns), 100 * l.error);
  md += "\n| benchmark | median \\|error\\| |\n|---|---:|\n";
  for (const auto& [bench, e] : check.median_by_bench) md += fmt::format("| {} | {:.0f} % |\n", bench, 100 * e);
  md += fmt::format("| **all {} rows** | **{:.0f} %** |\n", check.lines.size(), 100 * check.median_abs_error);
  return md;
}

}  // namespace pvk::bench
