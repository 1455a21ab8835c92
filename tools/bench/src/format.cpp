#include "pvk/bench/format.hpp"

#include <fmt/format.h>

#include <cmath>

namespace pvk::bench {
namespace {

std::string three_digits(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
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

std::string percent(double share) {
  const double p = share * 100;
  if (p >= 10) return fmt::format("{:.0f} %", p);
  if (p >= 1) return fmt::format("{:.1f} %", p);
  return fmt::format("{:.2g} %", p);
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

std::string row_line(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += " " + c + " |";
  return out + "\n";
}

}  // namespace pvk::bench
