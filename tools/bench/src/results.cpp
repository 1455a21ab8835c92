#include "pvk/bench/results.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace pvk::bench {
namespace {

// Fields of a benchmark record that are results, not parameters.
bool is_result_field(std::string_view key) {
  static const std::set<std::string_view> fixed{
      "bench", "unit", "reps", "median", "min", "max", "ops", "per_op", "pass", "error",
      "free_frames_before", "free_frames_after", "per_page", "child_checked_pages",
  };
  if (fixed.count(key)) return true;
  for (auto c : counter_names())
    if (c == key) return true;
  for (std::string_view suffix : {"_cycles", "_per_op", "_median", "_min", "_max"})
    if (key.ends_with(suffix)) return true;
  return key.starts_with("exit_");
}

// Fields aggregated by hand rather than as "other numeric fields".
bool is_time_field(std::string_view key) {
  return key == "median" || key == "min" || key == "max" || key == "ops" || key == "per_op" || key == "reps";
}

bool is_min_field(std::string_view key) { return key.ends_with("_min") || key.starts_with("min_"); }
bool is_max_field(std::string_view key) { return key.ends_with("_max") || key.starts_with("max_"); }

double number(const OJson& j, const char* key, double fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.6g}", v);
}

std::string json_scalar_text(const OJson& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

OJson params_json(const Params& params) {
  OJson out = OJson::object();
  for (const auto& [k, v] : params) out[k] = v;
  return out;
}

// json[key] if it is an array, else an empty array.
const OJson& array_member(const OJson& json, const char* key) {
  static const OJson empty = OJson::array();
  const auto it = json.find(key);
  return it != json.end() && it->is_array() ? *it : empty;
}

Params params_from_json(const OJson& j) {
  Params out;
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) out.emplace_back(it.key(), it.value());
  return out;
}

}  // namespace

std::string params_text(const Params& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out += ' ';
    out += k + "=" + json_scalar_text(v);
  }
  return out;
}

std::vector<OJson> parse_records(const std::vector<std::string>& lines) {
  std::vector<OJson> out;
  for (const auto& line : lines) {
    // Benchmark results come from the bench driver, a user program: its
    // lines arrive tagged "@pvk-user" on pvk, untagged on Linux.
    const std::optional<std::string_view> body = record_body(line);
    if (!body) continue;
    OJson j = OJson::parse(*body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

Params record_params(const OJson& record) {
  Params params;
  if (record.contains("unit")) {
    bool after_bench = false;
    for (auto it = record.begin(); it != record.end(); ++it) {
      if (it.key() == "unit") break;
      if (after_bench) params.emplace_back(it.key(), it.value());
      if (it.key() == "bench") after_bench = true;
    }
    return params;
  }
  for (auto it = record.begin(); it != record.end(); ++it)
    if (!is_result_field(it.key()) && !it.value().is_boolean()) params.emplace_back(it.key(), it.value());
  return params;
}

std::optional<double> Row::field(std::string_view name) const {
  if (name == "median") return median;
  if (name == "min") return min;
  if (name == "max") return max;
  if (name == "ops") return ops;
  if (name == "per_op") return per_op;
  const auto it = fields.find(std::string(name));
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

std::optional<double> Row::BootValue::field(std::string_view name) const {
  if (name == "per_op") return per_op;
  const auto it = fields.find(std::string(name));
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

const Config* Results::find_config(std::string_view id) const {
  for (const auto& c : configs)
    if (c.id() == id) return &c;
  return nullptr;
}

bool Results::virtual_time() const {
  const auto it = run.find("icount");
  return it != run.end() && it->is_string() && !it->get<std::string>().empty();
}

// Every machine of a virtual-time run is timed in virtual time, those with
// several CPUs too (QEMU 10's round robin is fair under -icount). A run
// recorded before that (QEMU 7.2) timed those in wall time: its record has
// no "smp_icount" and its machines with several CPUs read as wall time.
bool Results::virtual_time(const Config& config) const {
  if (!virtual_time()) return false;
  if (config.cpus() == 1) return true;
  const auto it = run.find("smp_icount");
  return it != run.end() && it->is_boolean() && it->get<bool>();
}

bool Results::mixed_time() const {
  return virtual_time() &&
         std::any_of(configs.begin(), configs.end(), [this](const Config& c) { return !virtual_time(c); });
}

void mark_warmups(std::vector<Sample>& boot_records) {
  std::set<std::string> later;
  for (auto it = boot_records.rbegin(); it != boot_records.rend(); ++it) {
    const OJson& r = it->record;
    if (!r.contains("bench") || !r["bench"].is_string()) continue;
    const std::string key = r["bench"].get<std::string>() + "\n" + params_text(record_params(r));
    it->warmup = !later.insert(key).second;
  }
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

void aggregate(Results& results) {
  struct Key {
    size_t bench_order;
    size_t params_order;
    size_t config_order;
    bool operator<(const Key& o) const {
      return std::tie(bench_order, params_order, config_order) < std::tie(o.bench_order, o.params_order, o.config_order);
    }
  };
  std::map<std::string, size_t> bench_seen, params_seen, config_order;
  for (size_t i = 0; i < results.configs.size(); ++i) config_order[results.configs[i].id()] = i;
  auto bench_index = [&](const std::string& name) {
    const auto& table = benchmarks();
    for (size_t i = 0; i < table.size(); ++i)
      if (table[i].name == name) return i;
    return bench_seen.emplace(name, table.size() + bench_seen.size()).first->second;
  };
  std::map<Key, std::vector<const Sample*>> groups;
  for (const auto& sample : results.records) {
    const OJson& r = sample.record;
    if (sample.warmup || !r.contains("bench") || !r["bench"].is_string()) continue;
    const std::string bench = r["bench"];
    const std::string ptext = bench + "\n" + params_text(record_params(r));
    const size_t p = params_seen.emplace(ptext, params_seen.size()).first->second;
    size_t c = config_order.count(sample.config) ? config_order[sample.config] : config_order.size();
    if (!config_order.count(sample.config)) {
      // A record of a configuration the file does not list: list it.
      results.configs.push_back(config_from_id(sample.config));
      config_order[sample.config] = c;
    }
    groups[{bench_index(bench), p, c}].push_back(&sample);
  }

  results.rows.clear();
  for (const auto& [key, samples] : groups) {
    Row row;
    const OJson& first = samples.front()->record;
    row.bench = first["bench"];
    row.params = record_params(first);
    row.config = samples.front()->config;
    row.samples = static_cast<int>(samples.size());
    std::vector<double> medians, per_ops;
    std::map<std::string, std::vector<double>> others;
    row.min = row.per_op_min = INFINITY;
    row.max = row.per_op_max = -INFINITY;
    for (const Sample* s : samples) {
      const OJson& r = s->record;
      const double ops = std::max(1.0, number(r, "ops", 1));
      const double med = number(r, "median");
      medians.push_back(med);
      per_ops.push_back(r.contains("per_op") ? number(r, "per_op") : med / ops);
      Row::BootValue boot{s->rep, per_ops.back(), {}};
      for (auto it = r.begin(); it != r.end(); ++it)
        if (it.value().is_number()) boot.fields[it.key()] = it.value().get<double>();
      row.boots.push_back(std::move(boot));
      row.min = std::min(row.min, number(r, "min", med));
      row.max = std::max(row.max, number(r, "max", med));
      row.per_op_min = std::min(row.per_op_min, number(r, "min", med) / ops);
      row.per_op_max = std::max(row.per_op_max, number(r, "max", med) / ops);
      row.ops = ops;
      row.reps += static_cast<int>(number(r, "reps", 1));
      if (r.contains("pass") && r["pass"].is_boolean() && !r["pass"].get<bool>()) {
        row.pass = false;
        row.errors.push_back(r.contains("error") && r["error"].is_string() ? r["error"].get<std::string>()
                                                                             : std::string("failed"));
      }
      const Params params = record_params(r);
      for (auto it = r.begin(); it != r.end(); ++it) {
        if (!it.value().is_number() || is_time_field(it.key())) continue;
        if (std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == it.key(); })) continue;
        others[it.key()].push_back(it.value().get<double>());
      }
    }
    row.median = median_of(medians);
    row.per_op = median_of(per_ops);
    for (auto& [name, values] : others) {
      if (is_min_field(name))
        row.fields[name] = *std::min_element(values.begin(), values.end());
      else if (is_max_field(name))
        row.fields[name] = *std::max_element(values.begin(), values.end());
      else
        row.fields[name] = median_of(values);
    }
    results.rows.push_back(std::move(row));
  }
}

OJson to_json(const Results& results) {
  OJson out = OJson::object();
  out["format"] = "pvk-bench-results";
  out["version"] = 1;
  out["run"] = results.run;
  OJson configs = OJson::array();
  for (const auto& c : results.configs) {
    OJson switches = OJson::object();
    for (const auto& [k, v] : c.switches) switches[k] = v;
    configs.push_back({{"id", c.id()}, {"label", c.label()}, {"platform", c.platform}, {"switches", switches},
                       {"cmdline", c.cmdline()}});
  }
  out["configurations"] = configs;
  OJson boots = OJson::array();
  for (const auto& b : results.boots) {
    boots.push_back({{"configuration", b.config}, {"rep", b.rep}, {"part", b.part}, {"group", b.group},
                     {"cmdline", b.cmdline}, {"memory", b.machine.memory}, {"dom0_memory", b.machine.dom0_memory}, {"cpus", b.machine.cpus},
                     {"ran", b.ran}, {"pass", b.pass}, {"reason", b.reason}, {"elapsed_s", b.elapsed_s},
                     {"benchmarks", b.benchmarks}, {"failed", b.failed}, {"trouble", b.trouble}, {"log", b.log},
                     {"load_before", b.load_before}, {"load_after", b.load_after}, {"host_busy", b.host_busy}});
  }
  out["boots"] = boots;
  OJson rows = OJson::array();
  for (const auto& r : results.rows) {
    OJson fields = OJson::object();
    for (const auto& [k, v] : r.fields) fields[k] = v;
    // Each boot's per-op figure, so a file without records still has what
    // the ratio statistics need.
    OJson per_boot = OJson::array();
    for (const auto& b : r.boots) per_boot.push_back({{"rep", b.rep}, {"per_op", b.per_op}});
    rows.push_back({{"bench", r.bench}, {"params", params_json(r.params)}, {"configuration", r.config},
                    {"samples", r.samples}, {"reps", r.reps}, {"pass", r.pass}, {"errors", r.errors},
                    {"unit", "ns"}, {"median", r.median}, {"min", r.min}, {"max", r.max}, {"ops", r.ops},
                    {"per_op", r.per_op}, {"per_op_min", r.per_op_min}, {"per_op_max", r.per_op_max},
                    {"per_boot", per_boot}, {"fields", fields}});
    // A model's figure, labelled as one (projection.hpp).
    if (!r.projected.empty()) {
      OJson projected = OJson::object();
      for (const auto& [profile, ns] : r.projected) projected[profile] = {{"per_op", ns}, {"model", true}};
      rows.back()["projected"] = projected;
    }
  }
  out["results"] = rows;
  if (!results.cost_model.empty()) out["cost_model"] = results.cost_model;
  OJson records = OJson::array();
  for (const auto& s : results.records) {
    records.push_back({{"configuration", s.config}, {"rep", s.rep}, {"part", s.part}, {"record", s.record}});
    if (s.warmup) records.back()["warmup"] = true;
  }
  out["records"] = records;
  return out;
}

Results results_from_json(const OJson& json) {
  if (!json.is_object() || json.value("format", "") != "pvk-bench-results")
    throw std::runtime_error("not a pvk bench results file (no \"format\":\"pvk-bench-results\")");
  Results results;
  if (json.contains("run")) results.run = json["run"];
  if (const auto cm = json.find("cost_model"); cm != json.end() && cm->is_array()) results.cost_model = *cm;
  for (const auto& c : array_member(json, "configurations")) results.configs.push_back(config_from_id(c.at("id").get<std::string>()));
  for (const auto& b : array_member(json, "boots")) {
    BootRecord boot;
    boot.config = b.value("configuration", "");
    boot.rep = b.value("rep", 1);
    boot.part = b.value("part", 0);
    boot.group = b.value("group", "");
    boot.cmdline = b.value("cmdline", "");
    boot.machine = {b.value("memory", ""), b.value("dom0_memory", ""), b.value("cpus", 1u)};
    boot.ran = b.value("ran", false);
    boot.pass = b.value("pass", false);
    boot.reason = b.value("reason", "");
    boot.elapsed_s = b.value("elapsed_s", 0.0);
    boot.benchmarks = b.value("benchmarks", 0);
    boot.failed = b.value("failed", 0);
    boot.trouble = b.value("trouble", std::vector<std::string>{});
    boot.log = b.value("log", "");
    boot.load_before = b.value("load_before", -1.0);
    boot.load_after = b.value("load_after", -1.0);
    boot.host_busy = b.value("host_busy", -1.0);
    results.boots.push_back(std::move(boot));
  }
  for (const auto& s : array_member(json, "records"))
    results.records.push_back({s.value("configuration", ""), s.value("rep", 1), s.value("part", 0),
                               s.contains("record") ? s["record"] : OJson::object(), s.value("warmup", false)});
  for (const auto& r : array_member(json, "results")) {
    Row row;
    row.bench = r.at("bench").get<std::string>();
    if (const auto p = r.find("params"); p != r.end()) row.params = params_from_json(*p);
    row.config = r.at("configuration").get<std::string>();
    row.samples = r.value("samples", 1);
    row.reps = r.value("reps", 0);
    row.pass = r.value("pass", true);
    row.errors = r.value("errors", std::vector<std::string>{});
    row.median = r.value("median", 0.0);
    row.min = r.value("min", 0.0);
    row.max = r.value("max", 0.0);
    row.ops = r.value("ops", 1.0);
    row.per_op = r.value("per_op", 0.0);
    row.per_op_min = r.value("per_op_min", 0.0);
    row.per_op_max = r.value("per_op_max", 0.0);
    if (const auto f = r.find("fields"); f != r.end() && f->is_object())
      for (auto it = f->begin(); it != f->end(); ++it)
        if (it->is_number()) row.fields[it.key()] = it->get<double>();
    if (const auto pr = r.find("projected"); pr != r.end() && pr->is_object())
      for (auto it = pr->begin(); it != pr->end(); ++it)
        if (it->is_object() && it->contains("per_op") && (*it)["per_op"].is_number())
          row.projected[it.key()] = (*it)["per_op"].get<double>();
    for (const auto& b : array_member(r, "per_boot"))
      if (b.is_object()) row.boots.push_back({b.value("rep", 1), b.value("per_op", 0.0), {}});
    if (!results.find_config(row.config)) results.configs.push_back(config_from_id(row.config));
    results.rows.push_back(std::move(row));
  }
  // Rows again from the records when the file has them: the same rows, with
  // each boot's fields, which the statistics of cross-benchmark and field
  // ratios need (and a file written by hand or cut short gets its rows).
  if (!results.records.empty()) aggregate(results);
  return results;
}

std::string to_csv(const Results& results) {
  std::vector<std::string> param_keys, switch_keys, other_fields;
  auto add_unique = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  std::set<std::string> counters;
  for (auto c : counter_names()) counters.insert(std::string(c));
  for (const auto& row : results.rows) {
    for (const auto& p : row.params) add_unique(param_keys, p.first);
    for (const auto& [k, v] : row.fields)
      if (!counters.count(k)) add_unique(other_fields, k);
  }
  std::sort(other_fields.begin(), other_fields.end());
  for (const auto& c : results.configs)
    for (const auto& s : c.switches) add_unique(switch_keys, s.first);

  std::vector<std::string> header{"bench", "params"};
  for (const auto& k : param_keys) header.push_back("param_" + k);
  header.insert(header.end(), {"configuration", "platform"});
  for (const auto& k : switch_keys) header.push_back(k);
  header.insert(header.end(), {"samples", "reps", "pass", "unit", "ops", "median", "min", "max", "per_op",
                               "per_op_min", "per_op_max"});
  // Projected time, one column per cost profile (a model: projection.hpp).
  std::vector<std::string> models;
  for (const auto& m : results.cost_model)
    if (m.is_object() && m.contains("name") && m["name"].is_string()) models.push_back(m["name"].get<std::string>());
  for (const auto& m : models) header.push_back("model_" + m + "_per_op");
  for (auto c : counter_names()) header.emplace_back(c);
  for (const auto& f : other_fields) header.push_back(f);

  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csv_cell(cells[i]);
    }
    out += '\n';
  };
  emit(header);
  for (const auto& row : results.rows) {
    std::vector<std::string> cells{row.bench, params_text(row.params)};
    for (const auto& k : param_keys) {
      auto it = std::find_if(row.params.begin(), row.params.end(), [&](const auto& p) { return p.first == k; });
      cells.push_back(it == row.params.end() ? "" : json_scalar_text(it->second));
    }
    const Config* config = results.find_config(row.config);
    cells.push_back(row.config);
    cells.push_back(config ? config->platform : "");
    for (const auto& k : switch_keys) cells.push_back(config ? config->get(k).value_or("") : "");
    cells.insert(cells.end(), {std::to_string(row.samples), std::to_string(row.reps), row.pass ? "true" : "false",
                               "ns", number_text(row.ops), number_text(row.median), number_text(row.min),
                               number_text(row.max), number_text(row.per_op), number_text(row.per_op_min),
                               number_text(row.per_op_max)});
    for (const auto& m : models) {
      const auto it = row.projected.find(m);
      cells.push_back(it == row.projected.end() ? "" : number_text(it->second));
    }
    for (auto c : counter_names()) {
      auto v = row.field(c);
      cells.push_back(v ? number_text(*v) : "");
    }
    for (const auto& f : other_fields) {
      auto v = row.field(f);
      cells.push_back(v ? number_text(*v) : "");
    }
    emit(cells);
  }
  return out;
}

}  // namespace pvk::bench
