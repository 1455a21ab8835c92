#include "mm/kernel_space.h"

#include "guest/layout.h"
#include "guest/lib/kstring.h"
#include "mm/frame_allocator.h"
#include "mm/mmu_batch.h"
#include "mm/physmap.h"
#include "pvops/mmu_ops.h"

extern "C" char __kernel_start[], __text_end[], __rodata_end[], __kernel_end[];

namespace pvk {
namespace {

Pfn g_kernel_root{};

bool overlaps(MemRange a, uint64_t first, uint64_t count) {
  return raw(a.first) < first + count && first < raw(a.first) + a.count;
}

Pfn image_pfn(const char* va) { return Pfn{(reinterpret_cast<uint64_t>(va) - PVK_KERNEL_VMA) >> kPageShift}; }
uint64_t pages_between(const char* a, const char* b) {
  return (align_up(reinterpret_cast<uint64_t>(b), kPageSize) - reinterpret_cast<uint64_t>(a)) >> kPageShift;
}

}  // namespace

Pfn kernel_root() { return g_kernel_root; }

ErrorOr<void> init_frames(const BootInfo& info) {
  uint64_t max_pfn = 0;
  for (unsigned i = 0; i < info.ram_ranges; ++i)
    if (raw(info.ram[i].first) + info.ram[i].count > max_pfn) max_pfn = raw(info.ram[i].first) + info.ram[i].count;
  if (!max_pfn) return Errno::ENOMEM;
  const uint64_t bitmap_pages = align_up(FrameAllocator::words_for(max_pfn) * 8, kPageSize) >> kPageShift;

  // The bitmap goes in the first RAM run that avoids every reserved range.
  uint64_t bitmap_first = 0;
  for (unsigned i = 0; i < info.ram_ranges && !bitmap_first; ++i) {
    for (uint64_t cand = raw(info.ram[i].first); cand + bitmap_pages <= raw(info.ram[i].first) + info.ram[i].count;) {
      bool clash = false;
      for (unsigned r = 0; r < info.reserved_ranges; ++r) {
        if (overlaps(info.reserved[r], cand, bitmap_pages)) {
          cand = raw(info.reserved[r].first) + info.reserved[r].count;
          clash = true;
          break;
        }
      }
      if (!clash) {
        bitmap_first = cand;
        break;
      }
    }
  }
  if (!bitmap_first) return Errno::ENOMEM;

  FrameAllocator& fa = frames();
  fa.init(phys_to_virt<uint64_t>(Pfn{bitmap_first}), max_pfn);
  for (unsigned i = 0; i < info.ram_ranges; ++i) TRY(fa.add_free_range(info.ram[i].first, info.ram[i].count));
  for (unsigned r = 0; r < info.reserved_ranges; ++r) fa.reserve_range(info.reserved[r].first, info.reserved[r].count);
  fa.reserve_range(Pfn{bitmap_first}, bitmap_pages);
  return {};
}

ErrorOr<Pfn> build_kernel_space(const BootInfo& info) {
  const Pfn root = TRY(frames().try_alloc());
  memset(phys_to_virt(root), 0, kPageSize);
  TRY(g_mmu.alloc_pt_page(root, Level::L4));

  MmuBatch batch(root);
  auto map = [&](VirtAddr va, uint64_t pages, Pfn first, PteFlags flags) {
    return g_mmu.range.map(root, va, pages, FrameSource{nullptr, first}, flags, batch);
  };
  // The image, section by section: code executable, nothing else.
  auto r = map(to_virt(__kernel_start), pages_between(__kernel_start, __text_end), image_pfn(__kernel_start),
               pte_flags::KernelRx);
  if (!r.is_error())
    r = map(to_virt(__text_end), pages_between(__text_end, __rodata_end), image_pfn(__text_end), pte_flags::KernelRo);
  if (!r.is_error())
    r = map(to_virt(__rodata_end), pages_between(__rodata_end, __kernel_end), image_pfn(__rodata_end),
            pte_flags::KernelRw);
  // The physmap: every RAM frame, read-write, never executable.
  for (unsigned i = 0; i < info.ram_ranges && !r.is_error(); ++i)
    r = map(VirtAddr{PVK_PHYSMAP_BASE + (raw(info.ram[i].first) << kPageShift)}, info.ram[i].count,
            info.ram[i].first, pte_flags::KernelRw);
  // The kernel half's L3 tables exist from the start and are never freed,
  // so every address space can share them by copying L4 entries.
  if (!r.is_error()) r = g_mmu.range.populate(root, VirtAddr{PVK_SCRATCH_BASE}, Level::L3);
  auto done = batch.finish();
  if (r.is_error()) return r.error();
  TRY(done);
  TRY(g_mmu.load_root(root));
  g_kernel_root = root;
  return root;
}

}  // namespace pvk
