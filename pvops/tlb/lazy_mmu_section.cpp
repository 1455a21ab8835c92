#include "pvops/tlb/lazy_mmu_section.h"

#include "base/arch/cross_cpu.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "pvops/call/pvop.h"
#include "pvops/backends/unhook_tables.h"

namespace pvk {

namespace {
// Kernel-half translations are live in every root.
bool is_kernel_half(VirtAddr va) { return raw(va) >> 63; }

// Sections do not nest: under Xen an inner section's leave would end the
// outer one's batching (and its OnRefusal) without anyone noticing. Per CPU:
// page faults run without the kernel lock, so two CPUs may each have a
// section open (each CPU's lazy mode and queue are its own: xen_common).
LazyMmuSection* g_open_sections[kCpuMaskBits];
unsigned here() { return xcpu::this_cpu_id() % kCpuMaskBits; }
LazyMmuSection*& open_here() { return g_open_sections[here()]; }

using DeferredFrames = LazyMmuSection::DeferredFrames;
DeferredFrames g_deferred[kCpuMaskBits];
}  // namespace

LazyMmuSection::LazyMmuSection(Pfn root, OnRefusal on_refusal) : root_(root) {
  pick_copy<VerbGroup::LazySection>([&] { open_in<PvopCopy::Native>(on_refusal); },
                                    [&] { open_in<PvopCopy::Generic>(on_refusal); });
}

template <PvopCopy C>
void LazyMmuSection::open_in(OnRefusal on_refusal) {
  // With tables unhooked (mmu=unhook/auto) the likeliest way here is a fault
  // on an address they cover, which nothing may touch inside the section.
  const unsigned cpu = here();
  cpu_ = cpu;
  LazyMmuSection*& open = g_open_sections[cpu];
  deferred_ = &g_deferred[cpu];
  if (open && g_unhooked_tables)
    panic("LazyMmuSection opened inside another while %u L1 tables are unhooked: an access into an unhooked range "
          "inside a lazy-MMU section",
          g_unhooked_tables);
  if (open) panic("LazyMmuSection opened inside another (lazy-MMU sections do not nest)");
  open = this;
  PVOP_IN(C, enter_lazy_mmu)(on_refusal);
}

// Not delegating to the constructor above: that was a call of its own in
// every fault's and mprotect's section (11 instructions).
LazyMmuSection::LazyMmuSection(Pfn root, SpaceTlb& tlb, OnRefusal on_refusal) : root_(root), space_(&tlb) {
  pick_copy<VerbGroup::LazySection>([&] { open_in<PvopCopy::Native>(on_refusal); },
                                    [&] { open_in<PvopCopy::Generic>(on_refusal); });
}

void LazyMmuSection::destroyed_unfinished() {
  open_here() = nullptr;
  panic("LazyMmuSection destroyed without finish()");
}

void LazyMmuSection::invalidate(VirtAddr va) {
  const bool kernel = is_kernel_half(va);
  // A space loaded nowhere has nothing cached (no PCIDs): without a mask,
  // only this CPU's root can be loaded anywhere.
  if (!kernel && !space_ && root_ != g_current_root) return;
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
  if (!kernel && !space_ && root_ != g_current_root) return;
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
  if (!space_ && root_ != g_current_root) return;
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

void put_frame_after_flush_visit(void* section, VirtAddr, Pte old) {
  static_cast<LazyMmuSection*>(section)->put_frame_after_flush(PVOP(pte_pfn)(old));
}

void LazyMmuSection::drain_full_deferred() {
  auto drained = drain();
  if (drained.is_error() && deferred_error_ == Errno::Ok) deferred_error_ = drained.error();
}

namespace {
[[gnu::noinline]] void put_frames(DeferredFrames& d) {
  for (unsigned i = 0; i < d.count; ++i)
    put_frame_ref(d.frames[i]);
  d.count = 0;
}
}  // namespace

// Inline in drain: every section's finish asks, and a fault's section
// never has a frame to put (a call to learn that cost 22 instructions).
[[gnu::always_inline]] inline void LazyMmuSection::put_deferred_frames() {
  DeferredFrames& d = *deferred_;
  if (__builtin_expect(d.count != 0, 0)) put_frames(d);  // the common case: no frame was unmapped
}

ErrorOr<void> LazyMmuSection::drain() {
  return pick_copy<VerbGroup::LazySection>([&] { return drain_in<PvopCopy::Native, DrainEnd::StayLazy>(); },
                                           [&] { return drain_in<PvopCopy::Generic, DrainEnd::StayLazy>(); });
}

template <PvopCopy C, LazyMmuSection::DrainEnd End>
ErrorOr<void> LazyMmuSection::drain_in() {
  // TLB flushes are queued before the lazy flush so a batching backend can
  // send them in the same multicall as the updates they follow.
  // Here only if this CPU may cache them: its root is the section's, or
  // the kernel half changed.
  if (kernel_ || (user_ && root_ == g_current_root)) {
    if (flush_all_) {
      PVOP_IN(C, flush_tlb_all)();
    } else {
      for (unsigned i = 0; i < page_count_; ++i)
        if (is_kernel_half(pages_[i]) || root_ == g_current_root) PVOP_IN(C, flush_tlb_one)(pages_[i]);
    }
  }
  // Nothing flushed here or anywhere (a fault that only filled an empty
  // entry): no call at all. Tested here rather than as shoot_down's first
  // line, where it is inlined only when GCC happens to split the function.
  gen_ = 0;
  flushed_cpus_ = CpuMask{};
  // One CPU: nobody else to flush or to keep a generation for.
  ErrorOr<void> shot;
  if (xcpu::one_cpu())
    tables_unhooked_ = false;
  else if (user_ || kernel_)
    shot = shoot_down();
  flush_all_ = false;
  user_ = kernel_ = false;
  page_count_ = 0;
  auto flushed = End == DrainEnd::Leave ? PVOP_IN(C, leave_lazy_mmu)() : PVOP_IN(C, flush_lazy_mmu)();
  // The flushes went out with the updates (or before them): no CPU reaches
  // the unmapped frames any more, but for CPUs idle on the space (lazy),
  // which flush everything before they run it again. (A refused batch was
  // reported; the frames are let go as they were before deferral.)
  put_deferred_frames();
  TRY(flushed);
  // The section's writes could not all be landed before the lazy CPUs'
  // generation moved: keep the tables (as for a failed flush above).
  if (shot.is_error()) return shot;
  note_flushed();
  // In order. A table whose release fails is dropped from the list (it is
  // reported, and freeing it would hand out a frame Xen still types as a
  // table); the ones after it stay pending for the next drain, and none is
  // ever released twice.
  for (unsigned i = 0; i < table_count_;) {
    const PendingTable t = tables_[i++];
    auto released = PVOP_IN(C, release_pt_page)(t.pfn, t.level);
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

// Only when the section flushed something (user_ || kernel_; drain() has
// reset gen_ and flushed_cpus_).
ErrorOr<void> LazyMmuSection::shoot_down() {
  const unsigned me = xcpu::this_cpu_id();
  const bool space = user_ && space_;
  // Freed tables go after this flush: then even lazy CPUs must flush.
  TablesFreed freed = table_count_ || tables_unhooked_ ? TablesFreed::Yes : TablesFreed::No;
  tables_unhooked_ = false;
  if (space && !kernel_) {
    // The common case on one CPU: no other CPU runs the space or idles on
    // it. Then there is no one to shoot down and no lazy CPU to keep a
    // generation for (a CPU that loads the root later loads it afresh,
    // which flushes), so none of the bookkeeping below. The fence orders
    // the section's writes before the mask read, as below.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (space_->cpus.snapshot().without(me).empty()) return {};
  }
  ErrorOr<void> landed;
  // Only CPUs already lazy here may be skipped below: for them the writes
  // are sent first (a CPU that turns lazy later is still flushed).
  const CpuMask lazy_before = space ? lazy_tlb_cpus() : CpuMask{};
  if (space && freed == TablesFreed::No && !(space_->cpus.snapshot() & lazy_before).without(me).empty()) {
    // A lazy CPU is about to be skipped. When it comes back it flushes
    // everything if it sees the bumped generation — which must then come
    // after the section's page-table writes have landed, or it could
    // flush, walk the old entries and cache them again. A batching
    // backend (Xen) still has the writes queued: send them now (nothing
    // is queued natively). Should that fail, nobody is skipped.
    landed = PVOP(flush_lazy_mmu)();
    if (landed.is_error()) freed = TablesFreed::Yes;
  }
  // Ordering against a CPU coming back from lazy mode (mm's switch_mm:
  // clear its lazy bit, full fence, read the generation): here the writes
  // come first, then the generation is bumped and the lazy bits and mask
  // are read after a full fence. Either this read sees the CPU no longer
  // lazy (it is sent the flush) or that CPU's read sees the new generation
  // (it flushes everything itself) — never neither. The same fence orders
  // the writes before reading the mask, as Linux orders set_pte against
  // reading mm_cpumask: a CPU that joins later walks the new entries.
  if (space) gen_ = bump_tlb_gen(*space_);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  CpuMask targets, candidates;
  if (space) {
    candidates = space_->cpus.snapshot().without(me);
    targets = shootdown_targets(candidates, lazy_tlb_cpus() & lazy_before, me, freed);
  }
  if (kernel_) targets = targets | kernel_tlb_cpus();
  targets = targets.without(me);
  // Lazy CPUs of the space that this flush does not reach.
  count_event(g_mmu_counters.shootdown_lazy_skipped, candidates.count() - (candidates & targets).count());
  if (targets.empty()) return landed;
  TlbFlushInfo info;
  info.full = flush_all_;
  if (!info.full) {
    info.count = page_count_;
    for (unsigned i = 0; i < page_count_; ++i) info.pages[i] = pages_[i];
  }
  count_event(g_mmu_counters.shootdowns);
  count_event(g_mmu_counters.shootdown_cpus, targets.count());
  PVOP(flush_tlb_multi)(targets, info);
  flushed_cpus_ = space ? targets & candidates : CpuMask{};
  return landed;
}

// After the drain's flushes are done (Xen's hypercall path sends them with
// the queue): the CPUs that ran this generation's flush — this one if the
// root is loaded here, and the targets — are at it now, if they were at
// the one before.
void LazyMmuSection::note_flushed() {
  if (!gen_) return;
  if (root_ == g_current_root) advance_tlb_flushed(*space_, xcpu::this_cpu_id(), gen_);
  for (unsigned cpu : flushed_cpus_) advance_tlb_flushed(*space_, cpu, gen_);
  gen_ = 0;
}

ErrorOr<void> LazyMmuSection::finish() {
  return pick_copy<VerbGroup::LazySection>([&] { return finish_in<PvopCopy::Native>(); },
                                           [&] { return finish_in<PvopCopy::Generic>(); });
}

template <PvopCopy C>
ErrorOr<void> LazyMmuSection::finish_in() {
  if (finished_) panic("LazyMmuSection::finish() called twice");
  finished_ = true;
  // A section may open again once this one has left lazy mode. Kernel code
  // runs with interrupts off and no section sleeps, so this is the CPU it
  // opened on (as deferred_ and Xen's per-CPU queue assume): kept since then
  // rather than looked up again.
  g_open_sections[cpu_] = nullptr;
  ErrorOr<void> drained, left;
  if (table_count_) {
    // Tables go back to the hypervisor after the flush, still batched.
    drained = drain_in<C, DrainEnd::StayLazy>();
    left = PVOP_IN(C, leave_lazy_mmu)();
  } else if (user_ || kernel_ || deferred_->count) {
    // Only frames to put after the flush, which no page-table call follows:
    // the drain leaves lazy mode where it would send the queue (leaving
    // sends it). Under Xen a send and then an empty leave cost 30
    // instructions more.
    drained = drain_in<C, DrainEnd::Leave>();
  } else {
    // Nothing to flush from any TLB, nothing to give back (a fault that
    // filled an empty entry): only the queue to send, which leaving does.
    left = PVOP_IN(C, leave_lazy_mmu)();
  }
  if (drained.is_error()) return drained;
  if (deferred_error_ != Errno::Ok) return deferred_error_;
  return left;
}

}  // namespace pvk
