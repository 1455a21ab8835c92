#include "pvk/bench/report.hpp"

#include "pvk/bench/break_even.hpp"
#include "pvk/bench/format.hpp"
#include "pvk/bench/ptshare_section.hpp"
#include "pvk/bench/scaling.hpp"
#include "pvk/bench/targets.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/matrix.hpp"
#include "pvk/bench/seeds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace pvk::bench {
namespace {

std::string seed_of(std::string_view bench) {
  const BenchInfo* b = find_benchmark(bench);
  if (!b || !b->suite.starts_with("seed")) return "";
  return fmt::format("seed {}", b->suite.substr(4));
}

std::string md_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The parameter keys of a benchmark's rows, in record order.
std::vector<std::string> param_keys(const std::vector<const Row*>& rows) {
  std::vector<std::string> keys;
  for (const Row* r : rows)
    for (const auto& p : r->params)
      if (std::find(keys.begin(), keys.end(), p.first) == keys.end()) keys.push_back(p.first);
  return keys;
}

std::string param_value(const Row& row, const std::string& key) {
  for (const auto& [k, v] : row.params)
    if (k == key) return v.is_string() ? v.get<std::string>() : v.dump();
  return "";
}

std::string minutes(double seconds) {
  const long s = std::lround(seconds);
  if (s < 60) return fmt::format("{} s", s);
  return fmt::format("{} min {:02} s", s / 60, s % 60);
}

}  // namespace

std::string targets_section(const std::vector<Ratio>& ratios) {
  std::string md = "\n## Targets\n\nThe goals of the benchmark harness, table sharing, pvops costs and unhook-and-auto, from this run's ratios (base configurations; a goal "
                   "per backend where it says so). With several boots a side, the 95 % interval: met or missed when "
                   "all of it lies on one side of the goal; in virtual time one boot a side is exact. A goal counts "
                   "when it holds in virtual time (the default run) and in wall time (`--wall`; README.md: `pvk "
                   "compare` of the two runs puts them side by side).\n\n";
  md += "| goal | measured | |\n|---|---:|---|\n";
  for (const auto& line : evaluate_targets(ratios))
    md += fmt::format("| {} | {} | {} |\n", line.goal, line.measured, line.verdict);
  return md;
}

namespace {

// Unhook and auto: the break-even lines, against pages and against density.
std::string fork_break_even(const Results& results) {
  std::string pages_md, density_md;
  auto label = [&](const std::string& id) {
    const Config* c = results.find_config(id);
    return c ? c->label() : id;
  };
  for (const auto& be : fork_break_evens(results)) {
    const std::string an = label(be.a), bn = label(be.b);
    std::string line;
    for (const auto& c : be.crosses) {
      if (!line.empty()) line += "; ";
      if (be.density)
        line += fmt::format("cross near {} of entries, stride ≈ {:.0f} ({} faster at lower density)", percent(c.at),
                            1 / c.at, label(c.faster_below));
      else
        line += fmt::format("cross near {:.0f} pages ({} faster below)", c.at, label(c.faster_below));
    }
    if (line.empty()) {
      if (be.density)
        line = fmt::format("{} faster at every density measured ({}–{})", label(be.faster), percent(be.hi),
                           percent(be.lo));
      else
        line = fmt::format("{} faster at every size measured ({:.0f}–{:.0f} pages)", label(be.faster), be.lo, be.hi);
    }
    if (be.density)
      density_md += fmt::format("- {} vs {} at {:.0f} pages: {}\n", an, bn, be.pages, line);
    else
      pages_md += fmt::format("- {} vs {}: {}\n", an, bn, line);
  }
  std::string out;
  if (!pages_md.empty()) out += "\nBreak-even against dirty pages (per-fork medians, every page dirtied):\n\n" + pages_md;
  if (!density_md.empty())
    out += "\nBreak-even against density (per-fork medians at one span; density = dirtied share of each L1 table's "
           "entries, 1/stride):\n\n" +
           density_md;
  return out;
}

// The sparse fork: ms per fork (and fork + exit + rewrite) against density, one
// table per span with more than one stride; a column per configuration.
std::string fork_density_tables(const Results& results) {
  std::map<double, std::set<double>> strides;  // span -> strides
  for (const auto& r : results.rows)
    if (r.bench == "fork_dirty") strides[fork_pages(r)].insert(fork_stride(r));
  std::string md;
  for (const auto& [pages, set] : strides) {
    if (set.size() < 2) continue;
    std::vector<std::string> ids;
    for (const auto& c : results.configs)
      if (std::any_of(results.rows.begin(), results.rows.end(), [&](const Row& r) {
            return r.bench == "fork_dirty" && r.config == c.id() && fork_pages(r) == pages && !dense(r);
          }))
        ids.push_back(c.id());
    if (ids.empty()) continue;
    auto find = [&](const std::string& id, double stride) -> const Row* {
      for (const auto& r : results.rows)
        if (r.bench == "fork_dirty" && r.config == id && fork_pages(r) == pages && fork_stride(r) == stride) return &r;
      return nullptr;
    };
    for (const bool total : {false, true}) {
      md += fmt::format("\n**fork_dirty at {:.0f} pages against density: {}** (medians; sparse fork)\n\n",
                        pages, total ? "fork + child exit + parent rewrite" : "per fork (parent side)");
      std::vector<std::string> head{"stride", "density", "dirtied pages"};
      std::string rule = "|---:|---:|---:|";
      for (const auto& id : ids) {
        const Config* c = results.find_config(id);
        head.push_back(c ? c->label() : id);
        rule += "---:|";
      }
      md += row_line(head) + rule + "\n";
      for (const double stride : set) {
        std::vector<std::string> cells{fmt::format("{:.0f}", stride), percent(1 / stride),
                                       fmt::format("{:.0f}", std::ceil(pages / stride))};
        for (const auto& id : ids) {
          const Row* r = find(id, stride);
          std::optional<double> v;
          if (r) v = total ? r->field("total_median") : std::optional<double>(r->per_op);
          cells.push_back(v ? format_ns(*v) + (r->pass ? "" : " ⚠") : "—");
        }
        md += row_line(cells);
      }
    }
  }
  return md;
}

}  // namespace

std::string time_mode(const Results& results) {
  if (results.virtual_time() && !results.configs.empty() &&
      std::all_of(results.configs.begin(), results.configs.end(),
                  [&](const Config& c) { return !results.virtual_time(c); }))
    return "wall time (every machine has several CPUs)";
  if (results.mixed_time()) return "virtual time (-icount); machines with several CPUs in wall time";
  return results.virtual_time() ? "virtual time (-icount)" : "wall time";
}

namespace {

// The steps of summary_markdown, one section each.

// When, what, how many boots and whether they passed.
std::string header_section(const Results& results) {
  std::string md = "# pvk bench\n\n";
  const auto& run = results.run;
  auto run_str = [&](const char* key) { return run.contains(key) && run[key].is_string() ? run[key].get<std::string>() : std::string(); };

  size_t failed_boots = 0;
  for (const auto& b : results.boots) failed_boots += !b.pass;
  if (!run_str("started").empty()) md += fmt::format("- started {}", run_str("started"));
  if (run.contains("wall_s")) md += fmt::format(", wall time {}", minutes(run["wall_s"].get<double>()));
  if (run.contains("jobs")) md += fmt::format(", {} boots at a time", run["jobs"].get<int>());
  md += "\n";
  if (!run_str("commit").empty()) md += fmt::format("- pvk {} ({})\n", run_str("commit"), run_str("kernel"));
  if (!run_str("command").empty()) md += fmt::format("- command: `{}`\n", run_str("command"));
  md += fmt::format("- {} configurations, {} boots; QEMU TCG{}\n", results.configs.size(), results.boots.size(),
                    run_str("icount").empty() ? "" : fmt::format(", -icount {} (deterministic virtual time)", run_str("icount")));
  // The host's load around the boots how much noise to expect.
  double load_lo = INFINITY, load_hi = -INFINITY, busy_sum = 0;
  int busy_n = 0;
  for (const auto& b : results.boots) {
    for (const double l : {b.load_before, b.load_after})
      if (l >= 0) {
        load_lo = std::min(load_lo, l);
        load_hi = std::max(load_hi, l);
      }
    if (b.host_busy >= 0) {
      busy_sum += b.host_busy;
      ++busy_n;
    }
  }
  if (load_lo <= load_hi)
    md += fmt::format("- host load average {:.1f}–{:.1f} around the boots{}; {} schedule\n", load_lo, load_hi,
                      busy_n ? fmt::format(", host CPU {:.0f} % busy during them", 100 * busy_sum / busy_n) : "",
                      paired_in_time(results) ? "paired" : "unpaired");
  if (failed_boots == 0)
    md += fmt::format("- **all {} boots passed**\n", results.boots.size());
  else
    md += fmt::format("- **{} of {} boots FAILED** (below); the other results are complete\n", failed_boots, results.boots.size());
  md += "\nTimes are taken inside the guest (CLOCK_MONOTONIC from the TSC) on an emulated CPU: compare the "
        "ratios measured in one run, not the absolute values with hardware.\n";
  return md;
}

// The failed boots, with their reasons and console logs.
std::string failures_section(const Results& results) {
  std::string md;
  md += "\n## Failures\n\n";
  md += row_line({"configuration", "boot", "reason", "console log"});
  md += "|---|---|---|---|\n";
  for (const auto& b : results.boots) {
    if (b.pass) continue;
    const Config* c = results.find_config(b.config);
    std::string reason = md_escape(b.reason);
    for (const auto& t : b.trouble) reason += "<br>" + md_escape(t);
    md += row_line({c ? c->label() : b.config, fmt::format("rep {} ({})", b.rep, b.group), reason,
                    b.log.empty() ? "" : "`" + b.log + "`"});
  }
  return md;
}

// Every configuration: its command line, boots and time.
std::string configurations_section(const Results& results) {
  std::string md;
  md += "\n## Configurations\n\n";
  md += row_line({"configuration", "kernel command line (plus bench=)", "boots", "passed", "time in its boots"});
  md += "|---|---|---:|---:|---:|\n";
  for (const auto& c : results.configs) {
    int boots = 0, passed = 0;
    double seconds = 0;
    for (const auto& b : results.boots)
      if (b.config == c.id()) {
        ++boots;
        passed += b.pass;
        seconds += b.elapsed_s;
      }
    md += row_line({c.label(), "`" + (c.cmdline().empty() ? std::string("(none)") : c.cmdline()) + "`",
                    std::to_string(boots), std::to_string(passed), minutes(seconds)});
  }
  return md;
}

// One table per benchmark: per-op medians, spreads, extra columns, key counters.
std::string benchmarks_section(const Results& results) {
  std::string md;
  md += "\n## Benchmarks\n\n"
        "Per op: the median over the boots of each boot's median rep, divided by the rep's operations; "
        "min–max: the fastest and slowest rep of any boot. Counters are per operation, from the median rep, and "
        "count everything the kernel did meanwhile (— : not reported).\n";
  // Projected time (projection.hpp): a column per profile, labelled a model.
  std::vector<std::string> models;
  for (const auto& m : results.cost_model)
    if (m.is_object() && m.contains("name") && m["name"].is_string()) models.push_back(m["name"].get<std::string>());
  if (!models.empty())
    md += "The `model:` columns are projected time, a model (the \"Projected time\" section): the per-op figure "
          "re-priced with a cost profile.\n";
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Row*>> by_bench;
  for (const auto& row : results.rows) {
    if (!by_bench.count(row.bench)) order.push_back(row.bench);
    by_bench[row.bench].push_back(&row);
  }
  for (const auto& bench : order) {
    const auto& rows = by_bench[bench];
    const BenchInfo* info = find_benchmark(bench);
    const std::string seed = seed_of(bench);
    md += fmt::format("\n### {}{}{}\n\n", bench, info ? " — " + std::string(info->what) : "",
                      seed.empty() ? "" : " (" + seed + ")");
    const std::vector<std::string> keys = param_keys(rows);
    const auto extras = extra_columns(bench);
    std::vector<std::string> head = keys;
    head.insert(head.end(), {"configuration", "per op", "min–max"});
    for (const auto& m : models) head.push_back("model: " + m);
    for (const auto& e : extras) head.emplace_back(e.heading);
    for (auto c : key_counters()) head.emplace_back(c);
    md += row_line(head);
    std::string rule = "|";
    for (size_t i = 0; i < keys.size(); ++i) rule += "---:|";
    rule += "---|---:|---|";
    for (size_t i = 0; i < models.size() + extras.size() + key_counters().size(); ++i) rule += "---:|";
    md += rule + "\n";
    for (const Row* r : rows) {
      std::vector<std::string> cells;
      for (const auto& k : keys) cells.push_back(param_value(*r, k));
      const Config* c = results.find_config(r->config);
      std::string label = c ? c->label() : r->config;
      std::string time = format_ns(r->per_op);
      if (!r->pass) time += " ⚠ " + md_escape(r->errors.empty() ? "failed" : r->errors.front());
      cells.insert(cells.end(), {label, time, format_ns(r->per_op_min) + "–" + format_ns(r->per_op_max)});
      for (const auto& m : models) {
        const auto it = r->projected.find(m);
        cells.push_back(it == r->projected.end() ? "—" : format_ns(it->second));
      }
      for (const auto& e : extras) {
        const auto v = r->field(e.field);
        if (!v)
          cells.emplace_back("—");
        else if (e.kind == ExtraColumn::Kind::time)
          cells.push_back(format_ns(*v));
        else if (e.kind == ExtraColumn::Kind::counter)
          cells.push_back(format_count(*v / r->ops));
        else
          cells.push_back(format_count(*v));
      }
      for (auto name : key_counters()) {
        const auto v = r->field(name);
        cells.push_back(v ? format_count(*v / r->ops) : "—");
      }
      md += row_line(cells);
    }
    if (bench == "fork_dirty") md += fork_density_tables(results) + fork_break_even(results);
  }
  return md;
}

// One table per ratio spec; the specs no pair of configurations measured.
std::string ratios_section(const Results& results, const std::vector<RatioSpec>& specs,
                           const std::vector<Ratio>& ratios) {
  std::string md;
  const std::string mode = time_mode(results);
  md += fmt::format(
      "\n## Ratios\n\n"
      "Per-op median ÷ per-op median of two configurations that differ only in what the ratio is about (or, "
      "across benchmarks, of two benchmarks in one configuration), from {}. Below 1: the first is faster. In "
      "brackets the 95 % confidence interval of the ratio over the boots' own medians, then p, the probability "
      "of so large a difference if there were none (t test on log times, {} by rep: see docs/benchmarks.md); `~`: "
      "the interval contains 1, no difference shown; noisy: the interval reaches beyond ±5 %; (1 boot): a side "
      "has one boot, no interval; exact: virtual time with one boot a side, which a rerun repeats exactly (no "
      "interval needed; `~ (1.00 exact)` only for identical figures).\n",
      mode, paired_in_time(results) ? "boots paired" : "boots unpaired");
  std::vector<std::string> empty;
  for (const auto& spec : specs) {
    std::vector<const Ratio*> mine;
    for (const auto& r : ratios)
      if (r.spec == spec.name) mine.push_back(&r);
    if (mine.empty()) {
      empty.push_back(fmt::format("{} ({} / {})", spec.name, spec.numerator.text(), spec.denominator.text()));
      continue;
    }
    const std::string across = spec.numerator_bench.empty()
                                   ? ""
                                   : fmt::format(" ({} over {})", spec.numerator_bench, spec.denominator_bench);
    if (!spec.vary.empty())  // across a parameter, within each configuration (the SMP ratios)
      md += fmt::format("\n### {} — {}\n\n{}: `{}≠{}` over `{}={}`, the other parameters equal.\n\n", spec.name,
                        mode, spec.about, spec.vary, spec.vary_base, spec.vary, spec.vary_base);
    else
      md += fmt::format("\n### {} — {}\n\n{}: `{}` over `{}`{}.\n\n", spec.name, mode, spec.about,
                        spec.numerator.text(), spec.denominator.text(), across);
    std::vector<std::string> pairs;
    for (const Ratio* r : mine)
      if (std::find(pairs.begin(), pairs.end(), r->pair) == pairs.end()) pairs.push_back(r->pair);
    std::vector<std::string> head{"benchmark", "parameters"};
    for (const auto& p : pairs) head.push_back(p.empty() ? "defaults" : p);
    md += row_line(head);
    std::string rule = "|---|---|";
    for (size_t i = 0; i < pairs.size(); ++i) rule += "---:|";
    md += rule + "\n";
    std::vector<std::string> lines_order;
    std::map<std::string, std::vector<std::string>> lines;
    for (const Ratio* r : mine) {
      const std::string key = r->bench + "\n" + params_text(r->params);
      if (!lines.count(key)) {
        lines_order.push_back(key);
        lines[key] = std::vector<std::string>(pairs.size() + 2);
        lines[key][0] = r->bench;
        lines[key][1] = params_text(r->params);
      }
      const size_t col = std::find(pairs.begin(), pairs.end(), r->pair) - pairs.begin();
      const std::string cell = ratio_cell(*r);
      auto& slot = lines[key][col + 2];
      slot = slot.empty() ? cell : slot + "<br>" + cell;
    }
    for (const auto& key : lines_order) md += row_line(lines[key]);
  }
  if (!empty.empty()) {
    md += "\nNot measured in this run (no pair of configurations): ";
    for (size_t i = 0; i < empty.size(); ++i) md += (i ? "; " : "") + empty[i];
    md += ".\n";
  }
  return md;
}

}  // namespace

std::string summary_markdown(const Results& results, const std::vector<RatioSpec>& specs,
                             const std::vector<Ratio>& ratios) {
  std::string md = header_section(results);
  size_t failed_boots = 0;
  for (const auto& b : results.boots) failed_boots += !b.pass;
  if (failed_boots) md += failures_section(results);
  md += configurations_section(results);
  md += benchmarks_section(results);
  md += ptshare_section(results);
  md += scaling_section(results);
  md += targets_section(ratios);
  md += ratios_section(results, specs, ratios);
  md += seeds_section(results, ratios);
  return md;
}

}  // namespace pvk::bench
