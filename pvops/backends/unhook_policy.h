// What the unhook and auto backends share: the unhook state machine
// (unhook_tables.h) over Xen, the L1 writer that stores through it, and the
// table both start from — the common Xen verbs, with every unhooked table
// back under Xen before the queue is sent, the section ends or another root
// is loaded. Everything that is not a whole table — single entries, tables
// that cannot be unhooked — goes as batched's queued mmu_updates.
#pragma once
#include "base/arch/cross_cpu.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "hypercalls/p2m.h"
#include "pvops/backends/registry.h"
#include "pvops/backends/unhook_tables.h"
#include "pvops/backends/xen_ops.h"

namespace pvk::unhook {

struct XenEnv {
  static bool lazy() { return xen_pv::lazy(); }
  static unsigned cpu() { return xcpu::this_cpu_id(); }
  static Pfn pfn_of(Pte e) { return xen::mfn_to_pfn(Mfn{(e.raw & pte_bit::FrameMask) >> kPageShift}); }
  static Pfn pfn_of_slot(const Pte* slot) { return virt_to_pfn(slot); }
  static unsigned holders(Pfn l1) {
    const unsigned n = frame_refs().get(l1);
    return n ? n : 1;
  }
  // auto reads a table's 512 entries to price its rehook: ~3 instructions
  // an entry when eight are summed per step (the plain loop's compare and
  // set took twice that: 6 µs of each 64-page mprotect, auto against unhook).
  static unsigned present_leaves(Pfn l1) {
    static_assert(pte_bit::Present == 1 && kEntriesPerTable % 8 == 0);
    const uint64_t* t = phys_to_virt<const uint64_t>(l1);
    uint64_t n = 0;
    for (unsigned i = 0; i < kEntriesPerTable; i += 8)
      n += (t[i] & 1) + (t[i + 1] & 1) + (t[i + 2] & 1) + (t[i + 3] & 1) + (t[i + 4] & 1) + (t[i + 5] & 1) +
           (t[i + 6] & 1) + (t[i + 7] & 1);
    return static_cast<unsigned>(n);
  }
  // Updates or ops waiting: an immediate update would send them first.
  static bool queue_busy() { return xen_pv::queue().pending_updates() != 0 || xen_pv::queue().pending_ext() != 0; }
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

// The shared verbs with every unhooked table rehooked first (unhook.cpp).
ErrorOr<void> flush_lazy();
ErrorOr<void> leave_lazy();
ErrorOr<void> load_root(Pfn root);

// The table unhook and auto start from.
constexpr MmuOps table_ops(PteAccess access) {
  MmuOps ops = xen_pv::xen_ops<Policy>(access);
  ops.flush_lazy_mmu = &flush_lazy;
  ops.leave_lazy_mmu = &leave_lazy;
  ops.load_root = &load_root;
  return ops;
}

// Sets up the common Xen state (batch= sizes the queue of the tables that
// stay hooked) and the state machine's mode.
inline void init(const BackendSetup& setup, TableMode mode, AutoThresholds thresholds) {
  xen_pv::init_common(setup.batch, xen_pv::Deferral::InLazySections, setup.shootdown);
  Tables::configure(mode, thresholds);
}

}  // namespace pvk::unhook
