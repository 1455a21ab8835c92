// The Xen PV MMU policy, parameterised by how an L1 store travels (the only
// thing the batched/direct and wrpt backends disagree on). Upper levels
// always go by hypercall at once: Xen requires it, and the walk reads them
// back immediately.
#pragma once
#include <concepts>

#include "hypercalls/p2m.h"
#include "pvops/mmu_policy.h"
#include "pvops/backends/xen_common.h"

namespace pvk::xen_pv {

// A writer that works table by table (unhook_policy.h) also provides
// begin_table/l2_entry/before_l2_store/flush (see MmuPolicy's kTableHints).
template <typename W>
concept TableWriter = requires(Pte* slot, Pte v) {
  { W::begin_table(slot, VirtAddr{}, 1u) } -> std::same_as<ErrorOr<void>>;
  { W::l2_entry(slot) } -> std::same_as<Pte>;
  { W::before_l2_store(slot, v) } -> std::same_as<ErrorOr<void>>;
  { W::flush() } -> std::same_as<ErrorOr<void>>;
};

template <typename L1Writer>
struct XenPolicy {
  static ErrorOr<void> store(Pte* slot, Pte v, Level level) {
    count_event(g_mmu_counters.pte_writes);
    if (level == Level::L1) return L1Writer::store(slot, v);
    if constexpr (TableWriter<L1Writer>)
      if (level == Level::L2) TRY(L1Writer::before_l2_store(slot, v));
    if (level == Level::L4) return store_l4(slot, v);
    return update_now(xen::machine_address(slot) | MMU_NORMAL_PT_UPDATE, v.raw);
  }
  // Xen keeps hardware A/D bits for us: PRESERVE_AD on commit (queued
  // writers) or the trapped store's emulation (wrpt) merges them.
  static Pte modify_prot_start(Pte* slot) { return Pte{__atomic_load_n(&slot->raw, __ATOMIC_RELAXED)}; }
  static ErrorOr<void> modify_prot_commit(Pte* slot, Pte, Pte v) {
    count_event(g_mmu_counters.pte_writes);
    return L1Writer::commit(slot, v);
  }
  static Pte make(Pfn pfn, PteFlags f) {
    // Xen refuses a writable mapping of a page-table frame.
    if (is_page_table(pfn)) f = f.without(pte_bit::Write);
    return Pte{(raw(xen::pfn_to_mfn(pfn)) << kPageShift) | f.bits};
  }
  static Pte make_table(Pfn pfn) {
    return Pte{(raw(xen::pfn_to_mfn(pfn)) << kPageShift) | pte_flags::Table.bits};
  }
  static Pfn pfn_of(Pte e) { return xen::mfn_to_pfn(Mfn{(e.raw & pte_bit::FrameMask) >> kPageShift}); }
  static ErrorOr<void> prepare_table(Pfn pfn, Level level) { return xen_pv::prepare_table(pfn, level); }
  static ErrorOr<void> retire_table(Pfn pfn, Level level) { return xen_pv::retire_table(pfn, level); }
  static ErrorOr<void> flush_queue() {
    if constexpr (TableWriter<L1Writer>)
      return L1Writer::flush();
    else
      return flush_lazy();
  }
  static constexpr bool kTableHints = TableWriter<L1Writer>;
  static ErrorOr<void> begin_table(Pte* l2_slot, VirtAddr base, unsigned entries) {
    if constexpr (TableWriter<L1Writer>)
      return L1Writer::begin_table(l2_slot, base, entries);
    else
      return {};
  }
  static Pte l2_entry(const Pte* slot) {
    if constexpr (TableWriter<L1Writer>)
      return L1Writer::l2_entry(slot);
    else
      return *slot;
  }
};

// batched and direct: L1 updates are mmu_update requests, queued (batched)
// or sent one by one (direct: a queue of one that never defers).
struct QueuedL1Writer {
  static ErrorOr<void> store(Pte* slot, Pte v) {
    return update_queued(xen::machine_address(slot) | MMU_NORMAL_PT_UPDATE, v.raw);
  }
  static ErrorOr<void> commit(Pte* slot, Pte v) {
    return update_queued(xen::machine_address(slot) | MMU_PT_UPDATE_PRESERVE_AD, v.raw);
  }
};

}  // namespace pvk::xen_pv
