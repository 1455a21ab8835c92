#include "pvops/lazy_mmu_section.h"

#include "base/arch/cross_cpu.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "pvops/pvop.h"
#include "pvops/unhook_tables.h"

namespace pvk {

namespace {
// Kernel-half translations are live in every root.
bool is_kernel_half(VirtAddr va) { return raw(va) >> 63; }

// Sections do not nest: under Xen an inner section's leave would end the
// outer one's batching (and its OnRefusal) without anyone noticing. Per CPU:
// page faults run without the kernel lock, so two CPUs may each have a
// section open (each CPU's lazy mode and queue are its own: xen_common).
LazyMmuSection* g_open_sections[kCpuMaskBits];
LazyMmuSection*& open_here() { return g_open_sections[xcpu::this_cpu_id() % kCpuMaskBits]; }

// Frames put_frame_after_flush holds until the flush, per CPU (a section
// object lives on a 16 KiB kernel stack; this is 8 KiB).
constexpr unsigned kMaxDeferredFrames = 1024;
struct DeferredFrames {
  unsigned count = 0;
  Pfn frames[kMaxDeferredFrames] = {};
};
DeferredFrames g_deferred[kCpuMaskBits];
DeferredFrames& deferred_here() { return g_deferred[xcpu::this_cpu_id() % kCpuMaskBits]; }
}  // namespace

LazyMmuSection::LazyMmuSection(Pfn root, OnRefusal on_refusal) : root_(root) {
  // With tables unhooked (mmu=unhook/auto) the likeliest way here is a fault
  // on an address they cover, which nothing may touch inside the section.
  LazyMmuSection*& open = open_here();
  if (open && g_unhooked_tables)
    panic("LazyMmuSection opened inside another while %u L1 tables are unhooked: an access into an unhooked range "
          "inside a lazy-MMU section",
          g_unhooked_tables);
  if (open) panic("LazyMmuSection opened inside another (lazy-MMU sections do not nest)");
  open = this;
  PVOP(enter_lazy_mmu)(on_refusal);
}

LazyMmuSection::LazyMmuSection(Pfn root, const CpuMask& cpus, OnRefusal on_refusal)
    : LazyMmuSection(root, on_refusal) {
  cpus_ = &cpus;
}

LazyMmuSection::~LazyMmuSection() {
  if (finished_) return;
  open_here() = nullptr;
  panic("LazyMmuSection destroyed without finish()");
}

void LazyMmuSection::invalidate(VirtAddr va) {
  const bool kernel = is_kernel_half(va);
  // A space loaded nowhere has nothing cached (no PCIDs): without a mask,
  // only this CPU's root can be loaded anywhere.
  if (!kernel && !cpus_ && root_ != g_current_root) return;
  (kernel ? kernel_ : user_) = true;
  if (flush_all_) return;
  if (page_count_ == kMaxSinglePageFlushes) {
    flush_all_ = true;
    return;
  }
  pages_[page_count_++] = va;
}

void LazyMmuSection::invalidate_range(VirtAddr va, uint64_t pages) {
  const bool kernel = is_kernel_half(va);
  if (!kernel && !cpus_ && root_ != g_current_root) return;
  if (!pages) return;
  (kernel ? kernel_ : user_) = true;
  if (flush_all_) return;
  if (pages > kMaxSinglePageFlushes - page_count_) {
    flush_all_ = true;
    return;
  }
  for (uint64_t i = 0; i < pages; ++i) pages_[page_count_++] = va + i * kPageSize;
}

void LazyMmuSection::invalidate_all() {
  if (!cpus_ && root_ != g_current_root) return;
  user_ = true;
  flush_all_ = true;
}

LazyMmuSection* LazyMmuSection::open_section() { return open_here(); }

ErrorOr<void> LazyMmuSection::release_table(Pfn pfn, Level level) {
  // A failed drain still makes room (it drops what it processed), so the
  // new table is queued either way and the error is passed on.
  ErrorOr<void> drained;
  if (table_count_ == kMaxPendingTables) drained = drain();
  if (table_count_ == kMaxPendingTables) return drained.is_error() ? drained : ErrorOr<void>(Errno::ENOMEM);
  tables_[table_count_++] = {pfn, level};
  return drained;
}

void LazyMmuSection::put_frame_after_flush(Pfn pfn) {
  DeferredFrames& d = deferred_here();
  if (d.count == kMaxDeferredFrames) {
    auto drained = drain();
    if (drained.is_error() && deferred_error_ == Errno::Ok) deferred_error_ = drained.error();
  }
  d.frames[d.count++] = pfn;
}

void LazyMmuSection::put_deferred_frames() {
  DeferredFrames& d = deferred_here();
  for (unsigned i = 0; i < d.count; ++i)
    if (frame_refs().dec(d.frames[i]) == 0) frames().must_free(d.frames[i]);
  d.count = 0;
}

ErrorOr<void> LazyMmuSection::drain() {
  // TLB flushes are queued before the lazy flush so a batching backend can
  // send them in the same multicall as the updates they follow.
  // Here only if this CPU may cache them: its root is the section's, or
  // the kernel half changed.
  if (kernel_ || (user_ && root_ == g_current_root)) {
    if (flush_all_) {
      PVOP(flush_tlb_all)();
    } else {
      for (unsigned i = 0; i < page_count_; ++i)
        if (is_kernel_half(pages_[i]) || root_ == g_current_root) PVOP(flush_tlb_one)(pages_[i]);
    }
  }
  shoot_down();
  flush_all_ = false;
  user_ = kernel_ = false;
  page_count_ = 0;
  auto flushed = PVOP(flush_lazy_mmu)();
  // The flushes went out with the updates (or before them): no CPU reaches
  // the unmapped frames any more. (A refused batch was reported; the
  // frames are let go as they were before deferral.)
  put_deferred_frames();
  TRY(flushed);
  // In order. A table whose release fails is dropped from the list (it is
  // reported, and freeing it would hand out a frame Xen still types as a
  // table); the ones after it stay pending for the next drain, and none is
  // ever released twice.
  for (unsigned i = 0; i < table_count_;) {
    const PendingTable t = tables_[i++];
    auto released = PVOP(release_pt_page)(t.pfn, t.level);
    if (!released.is_error()) released = frames().try_free(t.pfn);
    if (released.is_error()) {
      for (unsigned k = i; k < table_count_; ++k) tables_[k - i] = tables_[k];
      table_count_ -= i;
      return released;
    }
  }
  table_count_ = 0;
  return {};
}

void LazyMmuSection::shoot_down() {
  if (!user_ && !kernel_) return;
  // The stores of the section come before the mask is read (a CPU that
  // loads the root later walks the new entries), as Linux orders
  // set_pte against reading mm_cpumask.
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  CpuMask targets;
  if (user_ && cpus_) targets = cpus_->snapshot();
  if (kernel_) targets = targets | kernel_tlb_cpus();
  targets = targets.without(xcpu::this_cpu_id());
  if (targets.empty()) return;
  TlbFlushInfo info;
  info.full = flush_all_;
  if (!info.full) {
    info.count = page_count_;
    for (unsigned i = 0; i < page_count_; ++i) info.pages[i] = pages_[i];
  }
  count_event(g_mmu_counters.shootdowns);
  count_event(g_mmu_counters.shootdown_cpus, targets.count());
  PVOP(flush_tlb_multi)(targets, info);
}

ErrorOr<void> LazyMmuSection::finish() {
  if (finished_) panic("LazyMmuSection::finish() called twice");
  finished_ = true;
  open_here() = nullptr;  // a section may open again once this one has left lazy mode
  auto drained = drain();
  auto left = PVOP(leave_lazy_mmu)();
  if (drained.is_error()) return drained;
  if (deferred_error_ != Errno::Ok) return deferred_error_;
  return left;
}

}  // namespace pvk
