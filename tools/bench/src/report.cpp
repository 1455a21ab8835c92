#include "pvk/bench/report.hpp"

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

std::string three_digits(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

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

std::string row_line(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += " " + c + " |";
  return out + "\n";
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

// The ratio of the base configurations (no other switch) for a target.
const Ratio* base_ratio(const std::vector<Ratio>& ratios, const std::string& spec, const std::string& bench,
                        const std::string& params) {
  for (const auto& r : ratios)
    if (r.spec == spec && r.bench == bench && r.pair.empty() && has_params(r.params, params)) return &r;
  return nullptr;
}

std::string target_verdict(const Target& t, double value) { return value <= t.at_most ? "met" : "missed"; }

// With an interval over the boots (figures that hold): met or missed only when the
// whole interval lies on one side of the goal.
std::string target_measured(const Ratio& r) {
  if (!r.stats.estimated) return format_ratio(r.value);
  if (r.stats.exact()) return format_ratio(r.stats.center) + " exact";
  return fmt::format("{} [{}, {}]", format_ratio(r.shown()), format_ratio(r.stats.low), format_ratio(r.stats.high));
}
// One boot a side in wall time is one sample of a noisy host: said beside
// the verdict (the sparse fork's density rows run once per configuration).
std::string one_sample_note(const Ratio& r) {
  return !r.stats.estimated && !r.deterministic ? " (1 boot in wall time: no interval)" : "";
}
std::string target_verdict(const Target& t, const Ratio& r) {
  if (!r.stats.estimated) return target_verdict(t, r.value) + one_sample_note(r);
  if (r.stats.high <= t.at_most) return "met";
  if (r.stats.low > t.at_most) return "missed";
  return fmt::format("unclear: the interval spans {}", format_ratio(t.at_most));
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

// Whether a row is fork_dirty at full density (stride=1, or no stride: a
// record from before the sparse fork).
bool dense(const Row& r) { return fork_stride(r) == 1; }

std::string percent(double share) {
  const double p = share * 100;
  if (p >= 10) return fmt::format("{:.0f} %", p);
  if (p >= 1) return fmt::format("{:.1f} %", p);
  return fmt::format("{:.2g} %", p);
}

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

std::string format_ns(double ns) {
  if (!std::isfinite(ns)) return "—";
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return three_digits(ns / 1e3) + " µs";
  if (a < 1e9) return three_digits(ns / 1e6) + " ms";
  return three_digits(ns / 1e9) + " s";
}

std::string format_count(double value) {
  if (!std::isfinite(value)) return "—";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<long long>(value));
  if (std::fabs(value) >= 100) return fmt::format("{:.0f}", value);
  if (std::fabs(value) >= 10) return fmt::format("{:.1f}", value);
  if (std::fabs(value) >= 0.1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.2g}", value);  // 0.0016 hypercalls per getpid, not 0.00
}

std::string format_ratio(double value) {
  if (!std::isfinite(value)) return "—";
  if (value >= 100) return fmt::format("{:.0f}", value);
  if (value >= 10) return fmt::format("{:.1f}", value);
  if (value >= 0.1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3f}", value);
}

// The targets are about every page dirtied, not the sparse forks
// (unless a target says every density).
bool has_params(const Params& params, std::string_view wanted, bool any_density) {
  const std::string have = " " + params_text(params) + " ";
  if (!any_density && wanted.find("stride=") == std::string_view::npos && have.find(" stride=") != std::string::npos &&
      have.find(" stride=1 ") == std::string::npos)
    return false;
  size_t start = 0;
  while (start < wanted.size()) {
    size_t end = wanted.find(' ', start);
    if (end == std::string_view::npos) end = wanted.size();
    if (end > start && have.find(" " + std::string(wanted.substr(start, end - start)) + " ") == std::string::npos)
      return false;
    start = end + 1;
  }
  return true;
}

std::vector<TargetLine> evaluate_targets(const std::vector<Ratio>& ratios) {
  std::vector<TargetLine> out;
  for (const auto& t : targets()) {
    const bool needs_linux =
        t.ratio.find("Linux") != std::string::npos || t.relative_to.find("Linux") != std::string::npos;
    auto applies = [&](const Ratio& r) {
      return r.spec == t.ratio && (t.bench.empty() || r.bench == t.bench) &&
             has_params(r.params, t.params, t.sparse_too);
    };
    if (t.somewhere) {
      // The pair and parameters whose interval reaches lowest at its top
      // (the one most surely below the goal); "better" is strict.
      auto top = [](const Ratio& r) { return r.stats.estimated ? r.stats.high : r.value; };
      const Ratio* best = nullptr;
      for (const auto& r : ratios)
        if (applies(r) && (!best || top(r) < top(*best))) best = &r;
      if (!best) {
        out.push_back({t.goal, "—", "not in this run"});
        continue;
      }
      const double high = top(*best);
      const std::string params = params_text(best->params);
      out.push_back({fmt::format("{} — best at {}{}{}", t.goal, best->bench, params.empty() ? "" : " " + params,
                                 best->pair.empty() ? "" : " (" + best->pair + ")"),
                     target_measured(*best), (high < t.at_most ? "met" : "missed") + one_sample_note(*best)});
      continue;
    }
    if (t.each_pair) {
      // One line per pair of configurations the ratio has (each backend).
      bool any = false;
      for (const auto& r : ratios) {
        if (!applies(r)) continue;
        any = true;
        const std::string params = params_text(r.params);
        // Against the best of several the line names which one it was.
        const bool best_of = std::any_of(builtin_ratios().begin(), builtin_ratios().end(), [&](const RatioSpec& s) {
          return s.name == r.spec && s.best_denominator;
        });
        const std::string against = best_of ? " vs " + config_from_id(r.denominator).label() : "";
        out.push_back({fmt::format("{} — {}{}{}", t.goal, r.pair.empty() ? "defaults" : r.pair,
                                   params.empty() ? "" : ", " + params, against),
                       target_measured(r), target_verdict(t, r)});
      }
      if (!any) out.push_back({t.goal, "—", needs_linux ? "needs Linux rows" : "not in this run"});
      continue;
    }
    const Ratio* r = base_ratio(ratios, t.ratio, t.bench, t.params);
    const Ratio* ref = t.relative_to.empty() ? nullptr : base_ratio(ratios, t.relative_to, t.bench, t.params);
    TargetLine line{t.goal, "—", "not measured"};
    if (r && (t.relative_to.empty() || ref)) {
      if (ref) {
        const double v = r->shown() / ref->shown();
        line.measured = format_ratio(v);
        line.verdict = target_verdict(t, v);
      } else {
        line.measured = target_measured(*r);
        line.verdict = target_verdict(t, *r);
      }
    } else if (needs_linux) {
      line.verdict = "needs Linux rows";
    } else {
      line.verdict = "not in this run (--full?)";
    }
    out.push_back(std::move(line));
  }
  return out;
}

std::string time_mode(const Results& results) {
  if (results.virtual_time() && !results.configs.empty() &&
      std::all_of(results.configs.begin(), results.configs.end(), [](const Config& c) { return c.cpus() > 1; }))
    return "wall time (every machine has several CPUs)";
  if (results.mixed_time()) return "virtual time (-icount); machines with several CPUs in wall time";
  return results.virtual_time() ? "virtual time (-icount)" : "wall time";
}

std::string ratio_cell(const Ratio& r) {
  const RatioStats& s = r.stats;
  std::string cell;
  if (!s.estimated) {
    // No interval from one boot: the reps' spread (min÷max – max÷min) at least bounds it.
    cell = r.low > 0 && r.high > 0 ? fmt::format("{} (1 boot; reps {}–{})", format_ratio(r.value),
                                                  format_ratio(r.low), format_ratio(r.high))
                                   : fmt::format("{} (1 boot)", format_ratio(r.value));
  } else if (s.exact()) {
    // Virtual time, one boot a side: the figure itself, as a rerun gives it.
    cell = s.same() ? "~ (1.00 exact)" : fmt::format("**{}** exact", format_ratio(s.center));
  } else {
    // The center of the interval (the ratio of the boots' geometric means),
    // not the ratio of medians: a figure and its interval from one estimate.
    const std::string figures =
        fmt::format("{} [{}, {}] p={}", format_ratio(s.center), format_ratio(s.low), format_ratio(s.high),
                    s.p < 0.001 ? std::string("<0.001") : fmt::format("{:.3f}", s.p));
    cell = s.same() ? "~ (" + figures + ")" : "**" + figures.substr(0, figures.find(' ')) + "**" +
                                                   figures.substr(figures.find(' '));
    if (s.noisy()) cell += " noisy";
  }
  if (!r.pass) cell += " ⚠";
  return cell;
}

double fork_pages(const Row& row) {
  for (const auto& [k, v] : row.params)
    if (k == "pages" && v.is_number()) return v.get<double>();
  return 0;
}

double fork_stride(const Row& row) {
  for (const auto& [k, v] : row.params)
    if (k == "stride" && v.is_number()) return v.get<double>();
  return 1;
}

std::vector<BreakEven> fork_break_evens(const Results& results) {
  // The configurations with fork_dirty rows, in results.configs order.
  std::vector<const Config*> configs;
  for (const auto& c : results.configs)
    if (std::any_of(results.rows.begin(), results.rows.end(),
                    [&](const Row& r) { return r.bench == "fork_dirty" && r.config == c.id() && r.per_op > 0; }))
      configs.push_back(&c);
  // Pairs: the same switches besides mmu= and ptshare=, and then either the
  // same ptshare (two backends) or the same platform and backend (ptshare
  // off against on).
  auto others = [](const Config& c) {
    Switches s;
    for (const auto& kv : c.switches)
      if (kv.first != "mmu" && kv.first != "ptshare") s.push_back(kv);
    return Config{"", s}.id();
  };
  auto per_op = [&](const std::string& id, double pages, double stride) -> std::optional<double> {
    for (const auto& r : results.rows)
      if (r.bench == "fork_dirty" && r.config == id && fork_pages(r) == pages && fork_stride(r) == stride &&
          r.per_op > 0)
        return r.per_op;
    return std::nullopt;
  };
  // (x, a / b) sorted by x: crossings interpolated on log(ratio) against log(x).
  auto fill = [](BreakEven& be, std::vector<std::pair<double, double>> points) {
    std::sort(points.begin(), points.end());
    be.lo = points.front().first;
    be.hi = points.back().first;
    for (size_t i = 1; i < points.size(); ++i) {
      const auto [x0, r0] = points[i - 1];
      const auto [x1, r1] = points[i];
      if ((r0 < 1) == (r1 < 1)) continue;
      const double f = std::log(r0) / (std::log(r0) - std::log(r1));
      be.crosses.push_back({std::exp(std::log(x0) + f * (std::log(x1) - std::log(x0))), r0 < 1 ? be.a : be.b});
    }
    if (be.crosses.empty()) be.faster = points.front().second < 1 ? be.a : be.b;
  };
  std::vector<BreakEven> out;
  for (size_t i = 0; i < configs.size(); ++i)
    for (size_t j = i + 1; j < configs.size(); ++j) {
      const Config& a = *configs[i];
      const Config& b = *configs[j];
      if (others(a) != others(b)) continue;
      const bool same_ptshare = a.effective("ptshare") == b.effective("ptshare");
      const bool same_backend = a.platform == b.platform && a.get("mmu") == b.get("mmu");
      if (!same_ptshare && !same_backend) continue;
      // Against pages: every page dirtied.
      std::set<double> sizes;
      for (const auto& r : results.rows)
        if (r.bench == "fork_dirty" && r.config == a.id() && fork_stride(r) == 1) sizes.insert(fork_pages(r));
      std::vector<std::pair<double, double>> points;
      for (const double p : sizes) {
        const auto ta = per_op(a.id(), p, 1), tb = per_op(b.id(), p, 1);
        if (ta && tb && p > 0) points.emplace_back(p, *ta / *tb);
      }
      if (points.size() >= 2) {
        BreakEven be;
        be.a = a.id();
        be.b = b.id();
        fill(be, points);
        out.push_back(std::move(be));
      }
      // Against density, at each span both measured at two strides or more.
      std::map<double, std::set<double>> strides;
      for (const auto& r : results.rows)
        if (r.bench == "fork_dirty" && r.config == a.id()) strides[fork_pages(r)].insert(fork_stride(r));
      for (const auto& [pages, set] : strides) {
        std::vector<std::pair<double, double>> dpoints;
        for (const double stride : set) {
          const auto ta = per_op(a.id(), pages, stride), tb = per_op(b.id(), pages, stride);
          if (ta && tb && stride > 0) dpoints.emplace_back(1 / stride, *ta / *tb);
        }
        if (dpoints.size() < 2) continue;
        BreakEven be;
        be.a = a.id();
        be.b = b.id();
        be.density = true;
        be.pages = pages;
        fill(be, dpoints);
        out.push_back(std::move(be));
      }
    }
  return out;
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

// Table sharing's figures: every configuration that has a partner differing only
// in ptshare, off then on, at the largest size measured (128,000 pages in
// the default matrix), with the counters that say where the work went, per
// 128,000 pages. fork_dirty by phase (fork, child exit, parent rewrite,
// total); mprotect per RW->RO->RW cycle.
std::string ptshare_section(const Results& results) {
  constexpr double kPer = 128000;
  // Configurations keyed by what they are besides ptshare.
  auto without_ptshare = [](const Config& c) {
    Config k{c.platform, {}};
    for (const auto& s : c.switches)
      if (s.first != "ptshare") k.switches.push_back(s);
    return k.id();
  };
  std::map<std::string, std::vector<const Config*>> by_key;
  std::vector<std::string> key_order;
  for (const auto& c : results.configs) {
    if (!c.get("mmu")) continue;  // pvk only (Linux has no ptshare and no counters)
    const std::string k = without_ptshare(c);
    if (!by_key.count(k)) key_order.push_back(k);
    by_key[k].push_back(&c);
  }
  // Off before on, each pair together.
  std::vector<std::pair<const Config*, const Config*>> order;  // (config, its off partner or null)
  for (const auto& k : key_order) {
    const auto& cs = by_key[k];
    const Config* off = nullptr;
    bool has_on = false;
    for (const Config* c : cs) {
      if (c->effective("ptshare") == "off") off = c;
      if (c->effective("ptshare") == "on") has_on = true;
    }
    if (!off || !has_on) continue;
    order.emplace_back(off, nullptr);
    for (const Config* c : cs)
      if (c->effective("ptshare") == "on") order.emplace_back(c, off);
  }
  if (order.empty()) return "";

  auto pages_of = [](const Row& r) -> double {
    for (const auto& [k, v] : r.params)
      if (k == "pages" && v.is_number()) return v.get<double>();
    return 0;
  };
  auto find_row = [&](const std::string& bench, const std::string& config, double pages) -> const Row* {
    for (const auto& r : results.rows)
      if (r.bench == bench && r.config == config && pages_of(r) == pages && dense(r)) return &r;
    return nullptr;
  };
  // The sizes shown: the two largest any configuration of the pairs ran
  // (the targets' 128,000 pages, which the default matrix boots only where a
  // target needs them, and the largest of the standard list, which every
  // configuration ran).
  auto sizes_for = [&](const std::string& bench) {
    std::set<double> sizes;
    for (const auto& r : results.rows)
      if (r.bench == bench && dense(r) &&
          std::any_of(order.begin(), order.end(), [&](const auto& p) { return p.first->id() == r.config; }))
        sizes.insert(pages_of(r));
    std::vector<double> out(sizes.rbegin(), sizes.rend());
    if (out.size() > 2) out.resize(2);
    out.erase(std::remove(out.begin(), out.end(), 0.0), out.end());
    return out;
  };
  std::vector<std::string> counters{"pte_writes"};
  // L2 update counters, where the kernel has them.
  for (const char* c : {"l2_writes", "l2_updates"})
    if (std::any_of(results.rows.begin(), results.rows.end(), [&](const Row& r) { return r.field(c).has_value(); }))
      counters.emplace_back(c);
  for (const char* c : {"pt_shares", "pt_copyouts", "pt_gate_opens", "pt_pushdowns", "l2_protects", "mmu_update_entries",
                        "hypercalls", "ptwr_traps", "page_faults"})
    counters.emplace_back(c);

  std::string md = "\n## Table sharing (ptshare)\n\n"
                   "Each backend with `ptshare=off` and `=on` (table sharing). Counters per 128,000 pages (scaled when the "
                   "size differs) from the median rep of each phase; on÷off: the phase's time over the same "
                   "configuration with ptshare=off. L2 entry stores are among pte_writes (and l2_writes, where the "
                   "kernel counts them); l2_protects counts whole tables mprotected at their L2 entry, pt_gate_opens "
                   "the read-only L2 entries opened without a copy, pt_copyouts the shared tables copied.\n";
  auto head = [&](std::vector<std::string> cells) {
    for (const auto& c : counters) cells.push_back(c);
    std::string rule = "|---|";
    for (size_t i = 1; i < cells.size(); ++i) rule += i == 1 && cells[1] == "phase" ? "---|" : "---:|";
    return row_line(cells) + rule + "\n";
  };

  for (const double pages : sizes_for("fork_dirty")) {
    md += fmt::format("\n### fork_dirty at {:.0f} pages: fork, child exit, parent rewrite{}\n\n", pages,
                      pages == kPer ? "" : " (counters × 128000/pages)");
    md += head({"configuration", "phase", "time", "on÷off"});
    const std::vector<std::pair<std::string, std::string>> phases{
        {"fork", ""}, {"child exit", "exit_"}, {"parent rewrite", "rewrite_"}, {"total", "total_"}};
    for (const auto& [config, off] : order) {
      const Row* r = find_row("fork_dirty", config->id(), pages);
      if (!r) continue;
      const Row* o = off ? find_row("fork_dirty", off->id(), pages) : nullptr;
      for (const auto& [phase, prefix] : phases) {
        auto time_of = [&](const Row* row) -> std::optional<double> {
          if (!row) return std::nullopt;
          if (prefix.empty()) return row->per_op;
          return row->field(prefix + "median");
        };
        const auto t = time_of(r), ot = time_of(o);
        std::vector<std::string> cells{config->label(), phase, t ? format_ns(*t) : "—",
                                       t && ot && *ot > 0 ? format_ratio(*t / *ot) : ""};
        for (const auto& c : counters) {
          const auto v = r->field(prefix + c);
          cells.push_back(v ? format_count(*v * kPer / pages / (prefix.empty() ? r->ops : 1)) : "—");
        }
        md += row_line(cells);
      }
    }
  }
  for (const double pages : sizes_for("mprotect")) {
    md += fmt::format("\n### mprotect RW→RO→RW of {:.0f} pages, per cycle{}\n\n", pages,
                      pages == kPer ? "" : " (counters × 128000/pages)");
    md += head({"configuration", "per cycle", "on÷off"});
    for (const auto& [config, off] : order) {
      const Row* r = find_row("mprotect", config->id(), pages);
      if (!r) continue;
      const Row* o = off ? find_row("mprotect", off->id(), pages) : nullptr;
      std::vector<std::string> cells{config->label(), format_ns(r->per_op),
                                     o && o->per_op > 0 ? format_ratio(r->per_op / o->per_op) : ""};
      for (const auto& c : counters) {
        const auto v = r->field(c);
        cells.push_back(v ? format_count(*v * kPer / pages / r->ops) : "—");
      }
      md += row_line(cells);
    }
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
  md += targets_section(ratios);
  md += ratios_section(results, specs, ratios);
  md += seeds_section(results, ratios);
  return md;
}

}  // namespace pvk::bench
