#include "mm/kernel_space.h"

#include "base/layout.h"
#include "mm/cpa.h"
#include "base/lib/kstring.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "base/frames/physmap.h"
#include "pvops/mmu_ops.h"
#include "pvops/call/pvop.h"

extern "C" char __kernel_start[], __text_end[], __rodata_end[], __kernel_end[];

namespace pvk {
namespace {

Pfn g_kernel_root{};
Pfn g_frame_bitmap{};

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
  // Only the bitmap comes first (it must sit where the early map reaches);
  // the reference counts follow once the physmap covers all of RAM.
  const uint64_t bitmap_pages = align_up(FrameAllocator::storage_words_for(max_pfn) * 8, kPageSize) >> kPageShift;

  // The bitmap goes in the first RAM run that avoids every reserved range.
  uint64_t bitmap_first = 0;
  bool placed = false;
  for (unsigned i = 0; i < info.ram_ranges && !placed; ++i) {
    for (uint64_t cand = raw(info.ram[i].first);
         cand + bitmap_pages <= raw(info.ram[i].first) + info.ram[i].count && cand + bitmap_pages <= info.early_physmap_pfns;) {
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
        placed = true;
        break;
      }
    }
  }
  if (!placed) return Errno::ENOMEM;

  g_frame_bitmap = Pfn{bitmap_first};
  FrameAllocator& fa = frames();
  fa.init(phys_to_virt<uint64_t>(Pfn{bitmap_first}), max_pfn);
  for (unsigned i = 0; i < info.ram_ranges; ++i) TRY(fa.add_free_range(info.ram[i].first, info.ram[i].count));
  for (unsigned r = 0; r < info.reserved_ranges; ++r) fa.reserve_range(info.reserved[r].first, info.reserved[r].count);
  fa.reserve_range(Pfn{bitmap_first}, bitmap_pages);
  return {};
}

namespace {

// Maps [first, first+count) of RAM into the physmap, read-only where the
// loader's page tables sit.
ErrorOr<void> map_physmap(Pfn root, const BootInfo& info, uint64_t first, uint64_t count) {
  const uint64_t end = first + count;
  const uint64_t bt_first = raw(info.boot_tables.first), bt_end = bt_first + info.boot_tables.count;
  for (uint64_t p = first; p < end;) {
    const bool in_tables = p >= bt_first && p < bt_end;
    uint64_t stop = in_tables ? bt_end : (p < bt_first ? bt_first : end);
    if (stop > end) stop = end;
    TRY(PVOP(range.map)(root, VirtAddr{PVK_PHYSMAP_BASE + (p << kPageShift)}, stop - p, FrameSource{nullptr, Pfn{p}},
                        in_tables ? pte_flags::KernelRo : pte_flags::KernelRw));
    p = stop;
  }
  return {};
}

// The part of a RAM range below (early) or from (!early) the early limit.
MemRange clip(const MemRange& r, uint64_t limit, bool early) {
  const uint64_t first = raw(r.first), end = first + r.count;
  if (early) return {r.first, end <= limit ? r.count : first < limit ? limit - first : 0};
  if (end <= limit) return {r.first, 0};
  const uint64_t from = first > limit ? first : limit;
  return {Pfn{from}, end - from};
}

ErrorOr<void> map_image(Pfn root) {
  auto map = [&](const char* from, const char* to, PteFlags flags) {
    return PVOP(range.map)(root, to_virt(from), pages_between(from, to), FrameSource{nullptr, image_pfn(from)}, flags);
  };
  // Code executable, read-only data read-only, nothing writable executable.
  TRY(map(__kernel_start, __text_end, pte_flags::KernelRx));
  TRY(map(__text_end, __rodata_end, pte_flags::KernelRo));
  return map(__rodata_end, __kernel_end, pte_flags::KernelRw);
}

ErrorOr<void> finish_section(LazyMmuSection& section, ErrorOr<void> result) {
  auto done = section.finish();
  if (result.is_error()) return result;
  return done;
}

}  // namespace

ErrorOr<Pfn> build_kernel_space(const BootInfo& info) {
  const Pfn root = TRY(frames().try_alloc());
  memset(phys_to_virt(root), 0, kPageSize);
  TRY(PVOP(alloc_pt_page)(root, Level::L4));

  // Phase 1, while only the early map reaches frames: every table the new
  // root needs for the image and the early part of the physmap is created
  // before any physmap leaf is written, so a frame is never mapped writable
  // and then turned into a page table behind that mapping's back.
  {
    LazyMmuSection section(root);
    auto r = map_image(root);
    // The kernel half's L3 tables exist from the start and are never freed,
    // so every address space can share them by copying L4 entries.
    if (!r.is_error()) r = PVOP(range.populate)(root, VirtAddr{PVK_SCRATCH_BASE}, Level::L3);
    for (unsigned i = 0; i < info.ram_ranges && !r.is_error(); ++i) {
      const MemRange part = clip(info.ram[i], info.early_physmap_pfns, true);
      for (uint64_t off = 0; off < part.count && !r.is_error(); off += kEntriesPerTable)
        r = PVOP(range.populate)(root, VirtAddr{PVK_PHYSMAP_BASE + ((raw(part.first) + off) << kPageShift)},
                                 Level::L1);
    }
    for (unsigned i = 0; i < info.ram_ranges && !r.is_error(); ++i) {
      const MemRange part = clip(info.ram[i], info.early_physmap_pfns, true);
      if (part.count) r = map_physmap(root, info, raw(part.first), part.count);
    }
    TRY(finish_section(section, r));
  }

  TRY(PVOP(load_root)(root));
  g_physmap_offset = PVK_PHYSMAP_BASE;
  frames().relocate(phys_to_virt<uint64_t>(g_frame_bitmap));

  g_kernel_root = root;
  if (info.release_boot_root) TRY(PVOP(release_pt_page)(info.boot_root, Level::L4));

  // Phase 2, on the kernel's own tables: the rest of RAM. New tables come
  // from low frames, which the physmap already reaches.
  LazyMmuSection section(root);
  ErrorOr<void> r;
  for (unsigned i = 0; i < info.ram_ranges && !r.is_error(); ++i) {
    const MemRange part = clip(info.ram[i], info.early_physmap_pfns, false);
    if (part.count) r = map_physmap(root, info, raw(part.first), part.count);
  }
  TRY(finish_section(section, r));

  // Reference counts for every frame, in a physically contiguous run (so
  // the physmap gives one contiguous array), held for good.
  const uint64_t ref_pages = align_up(frames().max_pfn() * sizeof(uint16_t), kPageSize) >> kPageShift;
  const Pfn refs = TRY(frames().try_alloc_run(ref_pages));
  frame_refs().init(phys_to_virt<uint16_t>(refs), frames().max_pfn());
  return root;
}

ErrorOr<VirtAddr> map_kernel_io(uint64_t phys, uint64_t pages) {
  if (phys & (kPageSize - 1) || !pages || raw(g_kernel_root) == 0) return Errno::EINVAL;
  // RAM has its physmap mapping already: range.map refuses it (EEXIST).
  const VirtAddr va{PVK_PHYSMAP_BASE + phys};
  {
    LazyMmuSection section(g_kernel_root);
    TRY(finish_section(section, PVOP(range.map)(g_kernel_root, va, pages, FrameSource{nullptr, Pfn{phys >> kPageShift}},
                                                pte_flags::KernelRw)));
  }
  TRY(set_memory_uc(va, pages));
  return va;
}

}  // namespace pvk
