// The native backend: plain stores into page tables, invlpg / CR3 for TLB
// maintenance. Lazy-MMU sections cost nothing here — there is no queue.
#include "base/arch/cpu.h"
#include "pvops/backends.h"
#include "pvops/ops_builder.h"
#include "pvops/pte_attrs.h"

namespace pvk {
namespace {

struct NativePolicy {
  static ErrorOr<void> store(Pte* slot, Pte v, Level) {
    ++g_mmu_counters.pte_writes;
    __atomic_store_n(&slot->raw, v.raw, __ATOMIC_RELAXED);
    return {};
  }
  // Atomically take the entry so a concurrent A/D update by the page walker
  // cannot be lost between read and commit (Linux's ptep_get_and_clear).
  static Pte modify_prot_start(Pte* slot) { return Pte{__atomic_exchange_n(&slot->raw, 0, __ATOMIC_RELAXED)}; }
  static ErrorOr<void> modify_prot_commit(Pte* slot, Pte, Pte v) { return store(slot, v, Level::L1); }
  static Pte make(Pfn pfn, PteFlags f) { return Pte{(raw(pfn) << kPageShift) | f.bits}; }
  static Pte make_table(Pfn pfn) { return make(pfn, pte_flags::Table); }
  static Pfn pfn_of(Pte e) { return Pfn{(e.raw & pte_bit::FrameMask) >> kPageShift}; }
  static ErrorOr<void> prepare_table(Pfn, Level) {
    ++g_mmu_counters.pt_pages_alloc;
    return {};
  }
  static ErrorOr<void> retire_table(Pfn, Level) {
    ++g_mmu_counters.pt_pages_release;
    return {};
  }
};
static_assert(MmuPolicy<NativePolicy>);

void enter_lazy(OnRefusal) { ++g_mmu_counters.lazy_sections; }
ErrorOr<void> no_queue() { return {}; }

void flush_one(VirtAddr va) {
  ++g_mmu_counters.tlb_flush_one;
  cpu::invlpg(raw(va));
}

void flush_all() {
  ++g_mmu_counters.tlb_flush_all;
  cpu::write_cr3(cpu::read_cr3());
}

ErrorOr<void> load_root(Pfn root) {
  ++g_mmu_counters.root_loads;
  cpu::write_cr3(raw(pfn_to_phys(root)));
  g_current_root = root;
  return {};
}

}  // namespace

MmuOps make_native_ops(PteAccess access) {
  MmuOps ops = make_mmu_ops<NativePolicy>("native", access);
  // pvk programs kNativePat into IA32_PAT at boot (guest/arch/native).
  ops.pte_attrs = [](Pte e) { return cache_attr_for(kNativePatMsr, e); };
  ops.make_pte_attrs = [](CacheAttr a) { return cache_flags_for(kNativePatMsr, a); };
  ops.enter_lazy_mmu = &enter_lazy;
  ops.flush_lazy_mmu = &no_queue;
  ops.leave_lazy_mmu = &no_queue;
  ops.flush_tlb_one = &flush_one;
  ops.flush_tlb_all = &flush_all;
  ops.load_root = &load_root;
  return ops;
}

}  // namespace pvk
