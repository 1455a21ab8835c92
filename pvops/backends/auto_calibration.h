// What mmu=auto measures at boot, and the measuring (auto_calibration.cpp).
#pragma once
#include "base/lib/error_or.h"
#include "pvops/backends/auto_choice.h"
#include "pvops/pte.h"

namespace pvk::unhook {

// What mmu=auto measured at boot (TSC ticks) and the thresholds it uses.
struct AutoCalibration {
  bool calibrated = false;  // false: auto_threshold= was given (the costs are still measured)
  AutoThresholds thresholds;
  uint64_t queued_ticks = 0;       // one queued entry (the slope of a 64-entry protect over one entry's)
  uint64_t plain_ticks = 0;        // one plain store into an unhooked table
  uint64_t table_cycle_ticks = 0;  // unhook + rehook of one full table (one whole-table validation)
  uint64_t empty_cycle_ticks = 0;  // the same for a table holding one leaf
  uint64_t split_ticks = 0;        // an unhook begun with one entry queued, over one begun with none
  uint64_t l2_store_ticks = 0;     // one L2 entry store (a ptshare gate)
  uint64_t trap_ticks = 0;         // one trapped and emulated L1 store (0: Xen refused the assist)
  uint64_t elapsed_ticks = 0;
  // Where the time went: mapping the scratch table, the timed rounds, the
  // L2-store and trap probes, unmapping it.
  uint64_t setup_ticks = 0, rounds_ticks = 0, probes_ticks = 0, teardown_ticks = 0;
};

// Runs with the kernel's tables built (a scratch table of the kernel half);
// leaves the thresholds it found (or was given) in force.
ErrorOr<AutoCalibration> calibrate_auto(Pfn kernel_root);

}  // namespace pvk::unhook
