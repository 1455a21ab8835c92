// mmu=auto's calibration: the costs its threshold is the break-even of,
// measured at boot on a scratch table of the kernel half (auto_choice.h has
// the arithmetic; the auto_calibration record reports what was measured).
#include "pvops/backends/auto_calibration.h"

#include "base/arch/cpu.h"
#include "base/arch/probe.h"
#include "base/layout.h"
#include "hypercalls/hypercall.h"
#include "pvops/backends/unhook_policy.h"
#include "pvops/tlb/lazy_mmu_section.h"

namespace pvk::unhook {
namespace {

// A 2 MiB stretch of the kernel's scratch region no selftest uses.
constexpr VirtAddr kCalibrationVa{PVK_SCRATCH_BASE + (uint64_t{64} << 30)};
// Three rounds, the cheapest of each timing kept (a round the host
// preempted does not count, unless all three were). Then the same table with
// one leaf left gives the rehook's cost for a nearly empty table (Xen
// validates present entries only). The queued slope comes
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

// timed_protect's one-entry unhook, begun with one update already queued
// (the write bit of the table's last leaf, toggled): the unhook's L2 clear
// sends it first, in a hypercall of its own, as fork's queued child L2
// entry is sent before the tables auto unhooks.
template <typename Walk>
uint64_t timed_busy_unhook(Pfn root, Pte* l1, PteFlags set, PteFlags clear) {
  Pte* last = &l1[kEntriesPerTable - 1];
  const uint64_t t0 = cpu::rdtsc();
  LazyMmuSection section(root);
  must(XenEnv::queued(last, Pte{last->raw ^ pte_bit::Write}, false), "calibration queued entry");
  auto r = Walk::protect(root, kCalibrationVa, 1, set, clear, section);
  must(section.finish(), "calibration section");
  must(r, "calibration busy protect");
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
  Pte* const l1 = phys_to_virt<Pte>(XenEnv::pfn_of(*l2_slot_of(kernel_root, kCalibrationVa)));
  uint64_t queued = ~uint64_t{0}, queued_one = ~uint64_t{0}, full = ~uint64_t{0}, one = ~uint64_t{0};
  uint64_t one_busy = ~uint64_t{0};
  for (unsigned round = 0; round < kRounds; ++round) {
    // Each timing toggles the write bit of present leaves (set on some, cleared
    // on others: every leaf is stored either way, so the counts are exact).
    Tables::configure(TableMode::Auto, {0, 0});  // never unhook
    queued = min_of(queued, timed_protect<Walk>(kernel_root, kQueuedEntries, write, {}));
    queued_one = min_of(queued_one, timed_protect<Walk>(kernel_root, 1, {}, write));
    Tables::configure(TableMode::Auto, {1, 0});  // always unhook
    // Every leaf writable first (untimed), so each of full's stores really
    // clears the bit: the unhook then devalidates 512 writable mappings
    // (a writable type reference dropped each) where `one`'s devalidates
    // read-only ones, and that difference belongs to the per-entry price,
    // as fork's and mprotect's stores all change the write bit. Without it
    // 449 of the 512 stores rewrote an unchanged entry: 65 ns a store
    // instead of 116 (virtual time).
    timed_protect<Walk>(kernel_root, kPlainEntries, write, {});
    full = min_of(full, timed_protect<Walk>(kernel_root, kPlainEntries, {}, write));
    one = min_of(one, timed_protect<Walk>(kernel_root, 1, write, {}));
  }
  // Rounds of their own, so the figures above see the leaves as they always
  // did: the leaf `one` set is cleared behind a queued entry (a real change,
  // as in `one`), then set again untimed.
  for (unsigned round = 0; round < kRounds; ++round) {
    one_busy = min_of(one_busy, timed_busy_unhook<Walk>(kernel_root, l1, {}, write));
    timed_protect<Walk>(kernel_root, 1, write, {});
  }
  // A section's own cost (enter, TLB flush, leave) is in every timing once:
  // the one-entry runs carry it, so differences cancel it.
  c.queued_ticks = queued > queued_one ? (queued - queued_one) / (kQueuedEntries - 1) : 0;
  c.plain_ticks = full > one ? (full - one) / (kPlainEntries - 1) : 0;
  c.table_cycle_ticks = one > queued_one ? one - queued_one : 0;
  // The queued entry would have cost its slope in the batch anyway: the
  // split is what the early send adds beyond that.
  c.split_ticks = one_busy > one + c.queued_ticks ? one_busy - one - c.queued_ticks : 0;
  // The table with one leaf left: its rehook validates one entry.
  {
    LazyMmuSection section(kernel_root, OnRefusal::Retry);
    Tables::configure(TableMode::Auto, {0, 0});
    auto r = Walk::unmap(kernel_root, kCalibrationVa + kPageSize, kEntriesPerTable - 1, {}, section);
    must(section.finish(), "calibration thinning");
    must(r, "calibration thinning");
  }
  uint64_t queued_sparse = ~uint64_t{0}, one_sparse = ~uint64_t{0};
  for (unsigned round = 0; round < kRounds; ++round) {
    Tables::configure(TableMode::Auto, {0, 0});
    queued_sparse = min_of(queued_sparse, timed_protect<Walk>(kernel_root, 1, write, {}));
    Tables::configure(TableMode::Auto, {1, 0});
    one_sparse = min_of(one_sparse, timed_protect<Walk>(kernel_root, 1, {}, write));
  }
  c.empty_cycle_ticks = one_sparse > queued_sparse ? one_sparse - queued_sparse : 0;
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
    auto r = Walk::unmap(kernel_root, kCalibrationVa, 1, {}, section);
    must(section.finish(), "calibration teardown");
    must(r, "calibration unmap");
  }
  frames().must_free(frame);
  lap(c.teardown_ticks);
  c.thresholds = given;
  if (c.thresholds.unhook_at == 0) {
    c.calibrated = true;
    c.thresholds.unhook_at = threshold_from_costs(c.queued_ticks, c.plain_ticks, c.table_cycle_ticks);
    c.thresholds.unhook_at_empty = threshold_from_costs(c.queued_ticks, c.plain_ticks, c.empty_cycle_ticks);
    c.thresholds.share_at = share_threshold_from_costs(c.queued_ticks, c.l2_store_ticks, c.table_cycle_ticks);
    c.thresholds.busy_extra = busy_extra_from_costs(c.queued_ticks, c.plain_ticks, c.split_ticks);
  }
  Tables::configure(TableMode::Auto, c.thresholds);
  c.elapsed_ticks = cpu::rdtsc() - start;
  return c;
}

}  // namespace pvk::unhook
