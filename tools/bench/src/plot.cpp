#include "pvk/bench/plot.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/plot_questions.hpp"
#include "pvk/bench/report.hpp"
#include "pvk/process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>
#include <set>
#include <stdexcept>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

// Text for a gnuplot string in double quotes: backslashes and quotes escaped.
std::string gp_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string gp_string(std::string_view text) { return "\"" + gp_escape(text) + "\""; }

// A title of two lines: what the plot shows, then its currency (the caption).
std::string gp_title(std::string_view title, std::string_view caption) {
  return "\"" + gp_escape(title) + "\\n" + gp_escape(caption) + "\"";
}

// The most series one plot draws: each its own colour and marker (a
// question with more is drawn in parts).
constexpr size_t kMaxSeries = 12;

// Colours and gnuplot point types, none used twice in a plot: series i
// gets entry i of each.
constexpr const char* kColours[kMaxSeries] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
                                              "#000000", "#8c564b", "#7f7f7f", "#9467bd", "#bcbd22", "#17becf"};
constexpr int kMarkers[kMaxSeries] = {7, 5, 9, 11, 13, 6, 4, 8, 10, 12, 1, 2};

std::string style(size_t i) { return fmt::format("lc rgb \"{}\" pt {}", kColours[i], kMarkers[i]); }

// A question's configurations in parts of at most kMaxSeries, named
// base + suffix, then _2, _3, ... for the parts after the first.
std::vector<std::pair<std::string, std::vector<std::string>>> parts(const std::string& base, const PlotQuestion& q,
                                                                    size_t per_config = 1) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  const size_t step = std::max<size_t>(1, kMaxSeries / std::max<size_t>(1, per_config));
  for (size_t i = 0; i < q.ids.size(); i += step) {
    const std::string name = base + q.suffix + (i ? fmt::format("_{}", i / step + 1) : "");
    out.emplace_back(name, std::vector<std::string>(q.ids.begin() + i, q.ids.begin() + std::min(q.ids.size(), i + step)));
  }
  return out;
}

std::string label_of(const Results& results, const std::string& id) {
  const Config* c = results.find_config(id);
  return c ? c->label() : id;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

// Configurations in results.configs order that have a row of `bench`.
std::vector<std::string> configs_with(const Results& results, const std::vector<std::string_view>& benches) {
  std::vector<std::string> out;
  for (const auto& c : results.configs)
    for (const auto& r : results.rows)
      if (r.config == c.id() && std::find(benches.begin(), benches.end(), r.bench) != benches.end()) {
        out.push_back(c.id());
        break;
      }
  return out;
}

struct Script {
  std::string text;
  // One plot, drawn once per terminal.
  void plot(const std::string& name, const std::string& setup, const std::string& command) {
    for (const auto& [terminal, ext] : {std::pair{"svg size 960,600 dynamic noenhanced font \"sans,11\" background \"white\"", "svg"},
                                        std::pair{"pngcairo size 960,600 noenhanced font \"sans,10\"", "png"}}) {
      text += fmt::format("reset\nset terminal {}\nset output {}\n", terminal, gp_string(name + "." + ext));
      text += "set datafile missing \"-\"\nset key outside right top\nset grid ytics\n";
      text += setup + command + "\nunset output\n\n";
    }
  }
};

// One line of a log-log plot: its title and (x, y, y_min, y_max) points.
struct Curve {
  std::string title;
  std::vector<std::tuple<double, double, double, double>> points;
};

// Whether two curves would be drawn on top of each other: the same x and
// every y within 0.5 %.
bool coincide(const Curve& a, const Curve& b) {
  if (a.points.size() != b.points.size()) return false;
  for (size_t i = 0; i < a.points.size(); ++i) {
    const double ya = std::get<1>(a.points[i]), yb = std::get<1>(b.points[i]);
    if (std::get<0>(a.points[i]) != std::get<0>(b.points[i])) return false;
    if (std::abs(ya - yb) > 0.005 * std::max(std::abs(ya), std::abs(yb))) return false;
  }
  return true;
}

// Curves that coincide become one line titled with all their names
// ("native = native pvpatch=off"), so none hides another.
void merge_coinciding(std::vector<Curve>& curves) {
  for (size_t i = 0; i < curves.size(); ++i)
    for (size_t j = i + 1; j < curves.size();)
      if (coincide(curves[i], curves[j])) {
        curves[i].title += " = " + curves[j].title;
        curves.erase(curves.begin() + static_cast<long>(j));
      } else {
        ++j;
      }
}

// What a plot is about: its title, its currency and its axes.
struct Labels {
  std::string title, caption, xlabel, ylabel;
};

// A log-log plot of the curves, one line each, as the plot `name` (data in
// name.dat, one gnuplot index per curve); nothing without points.
void log_log_plot(Script& script, PlotFiles& files, const fs::path& dir, const std::string& name,
                  std::vector<Curve> curves, const std::string& x_name, const std::string& unit, const Labels& l) {
  curves.erase(std::remove_if(curves.begin(), curves.end(), [](const Curve& c) { return c.points.empty(); }),
               curves.end());
  for (auto& curve : curves) std::sort(curve.points.begin(), curve.points.end());
  merge_coinciding(curves);
  if (curves.empty()) return;
  std::string data;
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const auto& curve : curves) {
    data += fmt::format("# {}\n# {} per_op_{} min max\n", curve.title, x_name, unit);
    for (const auto& [x, y, lo, hi] : curve.points) {
      data += fmt::format("{:.6g} {:.6g} {:.6g} {:.6g}\n", x, y, lo, hi);
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, lo);
      y_hi = std::max(y_hi, hi);
    }
    data += "\n\n";
  }
  const fs::path file = dir / (name + ".dat");
  write_file(file, data);
  files.data.push_back(file);
  std::string command = "plot ";
  for (size_t i = 0; i < curves.size(); ++i)
    command += fmt::format("{}{} index {} using 1:2:3:4 with yerrorlines {} pointsize 0.8 title {}",
                           i ? ", \\\n     " : "", gp_string(name + ".dat"), i, style(i), gp_string(curves[i].title));
  // Explicit ranges with a margin: a single size (or a flat curve) is an
  // empty range gnuplot would complain about.
  if (!(x_lo > 0)) x_lo = 1;
  if (!(y_lo > 0)) y_lo = y_hi > 0 ? y_hi / 10 : 1e-3;
  if (!(y_hi > 0)) y_hi = 1;
  script.plot(name,
              fmt::format("set title {}\nset logscale xy\nset xlabel {}\nset ylabel {}\nset format x \"%g\"\n"
                          "set xrange [{:.6g}:{:.6g}]\nset yrange [{:.6g}:{:.6g}]\n",
                          gp_title(l.title, l.caption), gp_string(l.xlabel), gp_string(l.ylabel), x_lo / 1.5,
                          x_hi * 1.5, y_lo / 1.5, y_hi * 1.5),
              command);
  files.plots.push_back(name);
}

// The value of a row a curve plots: per-op time, or with `field`
// ("total_median") that record field (its spread from the _min/_max
// fields); nullopt when the row lacks it.
std::optional<std::tuple<double, double, double>> y_of(const Row& r, const std::string& field, double scale) {
  double y = r.per_op, lo = r.per_op_min, hi = r.per_op_max;
  if (!field.empty()) {
    std::string stem = field;
    if (stem.ends_with("_median")) stem.resize(stem.size() - 7);
    const auto f = r.field(field);
    if (!f) return std::nullopt;
    y = *f;
    lo = r.field(stem + "_min").value_or(y);
    hi = r.field(stem + "_max").value_or(y);
  }
  return std::tuple{y / scale, lo / scale, hi / scale};
}

std::string titled(const std::string& title, const PlotQuestion& q) { return title + ": " + q.heading; }

// Log-log plots of per-op time against a parameter (x), one line per
// configuration, one plot per question (the plot `name` + its suffix);
// with `field`, of that record field instead. fork_dirty: its stride=1
// rows (every page dirtied) only.
void curve_plot(const Results& results, Script& script, PlotFiles& files, const fs::path& dir, const std::string& bench,
                const std::string& x_param, double scale, const std::string& unit, const std::string& title,
                const std::string& xlabel, const std::string& ylabel, const std::string& name = "",
                const std::string& field = "") {
  for (const auto& q : plot_questions(results, configs_with(results, {bench})))
    for (const auto& [plot, ids] : parts(name.empty() ? bench : name, q)) {
      std::vector<Curve> curves;
      for (const auto& id : ids) {
        Curve curve{label_of(results, id), {}};
        for (const auto& r : results.rows) {
          if (r.bench != bench || r.config != id || (bench == "fork_dirty" && fork_stride(r) != 1)) continue;
          const auto y = y_of(r, field, scale);
          if (!y) continue;
          for (const auto& [k, v] : r.params)
            if (k == x_param && v.is_number())
              curve.points.emplace_back(v.get<double>(), std::get<0>(*y), std::get<1>(*y), std::get<2>(*y));
        }
        curves.push_back(std::move(curve));
      }
      log_log_plot(script, files, dir, plot, std::move(curves), x_param, unit,
                   {titled(title, q), plot_currency(results, ids), xlabel, ylabel});
    }
}

// The sparse fork: fork_dirty's ms per fork (or, with `field`, that field) against
// density (percent of each L1 table's entries dirtied, 100 / stride), one
// line per configuration and span measured at two strides or more (sparser
// to the left), one plot per question.
void density_plot(const Results& results, Script& script, PlotFiles& files, const fs::path& dir,
                  const std::string& name, const std::string& field, const std::string& title,
                  const std::string& ylabel) {
  std::map<double, std::set<double>> strides;  // span -> strides, over every configuration
  for (const auto& r : results.rows)
    if (r.bench == "fork_dirty") strides[fork_pages(r)].insert(fork_stride(r));
  size_t spans = 0;
  for (const auto& [pages, set] : strides) spans += set.size() >= 2;
  if (spans == 0) return;
  std::string span;
  if (spans == 1)
    for (const auto& [pages, set] : strides)
      if (set.size() >= 2) span = fmt::format(" over {:.0f} pages", pages);
  for (const auto& q : plot_questions(results, configs_with(results, {"fork_dirty"})))
    for (const auto& [plot, ids] : parts(name, q, spans)) {
      std::vector<Curve> curves;
      for (const auto& id : ids)
        for (const auto& [pages, set] : strides) {
          if (set.size() < 2) continue;
          Curve curve{spans > 1 ? fmt::format("{}, {:.0f} pages", label_of(results, id), pages) : label_of(results, id),
                      {}};
          for (const auto& r : results.rows) {
            if (r.bench != "fork_dirty" || r.config != id || fork_pages(r) != pages) continue;
            if (const auto y = y_of(r, field, 1e6))
              curve.points.emplace_back(100 / fork_stride(r), std::get<0>(*y), std::get<1>(*y), std::get<2>(*y));
          }
          if (curve.points.size() >= 2) curves.push_back(std::move(curve));
        }
      log_log_plot(script, files, dir, plot, std::move(curves), "density_percent", "ms",
                   {titled(title + span, q), plot_currency(results, ids),
                    "density: % of each L1 table's entries dirtied (100 / stride)", ylabel});
    }
}

// Clustered bars: one group per (benchmark, parameters), one bar per
// configuration, as the plot `name`.
void bars(const Results& results, Script& script, PlotFiles& files, const fs::path& dir, const std::string& name,
          const std::vector<std::string_view>& benches, const std::vector<std::string>& ids, bool log_y,
          const std::string& title) {
  std::vector<std::string> categories;
  std::map<std::string, std::map<std::string, double>> value;  // category -> config -> µs
  for (auto bench : benches) {
    // Name a parameter set by the parameters that differ between the sets.
    std::map<std::string, std::set<std::string>> values;
    for (const auto& r : results.rows)
      if (r.bench == bench)
        for (const auto& [k, v] : r.params) values[k].insert(v.dump());
    for (const auto& r : results.rows) {
      if (r.bench != bench || std::find(ids.begin(), ids.end(), r.config) == ids.end()) continue;
      std::string category(bench);
      for (const auto& [k, v] : r.params)
        if (values[k].size() > 1) category += fmt::format(" {}={}", k, v.is_string() ? v.get<std::string>() : v.dump());
      if (std::find(categories.begin(), categories.end(), category) == categories.end()) categories.push_back(category);
      value[category][r.config] = r.per_op / 1e3;
    }
  }
  if (categories.empty()) return;
  double lo = INFINITY, hi = 0;
  for (const auto& [category, by_config] : value)
    for (const auto& [id, v] : by_config)
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > 0)) lo = 0.1, hi = 1;
  std::string data = "category";
  for (const auto& id : ids) data += " " + gp_string(label_of(results, id));
  data += "\n";
  for (const auto& category : categories) {
    data += gp_string(category);
    for (const auto& id : ids) {
      const auto it = value[category].find(id);
      data += it == value[category].end() ? std::string(" -") : fmt::format(" {:.6g}", it->second);
    }
    data += "\n";
  }
  const fs::path file = dir / (name + ".dat");
  write_file(file, data);
  files.data.push_back(file);
  std::string command = "plot ";
  for (size_t i = 0; i < ids.size(); ++i)
    command += fmt::format("{}{} using {}:xtic(1) title columnheader({}) lc rgb \"{}\"", i ? ", \\\n     " : "",
                           gp_string(name + ".dat"), i + 2, i + 2, kColours[i]);
  script.plot(name,
              fmt::format("set title {}\nset style data histograms\nset style histogram clustered gap 1\n"
                          "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics rotate by -30 left\n"
                          "set ylabel \"µs per operation\"\n{}",
                          gp_title(title, plot_currency(results, ids)),
                          log_y ? fmt::format("set logscale y\nset yrange [{:.6g}:{:.6g}]\n", lo / 2, hi * 2)
                                : std::string("set yrange [0:*]\n")),
              command);
  files.plots.push_back(name);
}

// bars() once per question.
void bar_plot(const Results& results, Script& script, PlotFiles& files, const fs::path& dir, const std::string& name,
              const std::vector<std::string_view>& benches, bool log_y, const std::string& title) {
  for (const auto& q : plot_questions(results, configs_with(results, benches)))
    for (const auto& [plot, ids] : parts(name, q)) bars(results, script, files, dir, plot, benches, ids, log_y, titled(title, q));
}

}  // namespace

PlotFiles write_plot_script(const Results& results, const fs::path& dir) {
  fs::create_directories(dir);
  PlotFiles files;
  files.script = dir / "plots.gp";
  Script script;
  script.text = "# Generated by pvk bench: gnuplot plots.gp (in this directory) redraws every plot.\n\n";
  curve_plot(results, script, files, dir, "fork_dirty", "pages", 1e6, "ms", "fork after dirtying N pages (parent side)",
             "dirty pages", "ms per fork");
  curve_plot(results, script, files, dir, "fork_dirty", "pages", 1e6, "ms",
             "fork + child exit + parent rewrite of N dirty pages", "dirty pages", "ms per fork + exit + rewrite",
             "fork_dirty_total", "total_median");
  density_plot(results, script, files, dir, "fork_dirty_density", "",
               "fork after dirtying every stride-th page (parent side)", "ms per fork");
  density_plot(results, script, files, dir, "fork_dirty_density_total", "total_median",
               "fork + child exit + parent rewrite of every stride-th page", "ms per fork + exit + rewrite");
  curve_plot(results, script, files, dir, "mprotect", "pages", 1e3, "us", "mprotect RW->RO->RW of N pages",
             "pages", "µs per RW->RO->RW cycle");
  bar_plot(results, script, files, dir, "faults", {"fault_zero_read", "fault_zero_cow", "fault_write", "memset_present"},
           false, "page faults and page clearing (seed 001)");
  bar_plot(results, script, files, dir, "lmbench",
           {"getpid", "getppid", "segv", "divzero", "forkwait", "lat_pipe", "ctx"}, true,
           "lmbench-style microbenchmarks (seed 000)");
  bar_plot(results, script, files, dir, "kernbench", {"kernbench"}, false, "kernbench-like mix, per job (seed 002)");
  write_file(files.script, script.text);
  return files;
}

std::string run_gnuplot(const PlotFiles& files, std::vector<std::string>& warnings) {
  if (files.plots.empty()) return "";
  ProcessOptions options;
  const std::string dir = fs::absolute(files.script.parent_path()).string();
  if (dir.find('\'') != std::string::npos) return "the output directory's name contains a quote; run gnuplot plots.gp there";
  options.argv = {"gnuplot", "-e", "cd '" + dir + "'", fs::absolute(files.script).string()};
  options.timeout = std::chrono::seconds{120};
  std::vector<std::string> output;
  ProcessResult result;
  try {
    result = run_process(options, [&](std::string_view line) {
      output.emplace_back(line);
      return LineAction::keep_going;
    });
  } catch (const std::exception& e) {
    return fmt::format("cannot run gnuplot ({}); Debian package gnuplot-nox", e.what());
  }
  if (result.exit_code == 0) {
    warnings = std::move(output);
    return "";
  }
  std::string why = fmt::format("gnuplot failed (status {}):", result.exit_code);
  for (size_t i = 0; i < output.size() && i < 10; ++i) why += "\n  " + output[i];
  return why;
}

}  // namespace pvk::bench
