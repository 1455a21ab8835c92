// auto: unhook's mechanism chosen per table — an operation's stores into one
// L1 table are queued updates below auto_threshold entries and unhook the
// table from it on (auto_choice.h); under ptshare=on fork shares a table
// only above its own threshold. Both thresholds are calibrated once the
// kernel's tables exist (the finish hook) unless auto_threshold= gives them.
#include "base/console/record.h"
#include "pvops/backends/auto_calibration.h"
#include "pvops/backends/unhook_policy.h"

namespace pvk::backends {
namespace {

// auto under ptshare=on: fork shares a table only when it holds at least the
// calibrated number of leaves (mm's own minimum still applies).
template <PteAccess A>
ErrorOr<bool> share_table(Pfn parent, Pfn child, VirtAddr va, unsigned min_leaves, LazyMmuSection& section) {
  using Share = walk::TableShare<unhook::Policy, A>;
  const unsigned at = unhook::Tables::thresholds().share_at;
  const bool shared = TRY(Share::share_table(parent, child, va, at > min_leaves ? at : min_leaves, section));
  if (shared) count_event(g_mmu_counters.auto_shared);
  return shared;
}

}  // namespace

ErrorOr<MmuOps, BackendRefusal> auto_ops(const BackendSetup& setup) {
  // Until calibrated, auto is batched (it never unhooks) and shares like mm asks.
  unhook::init(setup, TableMode::Auto, {setup.auto_threshold, setup.auto_threshold});
  MmuOps ops = unhook::table_ops(setup.pte);
  ops.range.share_table = setup.pte == PteAccess::Flags ? &share_table<PteAccess::Flags> : &share_table<PteAccess::Attrs>;
  return ops;
}

// The thresholds: the break-even of a queued entry against one table's unhook
// and rehook, measured here (a few hundred microseconds), unless
// auto_threshold= gave it (the costs are measured and reported anyway).
ErrorOr<BackendFacts> finish_auto(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t)) {
  const unhook::AutoCalibration c = TRY(unhook::calibrate_auto(kernel_root));
  Record("auto_calibration")
      .boolean("calibrated", c.calibrated)
      .u64("auto_threshold", c.thresholds.unhook_at)
      .u64("auto_threshold_empty", c.thresholds.unhook_at_empty)
      .u64("auto_threshold_busy_extra", c.thresholds.busy_extra)
      .u64("auto_share_threshold", c.thresholds.share_at)
      .u64("queued_entry_ns", ticks_to_ns(c.queued_ticks))
      .u64("plain_store_ns", ticks_to_ns(c.plain_ticks))
      .u64("unhook_rehook_ns", ticks_to_ns(c.table_cycle_ticks))
      .u64("unhook_rehook_empty_ns", ticks_to_ns(c.empty_cycle_ticks))
      .u64("queue_split_ns", ticks_to_ns(c.split_ticks))
      .u64("l2_store_ns", ticks_to_ns(c.l2_store_ticks))
      .u64("trap_ns", ticks_to_ns(c.trap_ticks))
      .u64("calibration_us", ticks_to_ns(c.elapsed_ticks) / 1000)
      .u64("setup_us", ticks_to_ns(c.setup_ticks) / 1000)
      .u64("rounds_us", ticks_to_ns(c.rounds_ticks) / 1000)
      .u64("probes_us", ticks_to_ns(c.probes_ticks) / 1000)
      .u64("teardown_us", ticks_to_ns(c.teardown_ticks) / 1000);
  return BackendFacts{c.thresholds};
}

}  // namespace pvk::backends
