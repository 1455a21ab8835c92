// Xen's side of SYS_pvk_probe (kernel/proc/probes.cpp): each function makes
// one kind of hypervisor event happen `count` times with nothing else in
// between, so `pvk calibrate` can time it alone. Here because only pvops/
// speaks to Xen's MMU (docs/architecture.md); Xen PV only — the caller checks
// the platform first.
#pragma once
#include "base/lib/error_or.h"
#include "pvops/pte.h"

namespace pvk::xen_probe {

// XENVER_version hypercalls: Xen's entry and exit around almost no work.
ErrorOr<void> null_hypercalls(uint64_t count);
// The same null call, `count` times, packed 32 to a multicall: what each
// call of a multicall costs Xen beyond the multicall's own entry.
ErrorOr<void> multicall_calls(uint64_t count);
// The L1 entry that maps va in root's tables (the caller mapped va, one
// page, read-only), or null when the walk finds no table.
Pte* leaf_of(Pfn root, VirtAddr va);
// `count` (rounded up to even) mmu_update requests on `leaf`, 32 to a
// hypercall, alternately setting and clearing the write bit of an
// ordinary frame's mapping: Xen's full check of a new entry, as fork and
// mprotect make it. The leaf ends as it began.
ErrorOr<void> mmu_update_entries(Pte* leaf, uint64_t count);
// `count` (rounded up to even) plain stores into `leaf`, each trapped and
// emulated by Xen (writable page tables, turned on for the duration unless
// the backend has it on for the boot), toggling the write bit likewise.
// EOPNOTSUPP if Xen refuses the assist.
ErrorOr<void> ptwr_stores(Pte* leaf, uint64_t count);

}  // namespace pvk::xen_probe
