// unhook and auto: the Xen backends that write whole L1 tables with plain
// stores after taking them out of Xen's hands (pvops/unhook_tables.h has the
// state machine and the Xen facts it rests on). unhook does so for every
// table an operation announces inside a lazy-MMU section; auto only when the
// operation will store at least auto_threshold entries into the table (and,
// under ptshare=on, lets fork share a table only above its own threshold).
// Everything else — single entries, tables that cannot be unhooked — goes
// as batched's queued mmu_updates.
#include "base/arch/cpu.h"
#include "base/arch/probe.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "base/layout.h"
#include "hypercalls/hypercall.h"
#include "hypercalls/p2m.h"
#include "pvops/backends.h"
#include "pvops/fault_locking.h"
#include "pvops/ops_builder.h"
#include "pvops/unhook_tables.h"
#include "pvops/xen_policy.h"

namespace pvk {
namespace {

struct XenEnv {
  static bool lazy() { return xen_pv::lazy(); }
  static Pfn pfn_of(Pte e) { return xen::mfn_to_pfn(Mfn{(e.raw & pte_bit::FrameMask) >> kPageShift}); }
  static Pfn pfn_of_slot(const Pte* slot) { return virt_to_pfn(slot); }
  static unsigned holders(Pfn l1) {
    const unsigned n = frame_refs().get(l1);
    return n ? n : 1;
  }
  static ErrorOr<void> set_l2(Pte* slot, Pte v) {
    // An unhook or rehook must not stop at one refusal (fail= injects them):
    // a table left half-way would leave its range unmapped.
    xen_pv::MustComplete must;
    return xen_pv::update_now(xen::machine_address(slot) | MMU_NORMAL_PT_UPDATE, v.raw);
  }
  static ErrorOr<void> set_alias(Pfn l1, bool writable) {
    return xen_pv::remap_accessor(l1, writable ? pte_flags::KernelRw : pte_flags::KernelRo);
  }
  static ErrorOr<void> queued(Pte* slot, Pte v, bool preserve_ad) {
    return xen_pv::update_queued(xen::machine_address(slot) | (preserve_ad ? MMU_PT_UPDATE_PRESERVE_AD : MMU_NORMAL_PT_UPDATE),
                                 v.raw);
  }
  [[noreturn]] static void fatal(const char* what) { panic("unhook: %s", what); }
};

using Tables = UnhookTables<XenEnv>;

struct UnhookL1Writer {
  static ErrorOr<void> store(Pte* slot, Pte v) { return Tables::store(slot, v, false); }
  static ErrorOr<void> commit(Pte* slot, Pte v) { return Tables::store(slot, v, true); }
  static ErrorOr<void> begin_table(Pte* l2_slot, VirtAddr base, unsigned entries) {
    return Tables::begin_table(l2_slot, base, entries);
  }
  static Pte l2_entry(const Pte* slot) { return Tables::l2_entry(slot); }
  static ErrorOr<void> before_l2_store(Pte* slot, Pte v) { return Tables::before_l2_store(slot, v); }
  static ErrorOr<void> flush() {
    TRY(Tables::rehook_all());
    return xen_pv::flush_lazy();
  }
};

using Policy = xen_pv::XenPolicy<UnhookL1Writer>;
static_assert(MmuPolicy<Policy>);
static_assert(Policy::kTableHints);

// The shared verbs this backend wraps: every unhooked table is back before
// the queue is sent, the section ends or another root is loaded.
ErrorOr<void> (*g_common_leave)() = nullptr;
ErrorOr<void> (*g_common_load_root)(Pfn) = nullptr;
ErrorOr<bool> (*g_walk_share_table)(Pfn, Pfn, VirtAddr, unsigned, LazyMmuSection&) = nullptr;

ErrorOr<void> flush_lazy() { return UnhookL1Writer::flush(); }
ErrorOr<void> leave_lazy() {
  auto rehooked = Tables::rehook_all();
  auto left = g_common_leave();
  return rehooked.is_error() ? rehooked : left;
}
ErrorOr<void> load_root(Pfn root) {
  TRY(Tables::rehook_all());
  return g_common_load_root(root);
}

// auto under ptshare=on: fork shares a table only when it holds at least the
// calibrated number of leaves (mm's own minimum still applies).
ErrorOr<bool> auto_share_table(Pfn parent, Pfn child, VirtAddr va, unsigned min_leaves, LazyMmuSection& section) {
  const unsigned at = Tables::thresholds().share_at;
  const bool shared = TRY(g_walk_share_table(parent, child, va, at > min_leaves ? at : min_leaves, section));
  if (shared) count_event(g_mmu_counters.auto_shared);
  return shared;
}

MmuOps make_ops(const char* name, PteAccess access, unsigned batch, TableMode mode, AutoThresholds thresholds) {
  xen_pv::configure({name, batch, /*defer_in_lazy=*/true});
  Tables::configure(mode, thresholds);
  g_fault_locking = FaultLocking::KernelLock;  // the unhooked tables are kernel-wide (pvops/fault_locking.h)
  MmuOps ops = make_mmu_ops<Policy>(name, access);
  xen_pv::install_common(ops);
  g_common_leave = ops.leave_lazy_mmu;
  g_common_load_root = ops.load_root;
  ops.flush_lazy_mmu = &flush_lazy;
  ops.leave_lazy_mmu = &leave_lazy;
  ops.load_root = &load_root;
  if (mode == TableMode::Auto) {
    g_walk_share_table = ops.range.share_table;
    ops.range.share_table = &auto_share_table;
  }
  return ops;
}

// --- calibration (mmu=auto without auto_threshold=) ---

// A 2 MiB stretch of the kernel's scratch region no selftest uses.
constexpr VirtAddr kCalibrationVa{PVK_SCRATCH_BASE + (uint64_t{64} << 30)};
// Three rounds, the cheapest of each timing kept (a round the host
// preempted does not count, unless all three were). The queued slope comes
// from kQueuedEntries entries (512 queued entries cost a millisecond under
// TCG and measured the same slope); the plain slope from a whole table, as a
// plain store is ~10x cheaper than a queued entry and 64 of them vanish in a
// rehook's noise (wall time on a loaded host put one boot's threshold at
// 512); the table cycle from a table of 512 present leaves, as fork's tables
// are full and a rehook validates every present entry. Under TCG the
// rehooks dominate what remains (0.15-0.4 ms each).
constexpr unsigned kRounds = 3;
constexpr unsigned kQueuedEntries = 64;
constexpr unsigned kPlainEntries = kEntriesPerTable;

template <typename Walk>
uint64_t timed_protect(Pfn root, unsigned pages, PteFlags set, PteFlags clear) {
  const uint64_t t0 = cpu::rdtsc();
  LazyMmuSection section(root);
  auto r = Walk::protect(root, kCalibrationVa, pages, set, clear, section);
  must(section.finish(), "calibration section");
  must(r, "calibration protect");
  return cpu::rdtsc() - t0;
}

uint64_t min_of(uint64_t a, uint64_t b) { return a < b ? a : b; }

// The L2 entry over va (the calibration's table exists: it was just mapped).
Pte* l2_slot_of(Pfn root, VirtAddr va) {
  Pte* table = phys_to_virt<Pte>(root);
  for (Level l = Level::L4; l != Level::L2; l = below(l)) table = phys_to_virt<Pte>(XenEnv::pfn_of(table[index_at(va, l)]));
  return &table[index_at(va, Level::L2)];
}

}  // namespace

unsigned unhooked_tables_now() { return Tables::unhooked(); }

MmuOps make_unhook_ops(PteAccess access, unsigned batch) {
  return make_ops("unhook", access, batch, TableMode::Unhook, {});
}

MmuOps make_auto_ops(PteAccess access, unsigned batch, unsigned threshold) {
  // Until calibrated, auto is batched (it never unhooks) and shares like mm asks.
  return make_ops("auto", access, batch, TableMode::Auto, {threshold, threshold});
}

ErrorOr<AutoCalibration> calibrate_auto(Pfn kernel_root) {
  using Walk = PageWalk<Policy, PteAccess::Attrs>;
  AutoCalibration c{};
  const uint64_t start = cpu::rdtsc();
  const AutoThresholds given = Tables::thresholds();
  // One frame mapped 512 times, read-only: a full table of leaves for the
  // cost of one frame.
  const Pfn frame = TRY(frames().try_alloc());
  static Pfn repeated[kEntriesPerTable];
  for (Pfn& p : repeated) p = frame;
  {
    // Filled with plain stores and hooked once: cheaper than 512 queued entries.
    LazyMmuSection section(kernel_root);
    Tables::configure(TableMode::Auto, {1, 0});
    auto r = Walk::map(kernel_root, kCalibrationVa, kEntriesPerTable, FrameSource{repeated, {}}, pte_flags::KernelRo);
    auto f = section.finish();
    if (r.is_error() || f.is_error()) {
      frames().must_free(frame);
      Tables::configure(TableMode::Auto, given);
      return r.is_error() ? r.error() : f.error();
    }
  }
  // The write bit, as fork and mprotect change it: Xen's mod_l1_entry
  // takes its fast path (no revalidation of the frame) only for changes
  // within FASTPATH_FLAG_WHITELIST (NX, A/D, global, user, available bits),
  // so toggling Dirty would time a cheaper update than the ones that matter.
  // The frame is an ordinary one nothing writes through.
  uint64_t mark = start;
  auto lap = [&mark](uint64_t& into) {
    const uint64_t now = cpu::rdtsc();
    into = now - mark;
    mark = now;
  };
  lap(c.setup_ticks);
  const PteFlags write{pte_bit::Write};
  uint64_t queued = ~uint64_t{0}, queued_one = ~uint64_t{0}, full = ~uint64_t{0}, one = ~uint64_t{0};
  for (unsigned round = 0; round < kRounds; ++round) {
    // Each timing toggles the write bit of present leaves (set on some, cleared
    // on others: every leaf is stored either way, so the counts are exact).
    Tables::configure(TableMode::Auto, {0, 0});  // never unhook
    queued = min_of(queued, timed_protect<Walk>(kernel_root, kQueuedEntries, write, {}));
    queued_one = min_of(queued_one, timed_protect<Walk>(kernel_root, 1, {}, write));
    Tables::configure(TableMode::Auto, {1, 0});  // always unhook
    full = min_of(full, timed_protect<Walk>(kernel_root, kPlainEntries, {}, write));
    one = min_of(one, timed_protect<Walk>(kernel_root, 1, write, {}));
  }
  // A section's own cost (enter, TLB flush, leave) is in every timing once:
  // the one-entry runs carry it, so differences cancel it.
  c.queued_ticks = queued > queued_one ? (queued - queued_one) / (kQueuedEntries - 1) : 0;
  c.plain_ticks = full > one ? (full - one) / (kPlainEntries - 1) : 0;
  c.table_cycle_ticks = one > queued_one ? one - queued_one : 0;
  lap(c.rounds_ticks);
  // One L2 store (a gate toggle, as ptshare makes them), timed.
  {
    Pte* l2 = l2_slot_of(kernel_root, kCalibrationVa);
    const uint64_t t0 = cpu::rdtsc();
    must(Policy::store(l2, Pte{l2->raw & ~pte_bit::Write}, Level::L2), "calibration gate");
    must(Policy::store(l2, Pte{l2->raw | pte_bit::Write}, Level::L2), "calibration gate");
    c.l2_store_ticks = (cpu::rdtsc() - t0) / 2;
  }
  // One trap-and-emulate store (wrpt's way), where Xen allows it: the
  // cheapest of a few (the first pays for Xen's emulator warming up).
  if (xen::vm_assist(VMASST_CMD_enable, VMASST_TYPE_writable_pagetables) >= 0) {
    Pte* l1 = phys_to_virt<Pte>(XenEnv::pfn_of(*l2_slot_of(kernel_root, kCalibrationVa)));
    uint64_t best = ~uint64_t{0};
    for (unsigned k = 0; k < 4; ++k) {
      const uint64_t t0 = cpu::rdtsc();
      if (!probe_write_u64(&l1[k].raw, l1[k].raw)) break;
      best = min_of(best, cpu::rdtsc() - t0);
    }
    c.trap_ticks = best == ~uint64_t{0} ? 0 : best;
    xen::vm_assist(VMASST_CMD_disable, VMASST_TYPE_writable_pagetables);
  }
  lap(c.probes_ticks);
  {
    LazyMmuSection section(kernel_root, OnRefusal::Retry);
    Tables::configure(TableMode::Auto, {1, 0});
    auto r = Walk::unmap(kernel_root, kCalibrationVa, kEntriesPerTable, {}, section);
    must(section.finish(), "calibration teardown");
    must(r, "calibration unmap");
  }
  frames().must_free(frame);
  lap(c.teardown_ticks);
  c.thresholds = given;
  if (c.thresholds.unhook_at == 0) {
    c.calibrated = true;
    c.thresholds.unhook_at = threshold_from_costs(c.queued_ticks, c.plain_ticks, c.table_cycle_ticks);
    c.thresholds.share_at = share_threshold_from_costs(c.queued_ticks, c.l2_store_ticks, c.table_cycle_ticks);
  }
  Tables::configure(TableMode::Auto, c.thresholds);
  c.elapsed_ticks = cpu::rdtsc() - start;
  return c;
}

}  // namespace pvk
