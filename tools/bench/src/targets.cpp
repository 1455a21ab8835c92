#include "pvk/bench/targets.hpp"

#include "pvk/bench/format.hpp"
#include "pvk/bench/matrix.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace pvk::bench {
namespace {

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

namespace {

// The lines of one target (several for each_pair).
void add_target_lines(const Target& t, const std::vector<Ratio>& ratios, std::vector<TargetLine>& out) {
  {
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
        return;
      }
      const double high = top(*best);
      const std::string params = params_text(best->params);
      out.push_back({fmt::format("{} — best at {}{}{}", t.goal, best->bench, params.empty() ? "" : " " + params,
                                 best->pair.empty() ? "" : " (" + best->pair + ")"),
                     target_measured(*best), (high < t.at_most ? "met" : "missed") + one_sample_note(*best)});
      return;
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
      if (!any)
        out.push_back({t.goal, "—",
                       needs_linux ? "needs Linux rows" : t.needs.empty() ? "not in this run" : "not in this run: " + t.needs});
      return;
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
}

}  // namespace

std::vector<TargetLine> evaluate_targets(const std::vector<Ratio>& ratios) {
  std::vector<TargetLine> out;
  for (const auto& t : targets()) {
    const size_t first = out.size();
    add_target_lines(t, ratios, out);
    if (!t.retired.empty())
      for (size_t i = first; i < out.size(); ++i) out[i].verdict = "retired: " + t.retired;
  }
  return out;
}

}  // namespace pvk::bench
