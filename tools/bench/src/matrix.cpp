#include "pvk/bench/matrix.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/item_checks.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/backends.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace pvk::bench {
namespace {

using namespace std::chrono_literals;

bool named(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// How much a backend adds to a boot's time (its row's weight: the backends
// that trap or call once per PTE write), for scheduling the longest boots
// first.
double backend_weight(std::string_view mmu) {
  const BackendInfo* backend = find_backend(mmu);
  return backend ? backend->weight : 1.0;
}

double suite_weight(std::string_view suite) {
  if (suite == "seed000") return 0.3;
  if (suite == "seed001") return 0.2;
  if (suite == "seed002") return 0.6;
  if (suite == "seed003") return 0.4;
  return 0.5;
}

struct Group {
  std::string name;
  std::vector<Item> items;
  bool large = false;
  double weight = 1;
  int boots = 0;  // boots per configuration; 0: --reps
  std::vector<Item> once{};  // run in rep 1's boot(s) only, after `items` (density_items())
};

}  // namespace

const PlatformSpec* find_platform(std::string_view name) {
  for (const auto& spec : platform_specs())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::vector<Item> large_items() {
  return {Item{"fork_dirty", {{"pages", "64000+128000"}}}, Item{"mprotect", {{"pages", "65536+128000"}}}};
}

std::vector<Item> density_items() {
  // The driver's 5 reps: the sparse forks are short (2-10 ms under Xen) and
  // TCG's noise is large at that scale. Measured on 2 loaded cores, the
  // series alone in one boot of each of the 8 fork_dirty configurations:
  // 24-38 s of boot time in all, against 23 s for the same boots with an
  // empty benchmark; i.e. up to ~15 s more, ~7 s wall at 2 jobs.
  return {Item{"fork_dirty", {{"pages", "12800"}, {"stride", "2+10+100+512"}}}};
}

namespace {

bool is_base_for(const Selector& selector, const Config& config) {
  if (!selector.matches(config)) return false;
  // A base configuration: no switch besides mmu= and the selector's own
  // (and the machine's CPUs, which --smp gives every configuration).
  return std::all_of(config.switches.begin(), config.switches.end(), [&](const auto& s) {
    return s.first == "mmu" || s.first == kSmpKey || selector.mentions(s.first);
  });
}

// Whether a run with these options boots something the selector matches:
// one of its platforms and backends, and each switch value the default, a
// --set value or a variation's.
bool could_run(const Selector& selector, const MatrixOptions* options) {
  if (!options) return true;
  auto producible = [&](const std::string& key, const std::string& value) {
    if (key == "platform")
      return named(options->platforms, value);
    if (key == "mmu")
      return options->mmus.empty() || named(options->mmus, value);
    for (const auto& axis : options->sets)
      if (axis.key == key) return std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end();
    if (switch_default(key) == value) return true;
    return options->with_variations && std::any_of(variations().begin(), variations().end(), [&](const Variation& v) {
             return v.key == key && v.value == value;
           });
  };
  return std::all_of(selector.terms.begin(), selector.terms.end(), [&](const auto& term) {
    return std::any_of(term.second.begin(), term.second.end(),
                       [&](const std::string& v) { return producible(term.first, v); });
  });
}

}  // namespace

std::vector<Item> table_items(const Config& config, const MatrixOptions* run) {
  std::vector<Item> items;
  for (const auto& t : targets()) {
    if (!t.in_default_matrix) continue;
    const auto spec = std::find_if(builtin_ratios().begin(), builtin_ratios().end(),
                                   [&](const RatioSpec& r) { return r.name == t.ratio; });
    if (spec == builtin_ratios().end()) continue;
    const bool side = (is_base_for(spec->numerator, config) && could_run(spec->denominator, run)) ||
                      (is_base_for(spec->denominator, config) && could_run(spec->numerator, run));
    if (!side) continue;
    // One rep each: fork_dirty populates, forks, exits and rewrites (~2 x
    // 128,000 page faults, 100-200 us each under Xen in TCG at this size),
    // mprotect populates and runs one RW->RO->RW cycle.
    Item item{t.bench, {}};
    for (const auto& kv : split_fields(t.params, ' ')) {
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) item.options.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    item.options.emplace_back("reps", "1");
    if (std::none_of(items.begin(), items.end(), [&](const Item& i) { return i.text() == item.text(); }))
      items.push_back(std::move(item));
  }
  return items;
}

std::string Plan::describe_boot(const Boot& boot) const {
  return fmt::format("{} rep {} ({})", configs.at(boot.config).label(), boot.rep, boot.group);
}

namespace {

// The steps of build_plan.

// Item groups: each boots on its own (and is split further if bench=
// cannot carry it in one boot).
std::vector<Group> item_groups(const MatrixOptions& options) {
  std::vector<Group> groups;
  if (!options.items.empty()) {
    groups.push_back({"items", options.items, options.full, 1.0});
  } else if (options.smoke) {
    groups.push_back({"smoke", {Item{"smoke", {}}}, false, 0.2});
  } else {
    groups.push_back({"all", default_items(options.smp), false, 1.0, 0, density_items()});
    if (options.full) groups.push_back({"large", large_items(), true, 3.0});
  }
  return groups;
}

// Backends a platform boots with only the benchmarks they are about unless
// --mmu names them (their rows' role is Focused): unhook and auto
// change how fork, exit and mprotect reach page tables, nothing else, so the
// default matrix boots them with fork_dirty (its density series and 128,000
// pages included) and mprotect, without variations; `--mmu unhook,auto`
// boots every benchmark.
std::vector<std::string> focused_backends(const PlatformSpec& spec) {
  if (const auto platform = parse_platform(spec.name)) return pvk::focused_backends(*platform);
  return {};
}

const std::vector<std::string>& focused_benches() {
  static const std::vector<std::string> benches{"fork_dirty", "mprotect"};
  return benches;
}

// Whether this backend boots focused in this run: a focused backend --mmu
// did not name (the default matrix, or --bench without --mmu).
bool boots_focused(const PlatformSpec& spec, const MatrixOptions& options, const std::string& mmu) {
  return named(focused_backends(spec), mmu) && !named(options.mmus, mmu);
}

// The --set keys (each given once); every --mmu names a known backend.
std::set<std::string> checked_set_keys(const MatrixOptions& options) {
  std::set<std::string> set_keys;
  for (const auto& axis : options.sets) {
    if (!set_keys.insert(axis.key).second)
      throw std::invalid_argument(fmt::format("--set {}= given twice", axis.key));
  }
  for (const auto& mmu : options.mmus) {
    const bool known = std::any_of(platform_specs().begin(), platform_specs().end(), [&](const PlatformSpec& p) {
      return named(p.backends, mmu) || named(focused_backends(p), mmu);
    });
    if (!known) throw std::invalid_argument(fmt::format("--mmu: no backend named '{}'", mmu));
  }
  return set_keys;
}

// Whether a boot's items (its bench= value) need more memory than the
// platform's standard machine holds; throws when even its large one holds
// too little.
bool sized_large(const PlatformSpec& spec, const std::string& bench) {
  const double need = items_memory_mib(parse_items(bench));
  if (need <= spec.standard.holds_mib) return false;
  if (need > spec.large.holds_mib)
    throw std::invalid_argument(fmt::format("benchmark items '{}' map {:.0f} MiB; the largest {} machine holds {} MiB",
                                            bench, need, spec.name, spec.large.holds_mib));
  return true;
}

enum class TargetSizes { No, Yes };

// Adds a configuration (once) and its boots: every rep of every group's
// bench= items. With TargetSizes::Yes, also the targets' sizes it is a side
// of (table_items).
void add_config(Plan& plan, std::set<std::string>& seen, const MatrixOptions& options, const PlatformSpec& spec,
                const Config& config, std::vector<Group> config_groups, TargetSizes sizes = TargetSizes::Yes) {
  if (!seen.insert(config.id()).second) return;
  // The default list: the targets' sizes where this configuration is one side (--full has them anyway).
  if (sizes == TargetSizes::Yes && options.items.empty() && !options.smoke && !options.full)
    if (std::vector<Item> sized = table_items(config, &options); !sized.empty())
      config_groups.push_back({"128000", std::move(sized), true, 2.0, 1});
  const size_t index = plan.configs.size();
  plan.configs.push_back(config);
  const double weight = spec.weight * backend_weight(config.get("mmu").value_or(""));
  const unsigned cpus = config.cpus();
  const int reps = options.reps;
  for (int rep = 1; rep <= reps; ++rep) {
    int part = 0;
    for (const auto& group : config_groups) {
      if (group.boots > 0 && rep > group.boots) continue;
      std::vector<Item> items = group.items;
      if (rep == 1) items.insert(items.end(), group.once.begin(), group.once.end());
      for (const std::string& bench : pack_items(items)) {
        // The machine the boot's items need: the large one for a large
        // group, or for items the standard one cannot hold.
        const bool large = group.large || sized_large(spec, bench);
        Boot boot;
        boot.config = index;
        boot.rep = rep;
        boot.part = part++;
        boot.group = group.name;
        boot.bench = bench;
        boot.cmdline = config.cmdline().empty() ? "bench=" + bench : config.cmdline() + " bench=" + bench;
        boot.machine = large ? spec.large : spec.standard;
        boot.machine.cpus = cpus;
        boot.exclusive = cpus > 1 && options.wall_time;
        boot.timeout = options.timeout.value_or(large ? 2 * spec.timeout : spec.timeout);
        boot.weight = weight * group.weight;
        plan.boots.push_back(std::move(boot));
      }
    }
  }
}

// The platform's backends this run asks for. A platform without pvk
// backends (Linux) boots once, with no mmu= and none of pvk's switches (no
// --set, no variations): one empty name.
std::vector<std::string> backends_for(const PlatformSpec& spec, const MatrixOptions& options) {
  std::vector<std::string> backends;
  for (const auto& b : spec.backends)
    if (options.mmus.empty() || named(options.mmus, b))
      backends.push_back(b);
  if (options.smoke && options.mmus.empty() && !backends.empty()) backends.resize(1);
  for (const auto& b : focused_backends(spec))
    if (named(options.mmus, b) || (options.mmus.empty() && !options.smoke)) backends.push_back(b);
  if (spec.backends.empty()) backends.emplace_back();
  return backends;
}

// The machine's CPUs as a configuration key, when --smp asks for more than one.
Switches machine_switches(unsigned smp) {
  if (smp <= 1) return {};
  return {{std::string(kSmpKey), std::to_string(smp)}};
}

// The --set cross product for one backend, each switch only where it matters.
std::vector<Switches> crossed_switches(const std::string& mmu, const MatrixOptions& options) {
  Switches base = machine_switches(options.smp);
  if (!mmu.empty()) base.emplace_back("mmu", mmu);
  std::vector<Switches> crossed{base};
  for (const auto& axis : options.sets) {
    if (mmu.empty()) break;
    const auto only = switch_backends(axis.key);
    if (!only.empty() && std::find(only.begin(), only.end(), mmu) == only.end()) continue;
    std::vector<Switches> next;
    for (const auto& base : crossed)
      for (const auto& value : axis.values) {
        Switches s = base;
        s.emplace_back(axis.key, value);
        next.push_back(std::move(s));
      }
    crossed = std::move(next);
  }
  return crossed;
}

// The groups a one-switch variation boots: the standard-size groups (and
// the large ones if it says so), narrowed to the variation's suite or
// benchmarks.
std::vector<Group> variation_groups(const std::vector<Group>& groups, const Variation& v) {
  std::vector<Group> narrowed;
  std::string what = v.suite;
  for (const auto& b : v.benches) what += (what.empty() ? "" : ",") + b;
  for (const auto& g : groups) {
    if (g.large && !v.large) continue;
    auto narrow = [&](const std::vector<Item>& list) {
      return v.benches.empty() ? restrict_to_suite(list, v.suite) : restrict_to_benches(list, v.benches);
    };
    std::vector<Item> items = narrow(g.items);
    if (items.empty()) continue;
    double weight = g.weight;
    if (!g.large) {
      weight = 0;
      if (!v.suite.empty()) weight += suite_weight(v.suite);
      for (const auto& b : v.benches)
        if (const BenchInfo* info = find_benchmark(b)) weight += suite_weight(info->suite) / 2;
    }
    narrowed.push_back({fmt::format("{}={}: {}{}", v.key, v.value, g.large ? g.name + " " : "", what),
                        std::move(items), g.large, weight, g.boots, narrow(g.once)});
  }
  return narrowed;
}

// SMP: the default matrix also boots each platform's smp_switches on
// 2 CPUs (--full: and 4) with smp_matrix_items(), unless --smp gave every
// machine its CPUs, --bench its own list, --smoke the smoke list, --set its
// own cross product, --one-cpu asked for none, or --mmu left the configuration's backend out. No
// variations, no targets' sizes: the one-CPU configurations have those.
void add_smp_configs(Plan& plan, std::set<std::string>& seen, const MatrixOptions& options) {
  if (!options.with_smp || options.smp > 1 || !options.items.empty() || options.smoke || !options.sets.empty()) return;
  std::vector<unsigned> counts{2};
  if (options.full) counts.push_back(4);
  for (const auto& name : options.platforms) {
    const PlatformSpec* spec = find_platform(name);
    if (!spec) continue;
    for (const Switches& switches : spec->smp_switches) {
      const auto mmu = std::find_if(switches.begin(), switches.end(), [](const auto& s) { return s.first == "mmu"; });
      if (mmu != switches.end() && !options.mmus.empty() && !named(options.mmus, mmu->second)) continue;
      for (unsigned n : counts) {
        Switches with = switches;
        for (auto& s : machine_switches(n)) with.push_back(std::move(s));
        add_config(plan, seen, options, *spec, make_config(name, with),
                   {{fmt::format("{} CPUs", n), smp_matrix_items(n), false, 1.0}}, TargetSizes::No);
      }
    }
  }
}

// A scaling run's configurations of one platform's smp_switches entry:
// each --set value replaces its switch or adds it (where the switch
// applies to the backend; Linux takes none).
std::vector<Switches> scaling_switches(const Switches& base, const MatrixOptions& options) {
  std::vector<Switches> crossed{base};
  const auto mmu = std::find_if(base.begin(), base.end(), [](const auto& s) { return s.first == "mmu"; });
  if (mmu == base.end()) return crossed;
  for (const auto& axis : options.sets) {
    const auto only = switch_backends(axis.key);
    if (!only.empty() && std::find(only.begin(), only.end(), mmu->second) == only.end()) continue;
    std::vector<Switches> next;
    for (const auto& switches : crossed)
      for (const auto& value : axis.values) {
        Switches with = switches;
        std::erase_if(with, [&](const auto& s) { return s.first == axis.key; });
        with.emplace_back(axis.key, value);
        next.push_back(std::move(with));
      }
    crossed = std::move(next);
  }
  return crossed;
}

// The scaling run (MatrixOptions::scaling): the SMP configurations of each
// platform at every count. smp=1 is named too, so that every row of the
// scaling table says its CPUs.
void add_scaling_configs(Plan& plan, std::set<std::string>& seen, const MatrixOptions& options) {
  if (options.smoke || options.full)
    throw std::invalid_argument("--smp with several counts is a scaling run of the smp suite; not with --smoke or --full");
  const unsigned top = *std::max_element(options.scaling.begin(), options.scaling.end());
  for (const auto& name : options.platforms) {
    const PlatformSpec* spec = find_platform(name);
    if (!spec) throw std::invalid_argument(fmt::format("no platform named '{}'", name));
    if (spec->smp_switches.empty())
      plan.notes.push_back(fmt::format("platform {} skipped: it has no configurations with several CPUs", name));
    for (const Switches& base : spec->smp_switches) {
      const auto mmu = std::find_if(base.begin(), base.end(), [](const auto& s) { return s.first == "mmu"; });
      if (mmu != base.end() && !options.mmus.empty() && !named(options.mmus, mmu->second)) continue;
      for (const Switches& switches : scaling_switches(base, options))
        for (unsigned n : options.scaling) {
          Switches with = switches;
          with.emplace_back(std::string(kSmpKey), std::to_string(n));
          add_config(plan, seen, options, *spec, make_config(name, with),
                     {{fmt::format("{} CPU{}", n, n == 1 ? "" : "s"), scaling_items(options.items, n, top), false, 1.0}},
                     TargetSizes::No);
        }
    }
  }
}

}  // namespace

Plan build_plan(const MatrixOptions& options) {
  if (options.reps < 1) throw std::invalid_argument("--reps must be at least 1");
  // --bench: what the driver would refuse is refused here, before any boot.
  for (const auto& item : options.items) check_item(item);
  Plan plan;
  const std::vector<Group> groups = item_groups(options);
  const std::set<std::string> set_keys = checked_set_keys(options);
  std::set<std::string> seen;
  if (!options.scaling.empty()) {
    add_scaling_configs(plan, seen, options);
    if (plan.boots.empty()) throw std::invalid_argument("the matrix is empty");
    std::stable_sort(plan.boots.begin(), plan.boots.end(),
                     [](const Boot& a, const Boot& b) { return a.weight > b.weight; });
    return plan;
  }

  for (const auto& name : options.platforms) {
    const PlatformSpec* spec = find_platform(name);
    if (!spec) {
      std::string known;
      for (const auto& p : platform_specs()) known += (known.empty() ? "" : ", ") + p.name;
      throw std::invalid_argument(fmt::format("no platform named '{}' (known: {})", name, known));
    }
    const std::vector<std::string> backends = backends_for(*spec, options);
    if (backends.empty()) {
      plan.notes.push_back(fmt::format("platform {} skipped: none of its backends was asked for", name));
      continue;
    }

    for (const auto& mmu : backends) {
      const bool focused = boots_focused(*spec, options, mmu);
      std::vector<Group> mmu_groups = groups;
      if (focused) {
        // As a variation of the backend switch narrowed to its benchmarks.
        const Variation as{"mmu", mmu, "", "", focused_benches(), true};
        mmu_groups = variation_groups(groups, as);
        if (mmu_groups.empty()) continue;
      }
      for (const auto& switches : crossed_switches(mmu, options)) {
        const Config base = make_config(name, switches);
        add_config(plan, seen, options, *spec, base, mmu_groups);
        if (!options.with_variations || options.smoke || mmu.empty() || !spec->variations || focused) continue;
        for (const auto& v : variations()) {
          if (set_keys.count(v.key) || base.effective(v.key) == v.value) continue;
          if (!v.mmus.empty() && std::find(v.mmus.begin(), v.mmus.end(), mmu) == v.mmus.end()) continue;
          const std::vector<Group> narrowed = variation_groups(groups, v);
          if (narrowed.empty()) continue;
          Switches with = switches;
          with.emplace_back(v.key, v.value);
          for (const auto& also : v.also) with.push_back(also);
          add_config(plan, seen, options, *spec, make_config(name, with), narrowed);
        }
      }
    }
  }
  add_smp_configs(plan, seen, options);
  if (plan.boots.empty()) throw std::invalid_argument("the matrix is empty");
  std::stable_sort(plan.boots.begin(), plan.boots.end(),
                   [](const Boot& a, const Boot& b) { return a.weight > b.weight; });
  return plan;
}

}  // namespace pvk::bench
