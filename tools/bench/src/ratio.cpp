#include "pvk/bench/ratio.hpp"

#include "pvk/bench/scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace pvk::bench {

bool Selector::matches(const Config& config) const {
  for (const auto& [key, values] : terms) {
    const auto v = config.effective(key);
    if (!v || std::find(values.begin(), values.end(), *v) == values.end()) return false;
  }
  return true;
}

bool Selector::mentions(std::string_view key) const {
  return std::any_of(terms.begin(), terms.end(), [&](const auto& t) { return t.first == key; });
}

std::string Selector::text() const {
  std::string out;
  for (const auto& [key, values] : terms) {
    if (!out.empty()) out += ',';
    out += key + "=";
    for (size_t i = 0; i < values.size(); ++i) out += (i ? "|" : "") + values[i];
  }
  return out;
}

Selector parse_selector(std::string_view text) {
  Selector s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view term = text.substr(start, end - start);
    const size_t eq = term.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == term.size())
      throw std::invalid_argument(fmt::format("selector '{}': '{}' is not key=value", text, term));
    std::vector<std::string> values;
    std::string_view rest = term.substr(eq + 1);
    while (true) {
      const size_t bar = rest.find('|');
      values.emplace_back(rest.substr(0, bar));
      if (values.back().empty()) throw std::invalid_argument(fmt::format("selector '{}': empty value", text));
      if (bar == std::string_view::npos) break;
      rest = rest.substr(bar + 1);
    }
    s.terms.emplace_back(std::string(term.substr(0, eq)), std::move(values));
    start = end + 1;
  }
  return s;
}

RatioSpec parse_ratio(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw std::invalid_argument(fmt::format("--ratio '{}': expected NAME=NUMERATOR/DENOMINATOR", text));
  const std::string_view sides = text.substr(eq + 1);
  const size_t slash = sides.find('/');
  if (slash == std::string_view::npos || sides.find('/', slash + 1) != std::string_view::npos)
    throw std::invalid_argument(fmt::format("--ratio '{}': expected one '/' between the two selectors", text));
  // A side is SELECTOR[@BENCH]; with a benchmark the selector may be empty
  // (any configuration: then both rows come from one).
  auto side = [&](std::string_view part, std::string& bench) {
    const size_t at = part.find('@');
    if (at != std::string_view::npos) {
      bench = std::string(part.substr(at + 1));
      if (bench.empty()) throw std::invalid_argument(fmt::format("--ratio '{}': empty benchmark after '@'", text));
      part = part.substr(0, at);
      if (part.empty()) return Selector{};
    }
    return parse_selector(part);
  };
  RatioSpec spec{std::string(text.substr(0, eq)), {}, {}, "declared with --ratio"};
  spec.numerator = side(sides.substr(0, slash), spec.numerator_bench);
  spec.denominator = side(sides.substr(slash + 1), spec.denominator_bench);
  if (spec.numerator_bench.empty() != spec.denominator_bench.empty())
    throw std::invalid_argument(fmt::format("--ratio '{}': name a benchmark on both sides or on neither", text));
  return spec;
}

bool paired_in_time(const Results& results) {
  const auto it = results.run.find("schedule");
  return it != results.run.end() && it->is_string() && it->get<std::string>() == "paired";
}

std::vector<std::pair<int, double>> boot_values(const Row& row, const std::string& field) {
  std::vector<std::pair<int, double>> out;
  for (const auto& b : row.boots)
    if (const auto v = b.field(field.empty() ? "per_op" : field)) out.emplace_back(b.rep, *v);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}

namespace {

// The two rows' boot values as the statistics take them: paired when each
// side has one value per rep and the same reps.
RatioStats stats_of(const Row& a, const Row& b, const std::string& field, bool paired, Timing timing) {
  const auto va = boot_values(a, field), vb = boot_values(b, field);
  std::vector<double> xa, xb;
  for (const auto& v : va) xa.push_back(v.second);
  for (const auto& v : vb) xb.push_back(v.second);
  bool same_reps = va.size() == vb.size();
  for (size_t i = 0; same_reps && i < va.size(); ++i)
    same_reps = va[i].first == vb[i].first && (i == 0 || va[i].first != va[i - 1].first);
  return ratio_stats(xa, xb, paired && same_reps, timing);
}

bool bench_is(const std::string& bench, const std::string& wanted, const std::string& otherwise) {
  return bench == (wanted.empty() ? otherwise : wanted);
}

// The parameters without `key` ("" = all of them), as params_text.
std::string params_without(const Params& params, const std::string& key) {
  Params rest;
  for (const auto& p : params)
    if (p.first != key) rest.push_back(p);
  return params_text(rest);
}

// A parameter's value as text ("" when the row has no such parameter).
std::string param_value(const Params& params, const std::string& key) {
  for (const auto& [k, v] : params)
    if (k == key) return v.is_string() ? v.get<std::string>() : v.dump();
  return "";
}

// Whether b is a's denominator under spec's rows and parameters.
bool rows_pair(const RatioSpec& spec, const Row& a, const Row& b) {
  if (spec.workers_per_cpu) {
    std::string pa, pb;
    return row_workers(a, &pa) && row_workers(b, &pb) && pa == pb &&
           params_without(a.params, pa) == params_without(b.params, pb);
  }
  if (spec.vary.empty()) return params_text(a.params) == params_text(b.params);
  const std::string va = param_value(a.params, spec.vary), vb = param_value(b.params, spec.vary);
  return !va.empty() && va != spec.vary_base && vb == spec.vary_base &&
         params_without(a.params, spec.vary) == params_without(b.params, spec.vary);
}

}  // namespace

std::vector<Ratio> compute_ratios(const Results& results, const std::vector<RatioSpec>& specs) {
  const bool paired_run = paired_in_time(results);
  std::vector<Ratio> out;
  for (const auto& spec : specs) {
    for (const auto& a : results.rows) {
      if (!spec.numerator_bench.empty() && a.bench != spec.numerator_bench) continue;
      const Config* ca = results.find_config(a.config);
      if (!ca || !spec.numerator.matches(*ca)) continue;
      const size_t first = out.size();
      for (const auto& b : results.rows) {
        if (&a == &b || !bench_is(b.bench, spec.denominator_bench, a.bench) || !rows_pair(spec, a, b)) continue;
        const Config* cb = results.find_config(b.config);
        const bool same_config = cb && ca->id() == cb->id();
        // One configuration over itself only across benchmarks or a parameter;
        // across a parameter, only within one configuration.
        if (!cb || !spec.denominator.matches(*cb)) continue;
        if (spec.workers_per_cpu && (row_workers(a) != ca->cpus() || row_workers(b) != cb->cpus())) continue;
        if (spec.vary.empty() ? (same_config && a.bench == b.bench) : !same_config) continue;
        std::set<std::string> keys;
        for (const auto& k : ca->keys()) keys.insert(k);
        for (const auto& k : cb->keys()) keys.insert(k);
        bool same = true;
        for (const auto& k : keys)
          if (!spec.numerator.mentions(k) && !spec.denominator.mentions(k) && ca->effective(k) != cb->effective(k))
            same = false;
        if (!same) continue;
        double va = a.per_op, vb = b.per_op, a_min = a.per_op_min, a_max = a.per_op_max, b_min = b.per_op_min,
               b_max = b.per_op_max;
        if (!spec.field.empty()) {
          const auto fa = a.field(spec.field), fb = b.field(spec.field);
          if (!fa || !fb) continue;
          va = *fa;
          vb = *fb;
          // total_median -> total_min / total_max (absent: no spread).
          std::string stem = spec.field;
          if (stem.ends_with("_median")) stem.resize(stem.size() - 7);
          a_min = a.field(stem + "_min").value_or(0);
          a_max = a.field(stem + "_max").value_or(0);
          b_min = b.field(stem + "_min").value_or(0);
          b_max = b.field(stem + "_max").value_or(0);
        }
        if (vb <= 0) continue;
        Ratio r;
        r.spec = spec.name;
        r.bench = a.bench;
        if (b.bench != a.bench) r.denominator_bench = b.bench;
        r.params = a.params;
        r.numerator = ca->id();
        r.denominator = cb->id();
        // What the pair shares: the numerator without the keys the spec is about.
        Config shared{spec.numerator.mentions("platform") ? "" : ca->platform, {}};
        for (const auto& s : ca->switches)
          if (!spec.numerator.mentions(s.first) && !spec.denominator.mentions(s.first)) shared.switches.push_back(s);
        r.pair = shared.label();
        while (!r.pair.empty() && (r.pair.front() == ' ' || r.pair.front() == '/')) r.pair.erase(0, 1);
        r.value = va / vb;
        r.low = b_max > 0 ? a_min / b_max : 0;
        r.high = b_min > 0 ? a_max / b_min : 0;
        r.pass = a.pass && b.pass;
        // Two rows of one configuration come from the same boots: paired.
        // Exact only when both sides' boots repeat (virtual time).
        const bool deterministic = results.virtual_time(*ca) && results.virtual_time(*cb);
        r.stats = stats_of(a, b, spec.field, paired_run || same_config, deterministic ? Timing::Virtual : Timing::Wall);
        r.deterministic = deterministic;
        out.push_back(std::move(r));
      }
      if (spec.best_denominator && out.size() > first + 1) {
        // The fastest denominator gives the highest ratio.
        const auto best = std::max_element(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                                           [](const Ratio& x, const Ratio& y) { return x.value < y.value; });
        Ratio kept = std::move(*best);
        out.resize(first);
        out.push_back(std::move(kept));
      }
    }
  }
  return out;
}

}  // namespace pvk::bench
