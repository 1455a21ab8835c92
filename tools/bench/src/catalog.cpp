#include "pvk/bench/catalog.hpp"

#include "pvk/backends.hpp"

#include <algorithm>

namespace pvk::bench {

namespace {

// The keys of PVK_PROGRAM's variadic part, "seed, iters, ..." as the
// preprocessor spells it.
std::vector<std::string_view> split_keys(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    out.push_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
    while (list.starts_with(' ')) list.remove_prefix(1);
  }
  return out;
}

BenchInfo bench_info(std::string_view name, std::string_view suite, MemoryNeed needs, std::string_view smoke,
                     std::string_view what, bool pvk_only, std::initializer_list<std::pair<std::string_view, std::string_view>> params) {
  BenchInfo b{name, suite, {}, what, pvk_only, {}, smoke, needs};
  for (const auto& [key, defaults] : params) {
    b.params.push_back(key);
    b.defaults.push_back(defaults);
  }
  if (b.needs.per == "none") b.needs.per = {};
  return b;
}

}  // namespace

const std::vector<BenchInfo>& benchmarks() {
  static const std::vector<BenchInfo> table{
#define PVK_PARAM(key, defaults) std::pair<std::string_view, std::string_view>{#key, defaults}
#define PVK_NEEDS(param, bytes, per) MemoryNeed{#param, bytes, #per}
#define PVK_NEEDS_NOTHING MemoryNeed{}
#define PVK_BENCH(name, suite, needs, smoke, what, ...) bench_info(#name, #suite, needs, smoke, what, false, {__VA_ARGS__}),
#define PVK_BENCH_PVK(name, suite, needs, smoke, what, ...) bench_info(#name, #suite, needs, smoke, what, true, {__VA_ARGS__}),
#include "bench/benches.inc"
#undef PVK_PARAM
#undef PVK_NEEDS
#undef PVK_NEEDS_NOTHING
  };
  return table;
}

const BenchInfo* find_benchmark(std::string_view name) {
  for (const auto& b : benchmarks())
    if (b.name == name) return &b;
  return nullptr;
}

bool is_suite(std::string_view name) {
  if (name == "all" || name == "smoke") return true;
  return std::any_of(benchmarks().begin(), benchmarks().end(), [&](const BenchInfo& b) { return b.suite == name; });
}

std::vector<std::string_view> suite_members(std::string_view suite) {
  std::vector<std::string_view> out;
  // `all` is the seeds' benchmarks (the driver's in_suite): the smp suite
  // is asked for by name (default_items with --smp), calibrate by `pvk
  // calibrate`.
  for (const auto& b : benchmarks())
    if ((suite == "all" && b.suite.starts_with("seed")) || suite == "smoke" || b.suite == suite) out.push_back(b.name);
  return out;
}

const std::vector<ProgramInfo>& program_items() {
  static const std::vector<ProgramInfo> table{
#define PVK_PROGRAM(name, ...) ProgramInfo{#name, split_keys(#__VA_ARGS__)},
#include "bench/benches.inc"
  };
  return table;
}

const ProgramInfo* find_program(std::string_view name) {
  for (const auto& p : program_items())
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<std::string_view>& counter_names() {
  // The kernel's list (base/counters.inc), so records and this catalogue agree.
  static const std::vector<std::string_view> names{
#define PVK_MMU_COUNTER(name) #name,
#define PVK_MM_COUNTER(name) #name,
#define PVK_CPU_COUNTER(name) #name,
#include "base/counters.inc"
  };
  return names;
}

const std::vector<std::string_view>& key_counters() {
  static const std::vector<std::string_view> names{
      "hypercalls", "mmu_update_entries", "multicalls", "ptwr_traps", "page_faults", "cow_copies",
  };
  return names;
}

std::vector<ExtraColumn> extra_columns(std::string_view bench) {
  using K = ExtraColumn::Kind;
  if (bench == "fork_dirty")
    return {{"exit_median", "child exit", K::time},        {"rewrite_median", "parent rewrite", K::time},
            {"total_median", "fork+exit+rewrite", K::time}, {"exit_ptwr_traps", "exit ptwr_traps", K::number},
            {"exit_hypercalls", "exit hypercalls", K::number}};
  if (bench == "ctx") return {{"switch_per_op", "switch", K::time}};
  if (bench == "mprotect") return {{"per_page", "per page", K::time}};
  if (bench == "mprotect_threads") return {{"per_page", "per page", K::time}, {"thread_touches", "thread reads", K::number}};
  if (bench == "munmap_threads" || bench == "fork_threads") return {{"thread_touches", "thread writes", K::number}};
  // page_clear_cycles per op: the cycles of a fault (or an exec) spent
  // clearing pages, the part seed 001 separates from the fault path.
  if (bench.starts_with("fault_") || bench == "memset_present" || bench == "poke_full")
    return {{"page_median_cycles", "one page (cycles)", K::number},
            {"page_clear_cycles", "clearing (cycles)", K::counter},
            {"zero_page_maps", "zero_page_maps", K::counter}};
  if (bench == "forkexec" || bench == "forkwait" || bench == "kernbench")
    return {{"pages_cleared", "pages cleared", K::counter}, {"pages_copied", "pages copied", K::counter}};
  return {};
}

std::optional<std::string_view> switch_default(std::string_view key) {
  // kernel/params/boot_params.h, struct BootParams.
  if (key == "pte") return "attrs";
  if (key == "pvpatch") return "on";
  if (key == "batch") return "32";
  if (key == "zero_page") return "on";
  if (key == "pgd_cache") return "on";
  if (key == "ptshare") return "off";
  // Not a kernel switch: the A/A twin's tag (schedule.hpp), never on a
  // kernel command line; a configuration without it is the first twin.
  if (key == kTwinKey) return "1";
  // Not a kernel switch either: one CPU unless the configuration says.
  if (key == kSmpKey) return "1";
  return std::nullopt;
}

bool is_harness_key(std::string_view key) { return key == kTwinKey || key == kSmpKey; }

std::vector<std::string_view> switch_backends(std::string_view key) {
  // Natively there are only IPIs (the kernel refuses shootdown=hypercall).
  if (key == "shootdown") {
    std::vector<std::string_view> xen;
    for (const BackendInfo& b : backends())
      if (b.platform == Platform::xen) xen.push_back(b.name);
    return xen;
  }
  // The backends whose rows list the parameter (pvops/backends/backends.inc).
  return backends_taking(key);
}

}  // namespace pvk::bench
