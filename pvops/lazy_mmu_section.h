// A lazy-MMU section as an object (Zircon's ConsistencyManager, Linux's
// arch_enter/leave_lazy_mmu_mode): it enters lazy mode on construction,
// gathers the TLB invalidations and the page tables freed by the walk, and
// finish() — which must be called exactly once — pushes the queued updates,
// flushes the TLB and only then gives the tables back to the allocator.
// Sections do not nest: opening one while another is open panics.
#pragma once
#include "base/lib/error_or.h"
#include "pvops/mmu_ops.h"

namespace pvk {

class LazyMmuSection {
 public:
  // on_refusal: see OnRefusal (pvops/mmu_ops.h) — Retry for work that takes
  // access away and must not stop halfway.
  explicit LazyMmuSection(Pfn root, OnRefusal on_refusal = OnRefusal::Fail);
  LazyMmuSection(const LazyMmuSection&) = delete;
  LazyMmuSection& operator=(const LazyMmuSection&) = delete;
  ~LazyMmuSection();

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
  ErrorOr<void> finish();

  static constexpr unsigned kMaxSinglePageFlushes = 32;
  static constexpr unsigned kMaxPendingTables = 64;

 private:
  ErrorOr<void> drain();

  Pfn root_;
  bool finished_ = false;
  bool flush_all_ = false;
  unsigned page_count_ = 0;
  unsigned table_count_ = 0;
  VirtAddr pages_[kMaxSinglePageFlushes];
  struct PendingTable {
    Pfn pfn;
    Level level;
  } tables_[kMaxPendingTables];
};

}  // namespace pvk
