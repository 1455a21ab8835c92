#include "mm/mmu_batch.h"

#include "mm/frame_allocator.h"

namespace pvk {

namespace {
// Kernel-half translations are live in every root.
bool is_kernel_half(VirtAddr va) { return raw(va) >> 63; }
}  // namespace

MmuBatch::MmuBatch(Pfn root) : root_(root) { g_mmu.enter_lazy_mmu(); }

MmuBatch::~MmuBatch() {
  if (!finished_) panic("MmuBatch destroyed without finish()");
}

void MmuBatch::invalidate(VirtAddr va) {
  // An address space that is not loaded has nothing cached (no PCIDs).
  if (root_ != g_current_root && !is_kernel_half(va)) return;
  if (flush_all_) return;
  if (page_count_ == kMaxSinglePageFlushes) {
    flush_all_ = true;
    return;
  }
  pages_[page_count_++] = va;
}

ErrorOr<void> MmuBatch::release_table(Pfn pfn, Level level) {
  if (table_count_ == kMaxPendingTables) TRY(drain());
  tables_[table_count_++] = {pfn, level};
  return {};
}

ErrorOr<void> MmuBatch::drain() {
  // TLB flushes are queued before the lazy flush so a batching backend can
  // send them in the same multicall as the updates they follow.
  if (flush_all_) {
    g_mmu.flush_tlb_all();
  } else {
    for (unsigned i = 0; i < page_count_; ++i) g_mmu.flush_tlb_one(pages_[i]);
  }
  flush_all_ = false;
  page_count_ = 0;
  TRY(g_mmu.flush_lazy_mmu());
  // Released from the back, each dropped from the list once done, so an
  // error part-way never makes a retry release a table twice.
  while (table_count_) {
    const PendingTable t = tables_[table_count_ - 1];
    TRY(g_mmu.release_pt_page(t.pfn, t.level));
    --table_count_;
    TRY(frames().try_free(t.pfn));
  }
  return {};
}

ErrorOr<void> MmuBatch::finish() {
  if (finished_) panic("MmuBatch::finish() called twice");
  finished_ = true;
  auto drained = drain();
  auto left = g_mmu.leave_lazy_mmu();
  if (drained.is_error()) return drained;
  return left;
}

}  // namespace pvk
