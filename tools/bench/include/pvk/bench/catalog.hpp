// What the harness knows about the benchmark suite (docs/benchmarks.md) and the
// kernel's boot switches. Everything here is a small table; the harness works
// with benchmarks, parameters, counters and switches it does not know (they
// simply get no special treatment).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk::bench {

// The memory one parameter set of a benchmark maps (bench/benches.inc,
// PVK_NEEDS): bytes per unit of `param`'s value, times 1 + `per`'s value
// ("" none). A benchmark with no param needs nothing a machine lacks.
struct MemoryNeed {
  std::string_view param;
  uint64_t bytes_per_unit = 0;
  std::string_view per;
};

struct BenchInfo {
  std::string_view name;
  std::string_view suite;                  // "seed000" ...
  std::vector<std::string_view> params;    // keys, besides reps (which every benchmark takes)
  std::string_view what;                   // one line for the summary
  bool pvk_only = false;                   // needs a pvk system call: Linux boots leave it out
  std::vector<std::string_view> defaults;  // each param's default values ("1+64+4096"), as params
  std::string_view smoke;                  // the smoke suite's options ("pages=16")
  MemoryNeed needs;
};

// The driver's benchmarks (bench/benches.inc, which the driver's table is
// built from too), in its order.
const std::vector<BenchInfo>& benchmarks();
const BenchInfo* find_benchmark(std::string_view name);

// The driver's suites: all, smoke, and each benchmark's (seed000..seed003,
// smp, calibrate).
bool is_suite(std::string_view name);
// The members of a suite (smoke: every benchmark; all: the seeds'
// benchmarks, not the smp or calibrate suites').
std::vector<std::string_view> suite_members(std::string_view suite);

// The programs the driver runs as items (hostile, sysfuzz: PVK_PROGRAM in
// bench/benches.inc) and the options each takes.
struct ProgramInfo {
  std::string_view name;
  std::vector<std::string_view> keys;
};
const std::vector<ProgramInfo>& program_items();
const ProgramInfo* find_program(std::string_view name);

// The counters every pvk record carries (deltas over the median rep), in the
// record's order.
const std::vector<std::string_view>& counter_names();
// The counters the Markdown tables show (the ones that explain a time).
const std::vector<std::string_view>& key_counters();

// One extra column of a benchmark's table: a record field shown next to the
// time (fork_dirty's child exit, ctx's switch cost, ...).
struct ExtraColumn {
  enum class Kind {
    time,     // ns, formatted like the times
    number,   // shown as it is
    counter,  // a counter delta of the median rep, shown per op like the others
  };
  std::string_view field;
  std::string_view heading;
  Kind kind;
};
std::vector<ExtraColumn> extra_columns(std::string_view bench);

// The key that tells the two sides of an A/A experiment apart (schedule.hpp,
// add_aa_twins): a configuration's twin has twin=2. The harness's own: the
// kernel never sees it (the twin's boots carry the original's command line).
inline constexpr std::string_view kTwinKey = "twin";

// The machine's CPUs (SMP): QEMU -smp N, Xen's dom0_max_vcpus, a
// domU's vcpus. A configuration key like a switch, so that selectors and
// tables tell "native smp=2" from "native"; the kernel never sees it (it
// counts the CPUs it finds).
inline constexpr std::string_view kSmpKey = "smp";

// Keys of a configuration that are the harness's, not the kernel's: never
// on a kernel command line.
bool is_harness_key(std::string_view key);

// A boot switch's value when the command line does not give it (the
// kernel's BootParams defaults); nullopt for switches without a known default.
// mmu= has none: its default depends on the platform, so the harness always
// passes it.
std::optional<std::string_view> switch_default(std::string_view key);

// The backends a switch changes anything for (batch= only matters to the
// batched queue); empty = every backend. Crossing a switch with a backend it
// does not affect would only repeat the same configuration.
std::vector<std::string_view> switch_backends(std::string_view key);

}  // namespace pvk::bench
