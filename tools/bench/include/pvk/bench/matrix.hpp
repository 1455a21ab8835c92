// The benchmark matrix: which configurations boot (platform x backend x boot
// switches), with which benchmark items, how many times, on what machine.
//
// A configuration is a platform plus a full kernel command line (bench=
// aside): "xen mmu=wrpt pgd_cache=off". Its boots run the same items; a list
// longer than bench= allows is split over several boots, and --reps N boots
// every configuration N times.
#pragma once

#include "pvk/bench/items.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pvk::bench {

using Switches = std::vector<std::pair<std::string, std::string>>;

struct Config {
  std::string platform;  // "native", "xen" (later "linux-native", "linux-xen")
  Switches switches;     // mmu first, then the others by name

  std::string cmdline() const;  // "mmu=batched pgd_cache=off": the kernel's switches only
  std::string id() const;       // platform + every switch (the harness's too): what identifies it
  std::string label() const;    // short, for tables: "xen/batched pgd_cache=off"
  // "platform" is the platform; anything else a switch given explicitly.
  std::optional<std::string> get(std::string_view key) const;
  // get(), or the switch's default (switch_default) when it is not given.
  std::optional<std::string> effective(std::string_view key) const;
  // Every dimension: platform and each switch.
  std::vector<std::string> keys() const;
  // The machine's CPUs (kSmpKey; 1 when not given).
  unsigned cpus() const;
};

// The most CPUs a machine may have (tools/pvk run --smp's limit).
inline constexpr unsigned kMaxSmp = 16;
// Sorts the switches (mmu first, then by name); throws on a repeated key
// and on an smp= that is not 1..kMaxSmp.
Config make_config(std::string platform, Switches switches);
// Parses Config::id() back.
Config config_from_id(std::string_view id);

// The fields of a text between each `sep`, empty ones kept (ids, --set values).
std::vector<std::string> split_fields(std::string_view text, char sep);

struct Machine {
  std::string memory;       // QEMU -m ("" = the runner's default)
  std::string dom0_memory;  // Xen dom0_mem ("" = the runner's default)
  unsigned cpus = 1;        // QEMU -smp, dom0_max_vcpus (the configuration's kSmpKey)
  unsigned holds_mib = 0;   // what benchmarks may map on it (items' needs: item_memory_mib)
};

// A platform the harness can boot (bench/experiments.json, "platforms"). A
// Linux platform (linux-native, linux-xen) has no backends and a runner of
// its own.
struct PlatformSpec {
  std::string name;
  std::vector<std::string> backends;  // values of mmu=, in table order
  Machine standard;                   // the default benchmark list
  Machine large;                      // --full's big items (~1.5 GB), and items that need more than standard holds
  std::chrono::seconds timeout;       // one boot of the default list
  double weight;                      // relative cost of a boot, for scheduling and the ETA
  bool variations = true;             // boots variations() (the compiled-in image has no pvops switches)
  // SMP: the configurations the default matrix also boots on machines
  // with several CPUs (smp_matrix_items() on 2 CPUs; --full adds 4),
  // without their smp= key.
  std::vector<Switches> smp_switches{};
};
const std::vector<PlatformSpec>& platform_specs();
const PlatformSpec* find_platform(std::string_view name);

// --set key=v1,v2,...
struct SetAxis {
  std::string key;
  std::vector<std::string> values;
};
SetAxis parse_set(std::string_view text);  // throws std::invalid_argument

// A one-switch departure from each base configuration that the default
// matrix adds, with only the benchmarks it is about (the seeds' before/after
// pairs, table sharing's ptshare=on). Declared in bench/experiments.json
// ("variations"); --set of the same key replaces it.
struct Variation {
  std::string key;
  std::string value;
  std::string suite;  // the benchmarks it boots: this suite's...
  std::string why;
  std::vector<std::string> benches{};  // ...or, when given, these benchmarks
  bool large = false;  // also the large-size group (--full's large_items), on its machines
  std::vector<std::pair<std::string, std::string>> also{};  // switches set with it
  std::vector<std::string> mmus{};  // only with these backends (empty: every one)
};
const std::vector<Variation>& variations();

// Benchmark lists. The default is representative and fits the 5-minute
// budget on two cores; --full adds the large fork and mprotect sizes.
// With smp = N > 1 CPUs (SMP), the seeds' suites with kernbench at
// N/2 (at least 1), N and 2N workers instead of its one-vCPU loads
// (kernbench_procs), plus the smp suite (smp_items).
std::vector<Item> default_items(unsigned smp = 1);
// kernbench's loads on N CPUs: "1+4+8" (the driver's default) for N = 1,
// else max(1, N/2), N and 2N (capped at 20, the driver's limit), each once.
std::string kernbench_procs(unsigned smp);
// The smp suite's threads= at N CPUs: "0+1", and N-1 when larger (one
// worker per CPU).
std::string smp_threads(unsigned smp);
// The thread benchmarks for N CPUs: the smp suite at threads=0, 1
// and N-1 (when larger), each at its default small and larger page counts,
// 3 reps.
Item smp_items(unsigned smp);
// The default matrix's machines with several CPUs (PlatformSpec::
// smp_switches) run only what is about them: kernbench at the N-CPU loads
// (with the jobs of jobs_smp CPUs' loads, at least N's) and the smp suite.
std::vector<Item> smp_matrix_items(unsigned smp, unsigned jobs_smp = 0);
// What one configuration of a scaling run (MatrixOptions::scaling) boots at
// N CPUs: smp_matrix_items(N) when `items` is empty (no --bench), else the
// items with threads=smp_threads(N) added to each smp-suite item that does
// not give threads, and kernbench's N-CPU loads to a kernbench item that
// does not give procs — and the same jobs= at every count of the run,
// those of its largest (top_smp), so that each kernbench line lines up.
std::vector<Item> scaling_items(const std::vector<Item>& items, unsigned smp, unsigned top_smp = 0);
std::vector<Item> large_items();
// The sparse fork: fork_dirty over one span (12,800 pages) at falling
// densities, stride=2+10+100+512 (50 %, 10 %, 1 %, one entry per L1 table;
// the default list's fork_dirty at that span is stride=1, 100 %), 5 reps.
// The default matrix adds it to the first boot of every configuration that
// runs fork_dirty (the base backends, ptshare=on, Linux): no boot of its
// own, under 1 s natively and 2-8 s under Xen per configuration.
std::vector<Item> density_items();
struct MatrixOptions {
  std::vector<std::string> platforms{"native", "xen"};
  std::vector<std::string> mmus;  // empty: every backend of each platform
  std::vector<SetAxis> sets;
  std::vector<Item> items;  // empty: default_items() + table_items() (or large_items() with full)
  bool full = false;
  bool smoke = false;  // the smoke suite, first backend of each platform, no variations
  bool with_variations = true;
  bool with_smp = true;  // false (--one-cpu): no configurations with several CPUs
  int reps = 1;  // boots per configuration
  std::optional<std::chrono::seconds> timeout;
  unsigned smp = 1;  // CPUs of every machine (--smp): the default list's SMP items
  // --smp N,M,... (two or more counts): a scaling run instead of the
  // matrix. Each platform's smp_switches configurations (those --mmu names;
  // a --set value replaces or adds its switch) boot at every count, named
  // with it (smp=N, smp=1 included), each running scaling_items(items, N).
  // No variations, no targets' sizes. Empty: not a scaling run.
  std::vector<unsigned> scaling{};
  // The run times in wall time (--wall, --smoke): a machine with several
  // CPUs then boots alone (Boot::exclusive). In virtual time its vCPUs run
  // round-robin on one host thread, and it shares the host like any other.
  bool wall_time = false;
};

// The sizes the targets (ratio.hpp, Target::in_default_matrix: table sharing's
// 128,000-page fork_dirty and mprotect) need from this configuration: their
// benchmark at their parameters, one rep, for each target whose ratio has
// this configuration on one side as a base configuration (no switch besides
// mmu= and the ones the selector names) and whose other side `run` boots
// too (its platform and backend; null: any). The default matrix boots them
// once per such configuration (not --reps times: each such boot takes
// 30-60 s under Xen), on the large machine: without --linux, fork_dirty on
// batched ptshare=on and wrpt; with it also mprotect on batched ptshare=on,
// fork_dirty on native ptshare=on, and Linux's. --full's large group has
// these sizes already and replaces them.
std::vector<Item> table_items(const Config& config, const MatrixOptions* run = nullptr);

struct Boot {
  size_t config = 0;  // index into Plan::configs
  int rep = 1;        // 1..reps
  int part = 0;       // which of the configuration's boots within one rep
  std::string group;  // which item group ("all", "large", "128000", "pgd_cache=off: seed000", ...)
  std::string bench;  // the bench= value
  std::string cmdline;
  Machine machine;
  std::chrono::seconds timeout{0};
  double weight = 1;
  // Runs with no other boot beside it: a machine with several CPUs in a
  // wall-time run (MTTCG), whose vCPUs must not wait for host CPUs another
  // QEMU holds (a shootdown waits for every target). execute() runs these
  // last. Never in virtual time: there one host thread runs every vCPU.
  bool exclusive = false;
};

struct Plan {
  std::vector<Config> configs;
  std::vector<Boot> boots;  // heaviest first
  std::vector<std::string> notes;
  std::string describe_boot(const Boot& boot) const;  // "xen/wrpt rep 1 (all)"
};

// Throws std::invalid_argument for an unknown platform or backend, an empty
// matrix, a --set of mmu/platform/bench, or items bench= cannot carry.
Plan build_plan(const MatrixOptions& options);

}  // namespace pvk::bench
