// A lazy-MMU section as an object (Zircon's ConsistencyManager, Linux's
// arch_enter/leave_lazy_mmu_mode): it enters lazy mode on construction,
// gathers the TLB invalidations and the page tables freed by the walk, and
// finish() — which must be called exactly once — pushes the queued updates,
// flushes the TLB and only then gives the tables back to the allocator.
// Sections do not nest: opening one while another is open panics.
//
// TLB shootdown (pvops/tlb/tlb_shootdown.h): a section over a user address space
// is given that space's CpuMask; when it drains, this CPU flushes what it
// needs (if the root is loaded here) and the other CPUs of the mask are sent
// one flush_tlb_multi for everything the section gathered — never one per
// entry. Kernel-half invalidations concern every CPU that runs on pvk's
// tables (kernel_tlb_cpus()). Past kTlbSinglePageFlushCeiling pages the
// whole TLB is flushed, here and on the targets.
//
// Lazy TLB (pvops/tlb/tlb_shootdown.h): CPUs of the mask that only keep the
// root loaded (idle) are left out unless the drain frees page tables; the
// space's generation, bumped by each drain, makes them flush everything
// when they come back to the space.
#pragma once
#include "base/lib/error_or.h"
#include "base/lib/cpumask.h"
#include "pvops/mmu_ops.h"

namespace pvk {

enum class PvopCopy : uint8_t;  // pvops/call/pvop.h

class LazyMmuSection {
 public:
  // on_refusal: see OnRefusal (pvops/mmu_ops.h) — Retry for work that takes
  // access away and must not stop halfway.
  explicit LazyMmuSection(Pfn root, OnRefusal on_refusal = OnRefusal::Fail);
  // A user address space's section: `tlb` says which CPUs may cache its
  // translations and which of them are behind (read when the section
  // drains, after its stores; its generation is bumped then).
  LazyMmuSection(Pfn root, SpaceTlb& tlb, OnRefusal on_refusal = OnRefusal::Fail);
  LazyMmuSection(const LazyMmuSection&) = delete;
  LazyMmuSection& operator=(const LazyMmuSection&) = delete;
  // Inline: every section is finished, and a call to learn that costs more
  // than the test.
  ~LazyMmuSection() {
    if (__builtin_expect(!finished_, 0)) destroyed_unfinished();
  }

  // va's translation changed and may be cached.
  void invalidate(VirtAddr va);
  // So did those of `pages` pages from va (one full flush past the
  // single-page limit), or of every address in the space.
  void invalidate_range(VirtAddr va, uint64_t pages);
  void invalidate_all();
  // The section open now, or null. The walk needs it where a verb without a
  // section parameter (map) has to copy a shared table.
  static LazyMmuSection* open_section();
  // A page table was unhooked; it is freed after the TLB flush.
  ErrorOr<void> release_table(Pfn pfn, Level level);
  // A table still in use elsewhere (ptshare: another space shares it) was
  // unhooked from this space: it may be freed later by a section that
  // does not reach this space's lazy CPUs, so this one must.
  void table_unhooked() { tables_unhooked_ = true; }
  // A user frame whose mapping the section removed: its reference is
  // dropped — and the frame freed if that was the last — only after the
  // section's TLB flush, here and on the space's other CPUs (Linux's
  // mmu_gather). Page faults allocate without the kernel lock, so a frame
  // freed before the flush could be handed to another space while a CPU of
  // this one still reaches it through a stale entry; and a COW sharer that
  // saw the count drop to 1 early would make the frame writable under it.
  // Kept per CPU (sections do not nest); a full list drains the section.
  // Inline: an exit's teardown puts every frame of the space through it (a
  // call each was 17 instructions a frame, 5 % of forkwait's cycle).
  void put_frame_after_flush(Pfn pfn) {
    DeferredFrames& d = *deferred_;
    if (__builtin_expect(d.count == kMaxDeferredFrames, 0)) drain_full_deferred();
    d.frames[d.count++] = pfn;
  }
  ErrorOr<void> finish();

  static constexpr unsigned kMaxSinglePageFlushes = kTlbSinglePageFlushCeiling;
  static constexpr unsigned kMaxPendingTables = 64;
  // Frames put_frame_after_flush holds until the flush, per CPU (a section
  // object lives on a 16 KiB kernel stack; this is 8 KiB).
  static constexpr unsigned kMaxDeferredFrames = 1024;
  struct DeferredFrames {
    unsigned count = 0;
    Pfn frames[kMaxDeferredFrames] = {};
  };

 private:
  [[noreturn, gnu::cold]] void destroyed_unfinished();  // a section left unfinished: a bug (panics)
  // Opening, draining and finishing are compiled twice, a native and a
  // generic copy (pick_copy, pvops/call/pvop.h): a one-page mprotect or a
  // fault pays for them on every call.
  template <PvopCopy C>
  void open_in(OnRefusal on_refusal);
  // How a drain sends the queue: staying in lazy mode, or leaving it (the
  // end of a section with no table to release after the flush).
  enum class DrainEnd : uint8_t { StayLazy, Leave };
  template <PvopCopy C, DrainEnd End>
  ErrorOr<void> drain_in();
  template <PvopCopy C>
  ErrorOr<void> finish_in();
  ErrorOr<void> drain();
  ErrorOr<void> shoot_down();
  void note_flushed();
  void put_deferred_frames();
  [[gnu::noinline, gnu::cold]] void drain_full_deferred();

  Pfn root_;
  unsigned cpu_ = 0;          // the CPU the section opened on (and finishes on)
  DeferredFrames* deferred_;  // this CPU's (set when the section opens)
  SpaceTlb* space_ = nullptr;  // the space's CPUs and generation; null for the kernel's own sections
  // The drain in progress: the generation its flush stands for (0: none)
  // and the CPUs it was sent to.
  uint64_t gen_ = 0;
  CpuMask flushed_cpus_;
  bool finished_ = false;
  bool flush_all_ = false;
  bool user_ = false;    // some gathered invalidation is in the user half
  bool kernel_ = false;  // some is in the kernel half (every CPU's)
  bool tables_unhooked_ = false;  // table_unhooked() since the last drain
  unsigned page_count_ = 0;
  unsigned table_count_ = 0;
  Errno deferred_error_ = Errno::Ok;  // a drain forced by put_frame_after_flush failed
  VirtAddr pages_[kMaxSinglePageFlushes];
  struct PendingTable {
    Pfn pfn;
    Level level;
  } tables_[kMaxPendingTables];
};

// The UnmapVisitor of a user space's munmap and teardown (ctx: the
// section): each removed frame put after the section's flush
// (put_frame_after_flush). The walk knows this function and does the same
// inline rather than call it for every leaf (an exit's teardown puts every
// frame of the space).
void put_frame_after_flush_visit(void* section, VirtAddr va, Pte old);
inline UnmapVisitor put_frames_after_flush(LazyMmuSection& section) {
  return UnmapVisitor{&put_frame_after_flush_visit, &section};
}

}  // namespace pvk
