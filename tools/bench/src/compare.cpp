#include "pvk/bench/compare.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string_view>

namespace pvk::bench {
namespace {

// Platform and non-default switches: what makes two configurations the same.
std::string normal_id(const Results& results, const std::string& id) {
  const Config* c = results.find_config(id);
  Config config = c ? *c : config_from_id(id);
  Switches kept;
  for (const auto& s : config.switches)
    if (switch_default(s.first) != std::optional<std::string_view>(s.second)) kept.push_back(s);
  config.switches = kept;
  return config.id();
}

// The parameters that make two rows the same: fork_dirty's stride=1 is
// what a record from before the sparse fork (no stride) measured.
std::string params_key(const std::string& bench, const Params& params) {
  Params kept;
  for (const auto& p : params)
    if (!(bench == "fork_dirty" && p.first == "stride" && p.second == 1)) kept.push_back(p);
  return params_text(kept);
}
std::string params_key(const Row& row) { return params_key(row.bench, row.params); }

std::string label(const Results& results, const std::string& id) {
  const Config* c = results.find_config(id);
  return c ? c->label() : id;
}

}  // namespace

Comparison compare_results(const Results& old_results, const Results& new_results) {
  Comparison out;
  std::map<std::string, const Row*> old_rows;
  for (const auto& r : old_results.rows)
    old_rows[r.bench + "\n" + params_key(r) + "\n" + normal_id(old_results, r.config)] = &r;
  std::map<std::string, bool> matched;
  for (const auto& r : new_results.rows) {
    const std::string key = r.bench + "\n" + params_key(r) + "\n" + normal_id(new_results, r.config);
    const auto it = old_rows.find(key);
    const std::string what = fmt::format("{} {} @ {}", r.bench, params_text(r.params), label(new_results, r.config));
    if (it == old_rows.end()) {
      out.only_new.push_back(what);
      continue;
    }
    matched[key] = true;
    CompareLine line{r.bench, params_text(r.params), label(new_results, r.config), it->second, &r};
    const Row& o = *it->second;
    line.ratio = o.per_op > 0 ? r.per_op / o.per_op : 0;
    std::vector<double> old_values, new_values;
    for (const auto& [rep, v] : boot_values(o, "")) old_values.push_back(v);
    for (const auto& [rep, v] : boot_values(r, "")) new_values.push_back(v);
    // Two virtual-time runs of one kernel repeat each other's boots exactly
    // (a machine with several CPUs runs in wall time even in those).
    const Config* old_config = old_results.find_config(o.config);
    const Config* new_config = new_results.find_config(r.config);
    const Timing timing = old_config && new_config && old_results.virtual_time(*old_config) &&
                                  new_results.virtual_time(*new_config)
                              ? Timing::Virtual
                              : Timing::Wall;
    line.stats = ratio_stats(new_values, old_values, false, timing);
    if (line.stats.estimated) {
      if (!line.stats.same()) line.change = line.stats.center > 1 ? +1 : -1;
    } else {
      if (r.per_op > o.per_op_max) line.change = +1;
      if (r.per_op < o.per_op_min) line.change = -1;
    }
    out.slower += line.change > 0;
    out.faster += line.change < 0;
    out.lines.push_back(line);
  }
  for (const auto& r : old_results.rows) {
    const std::string key = r.bench + "\n" + params_key(r) + "\n" + normal_id(old_results, r.config);
    if (!matched.count(key))
      out.only_old.push_back(fmt::format("{} {} @ {}", r.bench, params_text(r.params), label(old_results, r.config)));
  }
  out.old_mode = time_mode(old_results);
  out.new_mode = time_mode(new_results);
  const auto old_targets = evaluate_targets(compute_ratios(old_results, builtin_ratios()));
  const auto new_targets = evaluate_targets(compute_ratios(new_results, builtin_ratios()));
  auto measured = [](const TargetLine& t) { return t.measured != "—"; };
  for (const auto& n : new_targets) {
    const auto o = std::find_if(old_targets.begin(), old_targets.end(), [&](const TargetLine& t) { return t.goal == n.goal; });
    const bool old_has = o != old_targets.end() && measured(*o);
    if (!old_has && !measured(n)) continue;
    out.targets.push_back({n.goal, old_has ? o->measured : "—", old_has ? o->verdict : "not measured", n.measured,
                           measured(n) ? n.verdict : "not measured"});
  }
  for (const auto& o : old_targets)
    if (measured(o) && std::none_of(new_targets.begin(), new_targets.end(), [&](const TargetLine& t) { return t.goal == o.goal; }))
      out.targets.push_back({o.goal, o.measured, o.verdict, "—", "not measured"});
  return out;
}

Results load_results(const std::filesystem::path& path) {
  const std::filesystem::path file =
      std::filesystem::is_directory(path) ? path / "results.json" : path;
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", file.string()));
  OJson json;
  try {
    json = OJson::parse(in);
  } catch (const OJson::parse_error& e) {
    throw std::runtime_error(fmt::format("{} is not JSON ({})", file.string(), e.what()));
  }
  try {
    return results_from_json(json);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", file.string(), e.what()));
  }
}

std::string compare_markdown(const Comparison& c, const std::string& old_name, const std::string& new_name) {
  std::string md = fmt::format("# pvk compare\n\n- old: `{}`\n- new: `{}`\n", old_name, new_name);
  md += fmt::format("- {} rows in both; {} slower and {} faster, shown by the interval (or, with one boot on a side, "
                    "beyond the old run's min–max spread)\n\n",
                    c.lines.size(), c.slower, c.faster);
  md += "Per-op medians. delta: new÷old − 1, `~` when the 95 % interval of new÷old over the boots holds 1 (Welch's t "
        "on log times; p: the chance of so large a difference if there were none); noisy: the interval reaches "
        "beyond ±5 %. ▲ / ▼: slower / faster.\n\n";
  md += "| benchmark | parameters | configuration | old | old min–max | new | new÷old | delta | interval | p | |\n";
  md += "|---|---|---|---:|---|---:|---:|---:|---|---:|---|\n";
  for (const auto& l : c.lines) {
    const Row& o = *l.old_row;
    const Row& n = *l.new_row;
    const RatioStats& s = l.stats;
    std::string delta = "—", interval = "—", p = "—";
    if (s.estimated) {
      delta = s.same() ? "~" : fmt::format("{:+.1f} %", (s.center - 1) * 100);
      interval = fmt::format("{}–{}{}", format_ratio(s.low), format_ratio(s.high), s.noisy() ? " noisy" : "");
      p = s.p < 0.001 ? "<0.001" : fmt::format("{:.3f}", s.p);
    } else {
      delta = fmt::format("{:+.1f} % (1 boot)", (l.ratio - 1) * 100);
    }
    md += fmt::format("| {} | {} | {} | {} | {}–{} | {} | {} | {} | {} | {} | {} |\n", l.bench, l.params, l.config,
                      format_ns(o.per_op), format_ns(o.per_op_min), format_ns(o.per_op_max), format_ns(n.per_op),
                      // The interval's center when there is one: figure and interval from one estimate.
                      format_ratio(s.estimated ? s.center : l.ratio), delta, interval, p,
                      l.change > 0 ? "▲ slower" : l.change < 0 ? "▼ faster" : "");
  }
  if (!c.targets.empty()) {
    md += fmt::format("\n## Targets in both runs\n\nEach goal as each run judges it (old: {}; new: {}). A goal counts "
                      "when both agree it is met{}.\n\n",
                      c.old_mode, c.new_mode,
                      c.old_mode == c.new_mode ? ""
                                               : "; where wall and virtual time disagree, wall time includes what TCG "
                                                 "spends on traps and TLB flushes, which virtual time (instructions) "
                                                 "does not count");
    md += "| goal | old | | new | | |\n|---|---:|---|---:|---|---|\n";
    for (const auto& t : c.targets) {
      // The verdict's first word: "met (1 boot in wall time: no interval)" is met.
      auto word = [](const std::string& v) { return v.substr(0, v.find(' ')); };
      const std::string was = word(t.old_verdict), is = word(t.new_verdict);
      const bool both = was == "met" && is == "met";
      const bool split = (was == "met" && is == "missed") || (was == "missed" && is == "met");
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", t.goal, t.old_measured, t.old_verdict, t.new_measured,
                        t.new_verdict, both ? "counts" : split ? "differ" : "");
    }
  }
  if (!c.only_old.empty()) {
    md += "\nOnly in the old run:\n";
    for (const auto& s : c.only_old) md += "- " + s + "\n";
  }
  if (!c.only_new.empty()) {
    md += "\nOnly in the new run:\n";
    for (const auto& s : c.only_new) md += "- " + s + "\n";
  }
  return md;
}

namespace {

// What makes two runs' ratios the same ratio: the spec, the benchmark(s), the
// parameters and the two configurations (a switch at its default counting
// as absent). Against the best of several (RatioSpec::best_denominator) the
// denominator is whichever was fastest in each run: the numerator decides.
std::string ratio_key(const Results& results, const Ratio& r, bool best_denominator) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", r.spec, r.bench, r.denominator_bench, params_key(r.bench, r.params),
                     normal_id(results, r.numerator), best_denominator ? "" : normal_id(results, r.denominator));
}

std::string ratio_what(const Ratio& r) {
  const std::string bench = r.denominator_bench.empty() ? r.bench : r.bench + "÷" + r.denominator_bench;
  const std::string params = params_text(r.params);
  return fmt::format("{} {}{} ({})", r.spec, bench, params.empty() ? "" : " " + params,
                     r.pair.empty() ? "defaults" : r.pair);
}

// A ratio's figure as the summary prints it, in plain text.
std::string ratio_figure(const Ratio& r) {
  if (!r.stats.estimated) return fmt::format("{} (1 boot)", format_ratio(r.value));
  return fmt::format("{}{} [{}, {}]", r.stats.same() ? "~ " : "", format_ratio(r.stats.center),
                     format_ratio(r.stats.low), format_ratio(r.stats.high));
}

// Why a ratio is not counted in one run ("" when it is significant there).
std::string not_significant(const Ratio& r, std::string_view run) {
  if (!r.stats.estimated) return fmt::format("1 boot in the {} run", run);
  if (r.stats.same()) return fmt::format("~ in the {} run", run);
  return "";
}

std::string percent_text(double fraction) { return fmt::format("{:g} %", fraction * 100); }

}  // namespace

RepeatCheck repeat_check(const Results& old_results, const Results& new_results, const std::vector<RatioSpec>& specs,
                         double tolerance) {
  RepeatCheck out;
  out.tolerance = tolerance;
  auto best = [&](const std::string& name) {
    const auto it = std::find_if(specs.begin(), specs.end(), [&](const RatioSpec& s) { return s.name == name; });
    return it != specs.end() && it->best_denominator;
  };
  const std::vector<Ratio> old_ratios = compute_ratios(old_results, specs);
  const std::vector<Ratio> new_ratios = compute_ratios(new_results, specs);
  std::map<std::string, const Ratio*> old_by_key;
  for (const auto& r : old_ratios) old_by_key.emplace(ratio_key(old_results, r, best(r.spec)), &r);
  std::map<std::string, bool> matched;
  for (const auto& n : new_ratios) {
    const std::string key = ratio_key(new_results, n, best(n.spec));
    const auto it = old_by_key.find(key);
    if (it == old_by_key.end()) {
      out.only_new.push_back(ratio_what(n));
      continue;
    }
    matched[key] = true;
    RepeatLine line{ratio_what(n), *it->second, n};
    std::string why = not_significant(line.old_ratio, "old");
    const std::string why_new = not_significant(line.new_ratio, "new");
    if (!why_new.empty()) why = why.empty() ? why_new : why + ", " + why_new;
    line.why_not = why;
    line.counted = why.empty();
    if (line.counted) {
      // A hair of slack for the rounding of figures exactly at the edge.
      line.repeats = std::fabs(line.change() - 1) <= tolerance + 1e-12;
      ++out.counted;
      out.repeated += line.repeats;
    }
    out.lines.push_back(std::move(line));
  }
  for (const auto& o : old_ratios)
    if (!matched.count(ratio_key(old_results, o, best(o.spec)))) out.only_old.push_back(ratio_what(o));
  return out;
}

std::string repeat_text(const RepeatCheck& c, const std::string& old_name, const std::string& new_name) {
  const std::string tol = percent_text(c.tolerance);
  std::string text = fmt::format("pvk compare --repeat: old {}, new {}\n", old_name, new_name);
  for (const auto& l : c.lines)
    if (l.counted && !l.repeats)
      text += fmt::format("differs: {}: old {}, new {}: new÷old {:.3f} ({:+.1f} %, beyond ±{})\n", l.what,
                          ratio_figure(l.old_ratio), ratio_figure(l.new_ratio), l.change(), (l.change() - 1) * 100, tol);
  text += fmt::format("{} of {} significant ratios repeat within {}{}\n", c.repeated, c.counted, tol,
                      c.counted == 0 ? " (no ratio is significant in both runs)"
                      : c.ok()       ? ""
                                     : fmt::format("; {} differ", c.counted - c.repeated));
  size_t not_counted = 0;
  for (const auto& l : c.lines) not_counted += !l.counted;
  if (not_counted) {
    text += fmt::format("not counted ({}: `~` or one boot in a run):\n", not_counted);
    for (const auto& l : c.lines)
      if (!l.counted)
        text += fmt::format("  {}: {}: old {}, new {}\n", l.what, l.why_not, ratio_figure(l.old_ratio),
                            ratio_figure(l.new_ratio));
  }
  if (!c.only_old.empty()) {
    text += fmt::format("only in the old run ({}):\n", c.only_old.size());
    for (const auto& s : c.only_old) text += "  " + s + "\n";
  }
  if (!c.only_new.empty()) {
    text += fmt::format("only in the new run ({}):\n", c.only_new.size());
    for (const auto& s : c.only_new) text += "  " + s + "\n";
  }
  return text;
}

}  // namespace pvk::bench
