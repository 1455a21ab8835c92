#include "pvk/bench/output.hpp"

#include "pvk/bench/plot.hpp"
#include "pvk/bench/projection.hpp"
#include "pvk/bench/report.hpp"
#include "pvk/bench/runner.hpp"
#include "pvk/bench/scaling.hpp"
#include "pvk/bench/seeds.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <system_error>
#include <stdexcept>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial);
    out << text;
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  }
  fs::rename(partial, path);
}

}  // namespace

Written write_outputs(const Results& results, const std::vector<RatioSpec>& specs, const fs::path& dir, bool draw_plots) {
  fs::create_directories(dir);
  Written w;
  const std::vector<Ratio> ratios = compute_ratios(results, specs);
  OJson json = to_json(results);
  OJson rj = OJson::array();
  for (const auto& r : ratios) {
    OJson params = OJson::object();
    for (const auto& [k, v] : r.params) params[k] = v;
    const RatioStats& s = r.stats;
    // low/high: the reps' spread (as before the boot intervals); interval: the 95 % one over the boots.
    OJson j{{"ratio", r.spec}, {"bench", r.bench}, {"params", params}, {"numerator", r.numerator},
            {"denominator", r.denominator}, {"pair", r.pair}, {"value", r.value}, {"low", r.low},
            {"high", r.high}, {"pass", r.pass}, {"time", r.deterministic ? "virtual time (-icount)" : "wall time"}, {"method", s.method},
            {"boots", {s.n_numerator, s.n_denominator}}, {"significant", !s.same()}, {"noisy", s.noisy()}};
    if (!r.denominator_bench.empty()) j["denominator_bench"] = r.denominator_bench;
    if (s.estimated) {
      j["interval"] = {s.low, s.high};
      j["p"] = s.p;
    }
    rj.push_back(std::move(j));
  }
  json["ratios"] = rj;
  OJson fits = OJson::array();
  for (const auto& f : fork_fits(results))
    fits.push_back({{"configuration", f.config}, {"per_page_ns", f.fit.slope}, {"fixed_ns", f.fit.intercept},
                    {"r2", f.fit.r2}, {"points", f.fit.n}, {"pages", {f.lo, f.hi}}});
  json["fork_fits"] = fits;
  json["scaling"] = scaling_json(results);
  const std::vector<CostProfile> profiles = applied_profiles(results);
  if (!profiles.empty()) json["model_ratios"] = projection_ratios_json(results, profiles, specs);
  w.json = dir / "results.json";
  write_text(w.json, json.dump(1) + "\n");
  w.csv = dir / "results.csv";
  write_text(w.csv, to_csv(results));
  w.summary_text = summary_markdown(results, specs, ratios) + projection_section(results, profiles, specs);
  w.plots_dir = dir / "plots";
  const PlotFiles plots = write_plot_script(results, w.plots_dir);
  if (draw_plots) {
    std::vector<std::string> warnings;
    w.plot_problem = run_gnuplot(plots, warnings);
    if (w.plot_problem.empty()) w.plots = plots.plots;
    if (!warnings.empty()) {
      w.plot_problem = "gnuplot warned:";
      for (const auto& line : warnings) w.plot_problem += "\n  " + line;
    }
  } else {
    w.plot_problem = "plots not drawn (--no-plots); run gnuplot plots.gp in " + w.plots_dir.string();
  }
  if (!w.plots.empty()) {
    w.summary_text += "\n## Plots\n\n";
    for (const auto& p : w.plots) w.summary_text += fmt::format("![{0}](plots/{0}.svg)\n", p);
  }
  w.summary = dir / "summary.md";
  write_text(w.summary, w.summary_text);
  return w;
}

void link_latest_run(const std::filesystem::path& out_dir) {
  std::error_code ec;
  const std::filesystem::path latest = out_dir.parent_path() / "latest";
  std::filesystem::remove(latest, ec);
  std::filesystem::create_directory_symlink(out_dir.filename(), latest, ec);
}

size_t print_run_report(const Results& results, const Written& w, double wall_s) {
  fmt::print("{}", w.summary_text);
  std::fflush(stdout);
  size_t failed = 0;
  for (const auto& b : results.boots) failed += !b.pass;
  fmt::print(stderr, "pvk bench: wrote {}, {}, {}", w.summary.string(), w.json.string(), w.csv.string());
  if (!w.plots.empty()) fmt::print(stderr, " and {} plots in {}", w.plots.size(), w.plots_dir.string());
  fmt::print(stderr, "\n");
  if (!w.plot_problem.empty()) fmt::print(stderr, "pvk bench: {}\n", w.plot_problem);
  fmt::print(stderr, "pvk bench: {} boots, {} failed, {} wall time\n", results.boots.size(), failed, clock_text(wall_s));
  for (const auto& b : results.boots)
    if (!b.pass) fmt::print(stderr, "pvk bench:   FAIL {} rep {} ({}): {}\n", b.config, b.rep, b.group, b.reason);
  return failed;
}

}  // namespace pvk::bench
