#include "pvk/bench/catalog.hpp"

#include "pvk/backends.hpp"

#include <algorithm>

namespace pvk::bench {

const std::vector<BenchInfo>& benchmarks() {
  static const std::vector<BenchInfo> table{
      {"getpid", "seed000", {"iters"}, "getpid()"},
      {"getppid", "seed000", {"iters"}, "getppid(), the null system call"},
      {"segv", "seed000", {"iters"}, "store to a read-only page, SIGSEGV handler mprotects it writable"},
      {"divzero", "seed000", {"iters"}, "divide by zero, SIGFPE handler longjmps out"},
      {"forkwait", "seed000", {"iters"}, "fork + child exit + wait"},
      {"lat_pipe", "seed000", {"iters"}, "one-byte round trip between two processes over pipes"},
      {"ctx", "seed000", {"procs", "working_set", "iters"}, "token passed round a ring of processes (per hop)"},
      {"fault_zero_read", "seed001", {"pages"}, "read fault on fresh anonymous memory (zero page)"},
      {"fault_zero_cow", "seed001", {"pages"}, "write after a read fault (COW of the zero page)"},
      {"fault_write", "seed001", {"pages"}, "write fault on fresh anonymous memory (allocate + clear)"},
      {"poke_full", "seed001", {"pages"}, "write fault plus a memset of the whole new page (the seed's Poke_full)"},
      {"forkexec", "seed001", {"iters"}, "fork + child execs a small program (kbworker, exits at once) + wait"},
      {"memset_present", "seed001", {"pages"}, "memset of a present 4 KiB page"},
      {"mprotect", "seed002", {"pages", "loops"}, "mprotect RW->RO->RW of N present dirty pages (per cycle)"},
      {"cpa", "seed002", {"pages"}, "set_memory_wc then set_memory_wb over N kernel pages, timed in the kernel (per call; pvk only)",
       true},
      {"kernbench", "seed002", {"procs", "jobs", "pages", "source_kb"},
       "compile-like jobs (exec, source read from a pipe, faults, mprotect, fork, exit) by procs concurrent workers: "
       "procs=1/4/8 = the seed's half/optimal/maximal load (per job)"},
      {"fork_dirty", "seed003", {"pages", "stride"},
       "fork after dirtying N pages (every stride-th of them), parent side (exit: child exit + reap; rewrite: the "
       "parent writes every dirtied page again; total: the three)"},
      // Issue 15: threads of one address space, on other CPUs with --smp.
      {"mprotect_threads", "smp", {"pages", "threads", "loops"},
       "mprotect RW->RO->RW of N present pages while K threads keep reading them: the TLB shootdown per mprotect "
       "(per cycle)"},
      {"munmap_threads", "smp", {"pages", "threads", "loops"},
       "mmap + write + munmap of N pages while K threads spin on other memory of the process (per cycle)"},
      {"fork_threads", "smp", {"pages", "threads"},
       "fork + child exit + wait of a process with N dirty pages and K more threads running"},
      {"fault_threads", "smp", {"pages", "threads"},
       "the main thread and K threads each write-fault their own N fresh pages at once (per fault of all 1+K): "
       "page-fault scalability"},
      {"ctx_threads", "smp", {"threads", "iters"},
       "token passed round a ring of 1+K threads by futex wake/wait (per hop; threads=0: the same calls, no switch)"},
      // `pvk calibrate` (calibration.hpp): each event the cost model prices, alone.
      {"calibrate", "calibrate", {"event", "count"},
       "one event of the cost model, timed alone (event=K: calibration_events()[K]; per event)", true},
  };
  return table;
}

const BenchInfo* find_benchmark(std::string_view name) {
  for (const auto& b : benchmarks())
    if (b.name == name) return &b;
  return nullptr;
}

bool is_suite(std::string_view name) {
  return name == "all" || name == "smoke" || name == "seed000" || name == "seed001" || name == "seed002" ||
         name == "seed003" || name == "smp" || name == "calibrate";
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
