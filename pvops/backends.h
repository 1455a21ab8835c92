// Constructors of each backend's pvops table (one file per backend).
#pragma once
#include "base/lib/error_or.h"
#include "pvops/auto_choice.h"
#include "pvops/mmu_ops.h"

namespace pvk {

MmuOps make_native_ops(PteAccess access);
// Registers the TLB shootdown handler with the native local flushes
// (invlpg, CR3 reload); the compiled-in image calls it too.
void install_native_shootdown();
MmuOps make_batched_ops(PteAccess access, unsigned batch);
MmuOps make_direct_ops(PteAccess access);
// Also turns on Xen's writable-pagetable assist; fails if Xen refuses.
ErrorOr<MmuOps> try_make_wrpt_ops(PteAccess access);
// Unhook-and-rehook for every table a section writes (pvops/unhook.cpp);
// batch is the queue of the tables that stay hooked.
MmuOps make_unhook_ops(PteAccess access, unsigned batch);
// Per table, queued updates or unhook-and-rehook by entry count; threshold
// 0 means "calibrate" (until calibrate_auto runs, auto never unhooks).
MmuOps make_auto_ops(PteAccess access, unsigned batch, unsigned threshold);

// What mmu=auto measured at boot (TSC ticks) and the thresholds it uses.
struct AutoCalibration {
  bool calibrated = false;  // false: auto_threshold= was given (the costs are still measured)
  AutoThresholds thresholds;
  uint64_t queued_ticks = 0;       // one queued entry (the slope of a 64-entry protect over one entry's)
  uint64_t plain_ticks = 0;        // one plain store into an unhooked table
  uint64_t table_cycle_ticks = 0;  // unhook + rehook of one table (one whole-table validation)
  uint64_t l2_store_ticks = 0;     // one L2 entry store (a ptshare gate)
  uint64_t trap_ticks = 0;         // one trapped and emulated L1 store (0: Xen refused the assist)
  uint64_t elapsed_ticks = 0;
  // Where the time went: mapping the scratch table, the timed rounds, the
  // L2-store and trap probes, unmapping it.
  uint64_t setup_ticks = 0, rounds_ticks = 0, probes_ticks = 0, teardown_ticks = 0;
};
// Runs with the kernel's tables built (a scratch table of the kernel half).
ErrorOr<AutoCalibration> calibrate_auto(Pfn kernel_root);
// Tables the unhook/auto backends hold unhooked right now.
unsigned unhooked_tables_now();

}  // namespace pvk
