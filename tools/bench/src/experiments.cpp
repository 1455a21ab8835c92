#include "pvk/bench/experiments.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/json_fields.hpp"
#include "pvk/backends.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace pvk::bench {

extern const std::string_view kExperimentsJson;  // experiments_data.cpp, generated

namespace {

// "k=v k=v" (a configuration's switches, as a command line has them).
Switches switches_of(JsonFields& f, std::string_view key, const std::string& text) {
  Switches out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    const size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
      f.fail(key, fmt::format("'{}' is not key=value", word));
    out.emplace_back(word.substr(0, eq), word.substr(eq + 1));
  }
  return out;
}

Machine machine_of(JsonFields& parent, std::string_view key, const std::string& file) {
  JsonFields f(parent.member(key, false), file, parent.where(key));
  Machine m;
  m.memory = f.str("memory", "");
  m.dom0_memory = f.str("dom0_memory", "");
  const double holds = f.number("holds_mib");
  if (!(holds > 0) || holds != std::floor(holds)) f.fail("holds_mib", "expected a whole number of MiB above 0");
  m.holds_mib = static_cast<unsigned>(holds);
  f.done();
  return m;
}

PlatformSpec platform_of(JsonFields& f, const std::string& file) {
  PlatformSpec p;
  p.name = f.str("name");
  if (p.name.empty()) f.fail("name", "empty");
  // Which backends the platform boots comes from the backend registry
  // (pvops/backends/backends.inc), never a list here: "matrix" is every
  // backend of that platform the default matrix crosses, "default" only the
  // platform's default one, "none" a platform without pvk backends (Linux).
  const std::string which = f.str("backends");
  if (which != "none") {
    const std::string of = f.str("backends_of");
    if (of != "native" && of != "xen") f.fail("backends_of", "expected native or xen");
    const Platform platform = of == "xen" ? Platform::xen : Platform::native;
    if (which == "matrix")
      p.backends = matrix_backends(platform);
    else if (which == "default")
      p.backends = {default_backend(platform)};
    else
      f.fail("backends", "expected matrix, default or none");
  }
  p.standard = machine_of(f, "standard", file);
  p.large = machine_of(f, "large", file);
  const double timeout = f.number("timeout_s");
  if (!(timeout > 0) || timeout != std::floor(timeout)) f.fail("timeout_s", "expected whole seconds above 0");
  p.timeout = std::chrono::seconds{static_cast<long>(timeout)};
  p.weight = f.number("weight");
  if (!(p.weight > 0)) f.fail("weight", "expected a number above 0");
  p.variations = f.boolean("variations", true);
  for (const auto& s : f.strings("smp_switches", std::vector<std::string>{}))
    p.smp_switches.push_back(switches_of(f, "smp_switches", s));
  f.done();
  return p;
}

Variation variation_of(JsonFields& f) {
  Variation v;
  v.key = f.str("key");
  v.value = f.str("value");
  if (v.key.empty() || v.value.empty()) f.fail(v.key.empty() ? "key" : "value", "empty");
  v.suite = f.str("suite", "");
  if (!v.suite.empty() && !is_suite(v.suite)) f.fail("suite", fmt::format("no suite named '{}'", v.suite));
  v.why = f.str("why");
  v.benches = f.strings("benches", std::vector<std::string>{});
  for (const auto& b : v.benches)
    if (!find_benchmark(b)) f.fail("benches", fmt::format("no benchmark named '{}'", b));
  if (v.suite.empty() == v.benches.empty()) f.fail("suite", "give a suite or benches, one of the two");
  v.large = f.boolean("large", false);
  v.also = switches_of(f, "also", f.str("also", ""));
  v.mmus = f.strings("mmus", std::vector<std::string>{});
  f.done();
  return v;
}

Selector selector_of(JsonFields& f, std::string_view key) {
  const std::string text = f.str(key, "");
  if (text.empty()) return {};
  try {
    return parse_selector(text);
  } catch (const std::invalid_argument& e) {
    f.fail(key, e.what());
  }
}

RatioSpec ratio_of(JsonFields& f) {
  RatioSpec r;
  r.name = f.str("name");
  if (r.name.empty()) f.fail("name", "empty");
  r.numerator = selector_of(f, "numerator");
  r.denominator = selector_of(f, "denominator");
  r.about = f.str("about");
  r.field = f.str("field", "");
  r.numerator_bench = f.str("numerator_bench", "");
  r.denominator_bench = f.str("denominator_bench", "");
  if (r.numerator_bench.empty() != r.denominator_bench.empty())
    f.fail(r.numerator_bench.empty() ? "numerator_bench" : "denominator_bench", "name a benchmark on both sides or on neither");
  r.best_denominator = f.boolean("best_denominator", false);
  r.vary = f.str("vary", "");
  r.vary_base = f.str("vary_base", "");
  if (r.vary.empty() != r.vary_base.empty()) f.fail(r.vary.empty() ? "vary" : "vary_base", "give vary and vary_base together");
  r.workers_per_cpu = f.boolean("workers_per_cpu", false);
  if (r.workers_per_cpu && !r.vary.empty()) f.fail("workers_per_cpu", "not with vary");
  f.done();
  return r;
}

Target target_of(JsonFields& f, const std::set<std::string>& ratios) {
  Target t;
  t.goal = f.str("goal");
  t.ratio = f.str("ratio");
  if (!ratios.count(t.ratio)) f.fail("ratio", fmt::format("no ratio named '{}'", t.ratio));
  t.bench = f.str("bench", "");
  if (!t.bench.empty() && !find_benchmark(t.bench)) f.fail("bench", fmt::format("no benchmark named '{}'", t.bench));
  t.params = f.str("params", "");
  t.at_most = f.number("at_most");
  if (!(t.at_most > 0)) f.fail("at_most", "expected a ratio above 0");
  t.relative_to = f.str("relative_to", "");
  if (!t.relative_to.empty() && !ratios.count(t.relative_to))
    f.fail("relative_to", fmt::format("no ratio named '{}'", t.relative_to));
  t.each_pair = f.boolean("each_pair", false);
  t.in_default_matrix = f.boolean("in_default_matrix", false);
  t.sparse_too = f.boolean("sparse_too", false);
  t.somewhere = f.boolean("somewhere", false);
  t.retired = f.str("retired", "");
  t.needs = f.str("needs", "");
  if (t.bench.empty() && !t.somewhere) f.fail("bench", "missing (only a somewhere goal may take any benchmark)");
  f.done();
  return t;
}

SeedFigure seed_figure_of(JsonFields& f, const std::set<std::string>& ratios) {
  using Claim = SeedFigure::Claim;
  SeedFigure s;
  s.seed = f.str("seed");
  s.experiment = f.str("experiment");
  s.figure = f.str("figure");
  s.value = f.number("value", 0.0);
  const std::string claim = f.str("claim");
  if (claim == "no_difference") s.claim = Claim::no_difference;
  else if (claim == "below_one") s.claim = Claim::below_one;
  else if (claim == "above_one") s.claim = Claim::above_one;
  else if (claim == "reference") s.claim = Claim::reference;
  else f.fail("claim", fmt::format("'{}' is not no_difference, below_one, above_one or reference", claim));
  s.ratio = f.str("ratio", "");
  if (!s.ratio.empty() && !ratios.count(s.ratio)) f.fail("ratio", fmt::format("no ratio named '{}'", s.ratio));
  s.bench = f.str("bench", "");
  if (!s.bench.empty() && !find_benchmark(s.bench)) f.fail("bench", fmt::format("no benchmark named '{}'", s.bench));
  s.params = f.str("params", "");
  s.needs = f.str("needs", "");
  f.done();
  return s;
}

Seed000Runs seed000_runs_of(JsonFields& f) {
  Seed000Runs r;
  r.bench = f.str("bench");
  if (!find_benchmark(r.bench)) f.fail("bench", fmt::format("no benchmark named '{}'", r.bench));
  r.before = f.numbers("before");
  r.after = f.numbers("after");
  if (r.before.size() < 2 || r.after.size() < 2) f.fail(r.before.size() < 2 ? "before" : "after", "expected two runs or more");
  f.done();
  return r;
}

WorkerParam worker_param_of(JsonFields& f) {
  WorkerParam w;
  w.param = f.str("param");
  if (w.param.empty()) f.fail("param", "empty");
  const double plus = f.number("plus", 0.0);
  if (plus < 0 || plus != static_cast<unsigned>(plus)) f.fail("plus", "expected a whole number, 0 or more");
  w.plus = static_cast<unsigned>(plus);
  f.done();
  return w;
}

SeedLine seed_line_of(JsonFields& f) {
  SeedLine l;
  l.name = f.str("name");
  l.pages = f.numbers("pages");
  l.us = f.numbers("us");
  if (l.pages.size() < 2) f.fail("pages", "expected two points or more");
  if (l.us.size() != l.pages.size()) f.fail("us", "expected one time per page count");
  f.done();
  return l;
}

}  // namespace

Experiments parse_experiments(std::string_view text, const std::string& name) {
  JsonValue json;
  try {
    json = JsonValue::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message names the byte; keep it to one line.
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw JsonFieldError(fmt::format("{}: not JSON: {}", name, what));
  }
  JsonFields top(json, name, "");
  Experiments x;
  std::set<std::string> names;
  for (auto& f : top.objects("platforms")) {
    x.platforms.push_back(platform_of(f, name));
    if (!names.insert(x.platforms.back().name).second) f.fail("name", "a second platform of that name");
  }
  for (auto& f : top.objects("variations")) x.variations.push_back(variation_of(f));
  std::set<std::string> ratios;
  for (auto& f : top.objects("ratios")) {
    x.ratios.push_back(ratio_of(f));
    if (!ratios.insert(x.ratios.back().name).second) f.fail("name", "a second ratio of that name");
  }
  for (auto& f : top.objects("targets")) x.targets.push_back(target_of(f, ratios));
  for (auto& f : top.objects("seed_figures")) x.seed_figures.push_back(seed_figure_of(f, ratios));
  for (auto& f : top.objects("seed000_runs")) x.seed000_runs.push_back(seed000_runs_of(f));
  {
    JsonFields f(top.member("seed001_split", false), name, "seed001_split");
    x.seed001_split.config = f.str("config");
    x.seed001_split.fault = f.number("fault");
    x.seed001_split.clearing = f.number("clearing");
    x.seed001_split.poke_full = f.number("poke_full", 0.0);
    x.seed001_split.cow = f.number("cow", 0.0);
    x.seed001_verdict = f.str("verdict");
    f.done();
  }
  for (auto& f : top.objects("seed003_lines")) x.seed003_lines.push_back(seed_line_of(f));
  {
    JsonFields f(top.member("seed003_per_page", false), name, "seed003_per_page");
    x.seed003_per_page.platform = f.str("platform");
    x.seed003_per_page.switch_name = f.str("switch");
    x.seed003_per_page.numerator = f.str("numerator");
    x.seed003_per_page.denominator = f.str("denominator");
    if (x.seed003_per_page.numerator == x.seed003_per_page.denominator) f.fail("denominator", "the same as numerator");
    f.done();
  }
  // The scaling table's reading of the rows (scaling.hpp); a file without
  // it has no worker parameters, and so no scaling table.
  if (json.contains("scaling")) {
    JsonFields f(top.member("scaling", false), name, "scaling");
    for (auto& w : f.objects("workers")) x.scaling.workers.push_back(worker_param_of(w));
    x.scaling.counters = f.strings("counters", std::vector<std::string>{});
    x.scaling.counter_prefixes = f.strings("counter_prefixes", std::vector<std::string>{});
    f.done();
  }
  top.done();
  return x;
}

std::string_view experiments_text() { return kExperimentsJson; }

const Experiments& experiments() {
  static const Experiments x = parse_experiments(kExperimentsJson, "bench/experiments.json");
  return x;
}

// The accessors the rest of the harness reads the experiments through.
const std::vector<PlatformSpec>& platform_specs() { return experiments().platforms; }
const std::vector<Variation>& variations() { return experiments().variations; }
const std::vector<RatioSpec>& builtin_ratios() { return experiments().ratios; }
const std::vector<Target>& targets() { return experiments().targets; }
const std::vector<SeedFigure>& seed_figures() { return experiments().seed_figures; }

}  // namespace pvk::bench
