// kernel_main: the environment-neutral half of boot. Entry points (native
// PVH, Xen PV) hand over a Platform and a BootInfo; from here on nothing
// asks where we run except through g_platform and pvops.
#include "base/arch/cpu.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/boot_info.h"
#include "arch/finish.h"
#include "arch/fpu/fpu.h"
#include "base/lib/lock_stats.h"
#include "base/lib/fault_inject.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "kernel/fs/mount_root.h"
#include "kernel/params/boot_params.h"
#include "kernel/selftest/selftest.h"
#include "base/frames/frame_allocator.h"
#include "mm/address_space.h"
#include "mm/kernel_space.h"
#include "kernel/proc/process.h"
#include "kernel/boot/select.h"
#include "arch/smp/percpu.h"
#include "pvops/call/pvop.h"
#include "pvops/call/pvpatch.h"

namespace pvk {
namespace {

// A switch as the command line spells it (the boot record echoes it so).
const char* on_off(Switch s) { return s == Switch::On ? "on" : "off"; }

BootParams g_params;

// Which kernel image this is: the pvops one, or the compiled-in native
// baseline (no table, nothing to patch).
#if PVK_BUILTIN_NATIVE
constexpr bool kBuiltinImage = true;
#else
constexpr bool kBuiltinImage = false;
#endif
constexpr const char* kImageVariant = kBuiltinImage ? "builtin" : "pvops";

[[noreturn]] void refuse(const char* line);

constexpr uint64_t kTimeSliceNs = 10'000'000;

// init=: run the program as pid 1; the boot passes if it exits 0 and every
// frame it and its descendants used came back.
static_assert(static_cast<unsigned>(FailKind::Count) == kFaultSites, "fail= kinds are the fault-injection sites");

void configure_fault_injection() {
  FaultRate rates[kFaultSites];
  for (unsigned i = 0; i < kFaultSites; ++i) rates[i] = {g_params.fail[i].num, g_params.fail[i].den};
  fault_inject_configure(rates, g_params.fail_seed);
}

// One record per run with fail=: how many operations of each kind were
// made to fail, out of how many tried, that the run survived.
bool fault_injection_configured() {
  for (const FailRate& r : g_params.fail)
    if (r.den) return true;
  return false;
}

void report_fault_injection() {
  if (!fault_injection_configured()) return;
  Record r("fault_injection");
  r.u64("seed", g_params.fail_seed);
  for (unsigned i = 0; i < kFaultSites; ++i) {
    const FaultSite site = static_cast<FaultSite>(i);
    const FaultSiteStats st = fault_inject_stats(site);
    char key[32];
    format(key, sizeof key, "%s_injected", fault_site_name(site));
    r.u64(key, st.injected);
    format(key, sizeof key, "%s_trials", fault_site_name(site));
    r.u64(key, st.trials);
  }
}

// A comma-separated list parameter (the parser refused more than
// kMaxBenchItems items) as argv[1..], copied into `copy` (the words are cut
// in place); argv[0] is already set and argv has kMaxBenchItems + 2 slots.
template <size_t N>
void split_list(const char (&list)[N], char (&copy)[N], const char** argv) {
  memcpy(copy, list, N);
  unsigned argc = 1;
  for (char* p = copy; *p && argc <= kMaxBenchItems;) {
    argv[argc++] = p;
    while (*p && *p != ',') ++p;
    if (*p) *p++ = 0;
  }
  argv[argc] = nullptr;
}

bool run_init(const char* const* argv) {
  const char* program = argv[0];
  set_mm_policy({.zero_page = g_params.zero_page == Switch::On,
                 .pgd_cache = g_params.pgd_cache == Switch::On,
                 .ptshare = g_params.ptshare == Switch::On,
                 .file_demand = g_params.file_map == FileMap::Demand,
                 .fault_around = g_params.fault_around});
  const uint64_t before = frames().free_count();
  configure_fault_injection();
  // Which CPUs run processes. Under Xen only the boot vCPU unless asked:
  // with processes on two vCPUs, nested Xen under TCG spends most of its
  // time in its own cross-CPU TLB flushes for every page-table type change
  // (proctest at --smp 2 took 10-20x as long as at --smp 1 on a loaded
  // host, against 1x with the other vCPUs idle).
  const bool xen = g_platform->handle_event != nullptr;
  set_sched_all_cpus(g_params.sched_cpus == SchedCpus::All || (g_params.sched_cpus == SchedCpus::Default && !xen));
  g_platform->start_timer(kTimeSliceNs);
  auto status = start_init(argv);  // fail= is armed while the processes run
  if (status.is_error()) {
    char line[128];
    format(line, sizeof line, "pvk: boot parameter 'init': cannot start '%s' (%s)", program, errno_name(status.error()));
    refuse(line);
  }
  must(drain_root_cache(), "drain root cache");
  const uint64_t after = frames().free_count();
  const int ws = status.value();
  {
    Record r("init_exit");
    r.str("program", program)
        .boolean("exited", abi::WIFEXITED(ws))
        .i64("code", abi::WIFEXITED(ws) ? abi::WEXITSTATUS(ws) : -1)
        .i64("signal", abi::WIFSIGNALED(ws) ? abi::WTERMSIG(ws) : 0)
        .u64("free_frames_before", before)
        .u64("free_frames_after", after);
#define PVK_MM_COUNTER(name) r.u64(#name, g_mm_stats.name);
#include "base/counters.inc"
  }  // the record is emitted here, before anything below prints
  report_fault_injection();
  if (after != before) kprintf("pvk: processes leaked %ld frames\n", static_cast<int64_t>(before - after));
  // Under fail= the workload is expected to see errors (a fork that says
  // ENOMEM fails a test that needed it); the run judges the kernel: it kept
  // going, and every frame came back.
  if (fault_injection_configured()) return after == before;
  return abi::WIFEXITED(ws) && abi::WEXITSTATUS(ws) == 0 && after == before;
}

// pvpatch=: rewrite the pvops call sites for the chosen backend (or, with
// off, only check them), before anything else runs through them.
void patch_call_sites() {
  if (kBuiltinImage) return;
  char failure[160];
  auto patched = patch_pvop_sites(g_params.pvpatch == Switch::On, failure, sizeof failure);
  if (patched.is_error()) refuse(failure);
  const PatchReport& p = patched.value();
  Record("pvpatch")
      .str("pvpatch", on_off(g_params.pvpatch))
      .u64("sites", p.sites)
      .u64("direct", p.direct)
      .u64("inlined", p.inlined)
      .u64("inline_pte_flags", p.flags_mask)
      .u64("inline_pte_val", p.identity)
      .u64("inline_pte_pfn", p.native_pfn)
      .u64("inline_make_pte", p.native_make)
      .u64("inline_lazy_mmu", p.lazy_tlb)
      .u64("native_body", p.native_body)
      .u64("generic_jumps", p.generic_jumps)
      .u64("native_copies", p.native_copies)
      .u64("generic_copies", p.generic_copies)
      .u64("attrs_copies", p.attrs_copies)
      .u64("flags_copies", p.flags_copies)
      .u64("unpatched", p.unpatched)
      .u64("verified", p.verified);
}

// The root filesystem (docs/rootfs.md): unpacked before the baseline of
// free frames is taken, so the frames its files hold are not a leak; a
// refused archive ends the boot like a refused parameter.
void mount_root_filesystem(const BootInfo& info) {
  fs::MountReport report;
  char why[192];
  if (!fs::mount_root(info, report, why, sizeof why)) {
    char line[208];
    format(line, sizeof line, "pvk: %s", why);
    kprintf("%s\n", line);
    Record("error").str("message", line);
    finish(ExitStatus::Fail, "root filesystem archive refused");
  }
  Record("rootfs")
      .u64("archive_bytes", report.archive_bytes)
      .u64("archive_frames_freed", report.archive_frames_freed)
      .u64("nodes", report.nodes)
      .u64("frames_held", report.frames_held);
}

[[noreturn]] void refuse(const char* line) {
  kprintf("%s\n", line);
  Record("error").str("message", line);
  finish(ExitStatus::Fail, "bad boot parameter");
}

// Runs (or, with dry_run, only checks) each test of a comma-separated list.
bool run_selftests(const char* list, bool dry_run) {
  bool all = true;
  for (const char* p = list; *p;) {
    const char* end = p;
    while (*end && *end != ',') ++end;
    const Selftest* t = find_selftest(p, static_cast<unsigned>(end - p));
    if (!t) {
      char names[128], line[192];
      list_selftests(names, sizeof names);
      format(line, sizeof line, "pvk: boot parameter 'selftest': no test named '%.*s' (accepted: %s)",
             static_cast<int>(end - p), p, names);
      refuse(line);
    }
    if (!dry_run) {
      kprintf("pvk: selftest %s\n", t->name);
      all &= t->run();
    }
    p = *end ? end + 1 : end;
  }
  return all;
}

}  // namespace

uint64_t g_boot_tsc = 0;

void kernel_main(Platform& platform, BootInfo& info) {
  g_platform = &platform;
  g_boot_tsc = info.boot_tsc;
  kprintf("pvk: booting (%s, %s), command line '%s'\n", platform.name, platform.role, info.cmdline);

  if (auto parsed = parse_boot_params(info.cmdline, g_params); parsed.is_error()) refuse(parsed.error().message);
  run_selftests(g_params.selftest, /*dry_run=*/true);
  if (auto selected = select_mmu_backend(platform, g_params); selected.is_error()) refuse(selected.error().message);
  patch_call_sites();

  if (auto r = init_frames(info); r.is_error()) panic("frame allocator: %s", errno_name(r.error()));
  if (auto r = build_kernel_space(info); r.is_error()) panic("kernel page tables: %s", errno_name(r.error()));
  if (platform.kernel_space_ready) platform.kernel_space_ready();
  if (auto r = init_user_mm(); r.is_error()) panic("zero page: %s", errno_name(r.error()));
  if (auto r = finish_mmu_backend(kernel_root(), &tsc_to_ns); r.is_error())
    panic("mmu=%s: %s", mmu_name(), errno_name(r.error()));
  mount_root_filesystem(info);

  const uint64_t baseline = frames().free_count();
  {
    Record r("boot");
    r.str("platform", platform.name)
        .str("role", platform.role)
        .str("mmu", mmu_name())
        .str("pte", g_params.pte == PteAccess::Flags ? "flags" : "attrs")
        .str("pvpatch", kBuiltinImage ? "n/a" : on_off(g_params.pvpatch))
        .str("image", kImageVariant)
        .str("zero_page", on_off(g_params.zero_page))
        .str("pgd_cache", on_off(g_params.pgd_cache))
        .str("ptshare", on_off(g_params.ptshare))
        .str("file_map", g_params.file_map == FileMap::Demand ? "demand" : "eager")
        .u64("fault_around", g_params.fault_around)
        .str("sched_cpus", g_params.sched_cpus == SchedCpus::All    ? "all"
                           : g_params.sched_cpus == SchedCpus::Boot ? "boot"
                                                                    : "default")
        .u64("auto_threshold", mmu_backend_facts().thresholds.unhook_at)
        .u64("auto_share_threshold", mmu_backend_facts().thresholds.share_at)
        .u64("tsc_khz", platform.tsc_khz)
        .boolean("smep", platform.smep)
        .boolean("smap", platform.smap)
        .u64("cpus", smp::counts().found())
        .u64("cpus_online", smp::counts().online())
        .u64("boot_ns", tsc_to_ns(cpu::rdtsc() - info.boot_tsc))
        .str("fpu", fpu::method_name(fpu::config().method))
        .u64("fpu_size", fpu::config().size)
        .u64("xcr0", fpu::config().xcr0)
        .u64("free_frames", baseline)
        .u64("total_frames", frames().max_pfn());
    add_counters(r, g_mmu_counters);
  }

  bool pass = true;
  const char* failure = nullptr;
  if (g_params.selftest[0] && !run_selftests(g_params.selftest, /*dry_run=*/false))
    pass = false, failure = "selftest failed";
  if (g_params.init[0]) {
    // init=PROG, with init_args=A,B,... as its arguments.
    static char args[sizeof g_params.init_args];
    const char* argv[kMaxBenchItems + 2] = {g_params.init};
    split_list(g_params.init_args, args, argv);
    if (!run_init(argv)) pass = false, failure = failure ? failure : "init failed or leaked frames";
  } else if (g_params.bench[0]) {
    // bench=A,B:k=v,... runs the benchmark driver with one argument per item.
    static char items[sizeof g_params.bench];
    const char* argv[kMaxBenchItems + 2] = {"bench"};
    split_list(g_params.bench, items, argv);
    if (!run_init(argv)) pass = false, failure = failure ? failure : "benchmarks failed or leaked frames";
  }

  // The lock statistics of the whole boot, a record per class: what a
  // reader of the run checks "no kernel lock on this path" against.
  for (unsigned i = 0; i < kLockStats; ++i) {
    const LockCounts c = lock_counts(static_cast<LockStat>(i));
    Record("locks")
        .str("class", lock_stat_name(static_cast<LockStat>(i)))
        .u64("acquired", c.acquired)
        .u64("contended", c.contended)
        .u64("spins", c.spins);
  }
  const uint64_t after = frames().free_count();
  Record("frames").u64("free_frames_before", baseline).u64("free_frames_after", after).boolean("leak", after != baseline);
  if (after != baseline) {
    kprintf("pvk: frame leak: %lu free at start, %lu at end\n", baseline, after);
    finish(ExitStatus::Fail, "frame leak");
  }
  finish(pass ? ExitStatus::Pass : ExitStatus::Fail, failure);
}

}  // namespace pvk
