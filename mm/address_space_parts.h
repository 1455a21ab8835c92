// What the files of AddressSpace share (mm/address_space.cpp and its
// neighbours: root_cache, vma_list, mapping, fault, switch_mm) and nothing
// outside mm/ includes: the boot's policy, the zero page, the ptshare table
// span, and the small helpers each of them inlines.
#pragma once
#include "base/arch/cross_cpu.h"
#include "mm/address_space.h"
#include "pvops/call/pvop.h"
#include "pvops/tlb/lazy_mmu_section.h"

namespace pvk::space {

extern MmPolicy g_policy;
extern Pfn g_zero_page;

// Finish a section, keeping the first error.
inline ErrorOr<void> finish(LazyMmuSection& section, ErrorOr<void> r) {
  auto f = section.finish();
  return r.is_error() ? r : f;
}

inline uint64_t pages_of(uint64_t len) { return align_up(len, kPageSize) >> kPageShift; }

// ptshare: the address span of one L1 table, and the fewest mapped leaves a
// table must have for fork to share it rather than copy its leaves. Sharing
// costs two L2 updates at fork and, at the first write, one table copy (a
// whole-table validation under Xen); copying costs an update per leaf. 32
// (1/16 of a table) is the batched backend's queue length: below it a
// per-leaf copy fits in one flush. Tables shared already are always shared
// again (a grandchild), since copying them would mean copying them out first.
constexpr uint64_t kTableSpan = entry_span(Level::L2);
constexpr unsigned kShareMinLeaves = 32;

// This CPU's index in the CpuMasks.
inline unsigned mask_cpu() {
  const unsigned me = xcpu::this_cpu_id();
  if (me >= kCpuMaskBits) panic("switch_mm: CPU %u beyond the %u a CpuMask holds", me, kCpuMaskBits);
  return me;
}

inline PteFlags leaf_flags(uint32_t prot) {
  // PROT_NONE: not present, frame kept (ProtNone), so every access faults.
  uint64_t bits = pte_bit::User | (prot ? pte_bit::Present : pte_bit::ProtNone);
  if (prot & vm::Write) bits |= pte_bit::Write;
  if (!(prot & vm::Exec)) bits |= pte_bit::Nx;
  return PteFlags{bits};
}

// The root cache (mm/root_cache.cpp): a fresh root with the kernel half
// filled in, and its way back (into the cache when pgd_cache= allows).
// Both under spaces_lock().
ErrorOr<Pfn> new_root();
ErrorOr<void> release_root(Pfn root);
// The lock of what all spaces share: the table of AddressSpace slots (which
// are in use) and the root cache. Fork and exit make and end spaces
// without the kernel lock, on several CPUs at once; a space's teardown
// takes it inside the space's own lock.
Spinlock& spaces_lock();

// pvops' leave hook (mm/switch_mm.cpp), installed by init_user_mm.
void leave_root_here(Pfn root);

}  // namespace pvk::space

namespace pvk {

// The VMA queries the fork, mprotect and fault paths share.
template <typename Pred>
bool AddressSpace::any_vma_in(VirtAddr start, VirtAddr end, Pred pred) const {
  for (unsigned i = 0; i < count_; ++i)
    if (vmas_[i].start < end && vmas_[i].end > start && pred(vmas_[i])) return true;
  return false;
}

inline bool AddressSpace::table_holds_only_private_memory(VirtAddr table) const {
  return !any_vma_in(table, table + space::kTableSpan, [](const Vma& v) { return (v.flags & vm::Shared) != 0; });
}

inline LeafRights AddressSpace::leaf_rights_in_table(VirtAddr table) const {
  const bool read_only_vma = any_vma_in(table, table + space::kTableSpan, [](const Vma& v) { return !(v.prot & vm::Write); });
  return read_only_vma ? LeafRights::Reduced : LeafRights::Trusted;
}

}  // namespace pvk
