#include "pvk/bench/scaling.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/experiments.hpp"
#include "pvk/bench/format.hpp"
#include "pvk/bench/matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace pvk::bench {

const ScalingSpec& scaling_spec() { return experiments().scaling; }

std::optional<unsigned> row_workers(const Row& row, std::string* param) {
  for (const auto& w : scaling_spec().workers)
    for (const auto& [key, value] : row.params)
      if (key == w.param && value.is_number_integer() && value.get<long long>() >= 0) {
        if (param) *param = key;
        return static_cast<unsigned>(value.get<long long>()) + w.plus;
      }
  return std::nullopt;
}

namespace {

// What identifies a line across counts: benchmark, parameters, configuration.
std::string line_key(const ScalingLine& l) { return l.bench + "\n" + params_text(l.params) + "\n" + l.config; }

// The row's counters the table may show: the spec's, then every field with
// one of its prefixes, per op.
std::vector<std::pair<std::string, std::optional<double>>> line_counters(const Row& row) {
  std::vector<std::pair<std::string, std::optional<double>>> out;
  const double ops = row.ops > 0 ? row.ops : 1;
  for (const auto& name : scaling_spec().counters) {
    const auto v = row.field(name);
    out.emplace_back(name, v ? std::optional<double>(*v / ops) : std::nullopt);
  }
  for (const auto& prefix : scaling_spec().counter_prefixes)
    for (const auto& [name, v] : row.fields)
      if (name.starts_with(prefix)) out.emplace_back(name, v / ops);
  return out;
}

}  // namespace

std::vector<ScalingLine> scaling_lines(const Results& results) {
  std::vector<ScalingLine> lines;
  for (const Row& row : results.rows) {
    std::string param;
    const auto workers = row_workers(row, &param);
    const Config* c = results.find_config(row.config);
    if (!workers || !c || *workers != c->cpus()) continue;
    ScalingLine l;
    l.bench = row.bench;
    for (const auto& p : row.params)
      if (p.first != param) l.params.push_back(p);
    Config bare = *c;
    std::erase_if(bare.switches, [](const auto& s) { return s.first == kSmpKey; });
    l.config = bare.id();
    l.label = bare.label();
    l.cpus = c->cpus();
    l.workers = *workers;
    l.per_op = row.per_op;
    l.pass = row.pass;
    l.counters = line_counters(row);
    lines.push_back(std::move(l));
  }
  // Only what ran at two counts or more; in the order each first appears.
  std::map<std::string, std::set<unsigned>> counts;
  std::map<std::string, size_t> first;
  for (const auto& l : lines) {
    counts[line_key(l)].insert(l.cpus);
    first.emplace(line_key(l), first.size());
  }
  std::erase_if(lines, [&](const ScalingLine& l) { return counts[line_key(l)].size() < 2; });
  std::stable_sort(lines.begin(), lines.end(), [&](const ScalingLine& a, const ScalingLine& b) {
    return std::pair(first[line_key(a)], a.cpus) < std::pair(first[line_key(b)], b.cpus);
  });
  for (auto& l : lines)
    for (const auto& one : lines)
      if (one.cpus == 1 && one.per_op > 0 && line_key(one) == line_key(l)) l.to_one = l.per_op / one.per_op;
  return lines;
}

namespace {

// The counter columns of one table: the spec's counters any of its lines
// reports, and the prefixed ones (lock_...) that are not 0 in all of them.
std::vector<std::string> counter_columns(const std::vector<const ScalingLine*>& lines) {
  std::vector<std::string> columns;
  auto add = [&](const std::string& name) {
    if (std::find(columns.begin(), columns.end(), name) == columns.end()) columns.push_back(name);
  };
  for (const ScalingLine* l : lines)
    for (const auto& [name, v] : l->counters) {
      const bool prefixed = std::none_of(scaling_spec().counters.begin(), scaling_spec().counters.end(),
                                         [&](const std::string& c) { return c == name; });
      if (v && (!prefixed || *v != 0)) add(name);
    }
  return columns;
}

std::string currency(const Results& results, const std::vector<ScalingLine>& lines) {
  const bool virtual_time = std::all_of(lines.begin(), lines.end(), [&](const ScalingLine& l) {
    const Config c = config_from_id(l.config);
    Config with = c;
    with.switches.emplace_back(std::string(kSmpKey), std::to_string(l.cpus));
    return results.virtual_time(with);
  });
  if (virtual_time)
    return "virtual time: ns of every vCPU's instructions together (-icount keeps one clock for the machine), "
           "so a figure at N CPUs is the machine's total work per op";
  return "wall time: what the timed thread waited per op, not the machine's total work";
}

}  // namespace

std::string scaling_section(const Results& results) {
  const std::vector<ScalingLine> lines = scaling_lines(results);
  if (lines.empty()) return "";
  std::string md = "\n## Scaling across CPUs\n\n";
  md += fmt::format(
      "Total work per op with one worker per CPU (threads=N-1, procs=N; docs/benchmarks.md, \"Scaling across "
      "CPUs\"), {}. ÷ 1 CPU: over the same benchmark, parameters and configuration at one CPU (1.00: the other "
      "CPUs added no work). Counters per op, from the median rep, counting every CPU (— : not reported; lock_ "
      "counters that are 0 in every row are left out).\n",
      currency(results, lines));
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ScalingLine*>> tables;
  for (const auto& l : lines) {
    const std::string key = l.bench + " " + params_text(l.params);
    if (!tables.count(key)) order.push_back(key);
    tables[key].push_back(&l);
  }
  for (const auto& key : order) {
    const auto& table = tables[key];
    const BenchInfo* info = find_benchmark(table.front()->bench);
    md += fmt::format("\n### {}{}\n\n", key, info ? " — " + std::string(info->what) : "");
    const std::vector<std::string> columns = counter_columns(table);
    std::vector<std::string> head{"configuration", "CPUs", "workers", "total work per op", "÷ 1 CPU"};
    head.insert(head.end(), columns.begin(), columns.end());
    md += row_line(head);
    std::string rule = "|---|---:|---:|---:|---:|";
    for (size_t i = 0; i < columns.size(); ++i) rule += "---:|";
    md += rule + "\n";
    for (const ScalingLine* l : table) {
      std::vector<std::string> cells{l->label, std::to_string(l->cpus), std::to_string(l->workers),
                                     format_ns(l->per_op) + (l->pass ? "" : " ⚠ failed"),
                                     l->to_one ? format_ratio(*l->to_one) : "—"};
      for (const auto& column : columns) {
        const auto it = std::find_if(l->counters.begin(), l->counters.end(),
                                     [&](const auto& c) { return c.first == column; });
        cells.push_back(it != l->counters.end() && it->second ? format_count(*it->second) : "—");
      }
      md += row_line(cells);
    }
  }
  return md;
}

OJson scaling_json(const Results& results) {
  OJson out = OJson::array();
  for (const auto& l : scaling_lines(results)) {
    OJson params = OJson::object();
    for (const auto& [k, v] : l.params) params[k] = v;
    OJson counters = OJson::object();
    for (const auto& [name, v] : l.counters)
      if (v) counters[name] = *v;
    OJson j{{"bench", l.bench},         {"params", params},   {"configuration", l.config},
            {"cpus", l.cpus},           {"workers", l.workers}, {"per_op", l.per_op},
            {"pass", l.pass},           {"counters_per_op", counters}};
    j["to_one_cpu"] = l.to_one ? OJson(*l.to_one) : OJson(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace pvk::bench
