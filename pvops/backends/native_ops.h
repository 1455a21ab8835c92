// The native backend's verbs: plain stores into page tables, invlpg / CR3
// for TLB maintenance; lazy-MMU sections cost nothing — there is no queue.
//
// A header because two images use them: the pvops image points its table at
// them (pvops/backends/native.cpp), and the compiled-in native image
// (PVK_BUILTIN_NATIVE) calls them with no table at all — kBuiltinOps is a
// compile-time constant, so every PVOP(verb) there is a direct call the
// compiler may inline.
#pragma once
#include "base/arch/cpu.h"
#include "pvops/ops_builder.h"
#include "pvops/pte_attrs.h"

namespace pvk::native {

struct Policy {
  static ErrorOr<void> store(Pte* slot, Pte v, Level) {
    count_event(g_mmu_counters.pte_writes);
    __atomic_store_n(&slot->raw, v.raw, __ATOMIC_RELAXED);
    return {};
  }
  // Atomically take the entry so a concurrent A/D update by the page walker
  // cannot be lost between read and commit (Linux's ptep_get_and_clear).
  static Pte modify_prot_start(Pte* slot) { return Pte{__atomic_exchange_n(&slot->raw, 0, __ATOMIC_RELAXED)}; }
  static ErrorOr<void> modify_prot_commit(Pte* slot, Pte, Pte v) { return store(slot, v, Level::L1); }
  static constexpr Pte make(Pfn pfn, PteFlags f) { return Pte{(raw(pfn) << kPageShift) | f.bits}; }
  static constexpr Pte make_table(Pfn pfn) { return make(pfn, pte_flags::Table); }
  static constexpr Pfn pfn_of(Pte e) { return Pfn{(e.raw & pte_bit::FrameMask) >> kPageShift}; }
  static ErrorOr<void> prepare_table(Pfn, Level) {
    count_event(g_mmu_counters.pt_pages_alloc);
    return {};
  }
  static ErrorOr<void> retire_table(Pfn, Level) {
    count_event(g_mmu_counters.pt_pages_release);
    return {};
  }
  static ErrorOr<void> flush_queue() { return {}; }
  static constexpr bool kTableHints = false;
  static ErrorOr<void> begin_table(Pte*, VirtAddr, unsigned) { return {}; }
  static Pte l2_entry(const Pte* slot) { return *slot; }
};
static_assert(MmuPolicy<Policy>);

inline void enter_lazy(OnRefusal) { count_event(g_mmu_counters.lazy_sections); }
inline ErrorOr<void> no_queue() { return {}; }

inline void flush_one(VirtAddr va) {
  count_event(g_mmu_counters.tlb_flush_one);
  cpu::invlpg(raw(va));
}

inline void flush_all() {
  count_event(g_mmu_counters.tlb_flush_all);
  cpu::write_cr3(cpu::read_cr3());
}

// What a shootdown's target runs (no counters: they are the sender's).
inline void target_flush_one(VirtAddr va) { cpu::invlpg(raw(va)); }
inline void target_flush_all() { cpu::write_cr3(cpu::read_cr3()); }

// Natively the only way to another CPU's TLB is to ask it: a request the
// platform refuses leaves stale translations behind, so it stops the kernel.
inline void flush_multi(const CpuMask& cpus, const TlbFlushInfo& info) {
  const CpuMask refused = shootdown_ipi(cpus, info);
  if (!refused.empty())
    panic("tlb shootdown: could not ask CPU %u (of %u) to flush its TLB: a stale translation would outlive its "
          "mapping",
          refused.next(0), refused.count());
}

inline ErrorOr<void> load_root(Pfn root) {
  count_event(g_mmu_counters.root_loads);
  cpu::write_cr3(raw(pfn_to_phys(root)));
  g_current_root = root;
  return {};
}

// pvk programs kNativePat into IA32_PAT at boot (arch/native).
inline CacheAttr attrs_of(Pte e) { return cache_attr_for(kNativePatMsr, e); }
inline PteFlags attrs_flags(CacheAttr a) { return cache_flags_for(kNativePatMsr, a); }

constexpr MmuOps ops(PteAccess access) {
  MmuOps ops = make_mmu_ops<Policy>("native", access);
  ops.pte_attrs = &attrs_of;
  ops.make_pte_attrs = &attrs_flags;
  ops.enter_lazy_mmu = &enter_lazy;
  ops.flush_lazy_mmu = &no_queue;
  ops.leave_lazy_mmu = &no_queue;
  ops.flush_tlb_one = &flush_one;
  ops.flush_tlb_all = &flush_all;
  ops.flush_tlb_multi = &flush_multi;
  ops.load_root = &load_root;
  // pte_val, pte_flags, pte_pfn and make_pte are the architectural
  // encodings: call sites may become those instructions (pvpatch=on).
  ops.inline_forms = InlineForms::NativeEncoding;
  return ops;
}

// The native verbs as compile-time constants (pte=attrs: the walk's flag
// tests are the inline mask). The compiled-in image calls them for every
// verb — no pte=flags there: with no pvops table, a flag read is the mask;
// the pvops image's native-body sites (pvops/call/pvop.h) for the hot ones.
inline constexpr MmuOps kNativeOps = ops(PteAccess::Attrs);
// The same under pte=flags: the range verbs' flags instantiations, whose
// bodies a function's pte=flags copy inlines (pick_encoding_copy).
inline constexpr MmuOps kNativeFlagsOps = ops(PteAccess::Flags);
#if PVK_BUILTIN_NATIVE
inline constexpr const MmuOps& kBuiltinOps = kNativeOps;
#endif

}  // namespace pvk::native
