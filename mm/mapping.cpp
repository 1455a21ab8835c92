// Changes of an AddressSpace's mappings: mmap, munmap, mprotect (with
// ptshare's whole-table path), brk, map_frames (program loading), and
// unshare (shared tables copied out before a change writes into them).
#include "mm/address_space.h"

#include "base/abi.h"
#include "base/counters.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "mm/address_space_parts.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/call/pvop.h"

namespace pvk {

using namespace space;

ErrorOr<void> AddressSpace::unmap_pages(VirtAddr start, VirtAddr end) {
  LazyMmuSection section(root_, tlb_, OnRefusal::Retry);
  auto r = PVOP(range.unmap)(root_, start, (end - start) >> kPageShift, put_frames_after_flush(section), section);
  return finish(section, r);
}

ErrorOr<VirtAddr> AddressSpace::mmap(VirtAddr addr, uint64_t len, uint32_t prot, uint32_t flags, bool fixed,
                                     PageSource source) {
  SpinGuard guard(lock_);
  if (len == 0 || (raw(addr) & (kPageSize - 1)) || len > abi::kUserTop) return Errno::EINVAL;
  if (source && (flags & vm::Shared)) return Errno::EINVAL;  // only private file mappings exist
  const uint64_t size = pages_of(len) << kPageShift;
  if (fixed) {
    if (raw(addr) < kPageSize || raw(addr + size) > abi::kUserTop || addr + size < addr) return Errno::EINVAL;
    TRY(munmap_locked(addr, size));
  } else {
    // First gap at or above the mmap base that fits.
    addr = VirtAddr{abi::kUserMmapBase};
    for (unsigned i = 0; i < count_; ++i) {
      const Vma& v = vmas_[i];
      if (v.end <= addr) continue;
      if (v.start >= addr + size) break;
      addr = v.end;
    }
    if (raw(addr + size) > abi::kUserStackTop - abi::kUserStackPages * kPageSize) return Errno::ENOMEM;
  }
  TRY(add_vma(Vma{addr, addr + size, prot, flags, source}));
  source.hold();
  if (source && !g_policy.file_demand) {
    if (auto r = populate_from_source(*find(addr)); r.is_error()) {
      must(munmap_locked(addr, size), "undo file mmap");
      return r.error();
    }
  }
  if (flags & vm::Shared) {
    // Shared anonymous memory has no backing object to fault pages in from:
    // every sharer must see the same frames, so they exist from the start.
    if (auto r = populate_shared(addr, size, prot); r.is_error()) {
      must(munmap_locked(addr, size), "undo shared mmap");
      return r.error();
    }
  }
  merge_neighbours();
  return addr;
}

ErrorOr<void> AddressSpace::populate_shared(VirtAddr addr, uint64_t size, uint32_t prot) {
  Pfn chunk[64];
  for (VirtAddr va = addr; va < addr + size;) {
    unsigned n = 0;
    for (; n < 64 && va + n * kPageSize < addr + size; ++n) {
      auto f = frames().try_alloc();
      if (f.is_error()) {
        while (n--) frames().must_free(chunk[n]);
        return f.error();
      }
      chunk[n] = f.value();
      clear_user_page(chunk[n]);
    }
    TRY(map_frames_locked(va, chunk, n, prot));  // on failure it keeps or frees each frame itself
    va = va + n * kPageSize;
  }
  return {};
}

ErrorOr<void> AddressSpace::munmap(VirtAddr addr, uint64_t len) {
  SpinGuard guard(lock_);
  return munmap_locked(addr, len);
}

ErrorOr<void> AddressSpace::munmap_locked(VirtAddr addr, uint64_t len) {
  if ((raw(addr) & (kPageSize - 1)) || len == 0) return Errno::EINVAL;
  if (len > abi::kUserTop) return Errno::EINVAL;  // also keeps the rounding below from wrapping
  const VirtAddr end = addr + (pages_of(len) << kPageShift);
  if (raw(end) > abi::kUserTop || end < addr) return Errno::EINVAL;
  TRY(unshare(addr, end, Coverage::Partial));  // whole shared tables are only let go of
  TRY(carve(addr, end));
  TRY(unmap_pages(addr, end));
  unsigned out = 0;
  for (unsigned i = 0; i < count_; ++i) {
    if (vmas_[i].end <= addr || vmas_[i].start >= end) {
      if (out != i) vmas_[out] = vmas_[i];
      ++out;
    } else
      vmas_[i].source.drop();
  }
  count_ = out;
  return {};
}

template <PteAccess E>
[[gnu::always_inline]] inline ErrorOr<void> AddressSpace::mprotect_in(VirtAddr addr, uint64_t len, uint32_t prot) {
  SpinGuard guard(lock_);
  if ((raw(addr) & (kPageSize - 1)) || (prot & ~(vm::Read | vm::Write | vm::Exec))) return Errno::EINVAL;
  if (len > abi::kUserTop) return Errno::EINVAL;
  const VirtAddr end = addr + (pages_of(len) << kPageShift);
  if (raw(end) > abi::kUserTop || end < addr) return Errno::EINVAL;
  if (len == 0) return {};
  // Every page of the range must be mapped (Linux: ENOMEM otherwise).
  for (VirtAddr p = addr; p < end;) {
    const Vma* v = find(p);
    if (!v) return Errno::ENOMEM;
    p = v->end;
  }
  // Taking write away keeps whole shared tables shared (their gates are
  // closed already); any other change needs this space's own copies.
  const bool removes_write_only = !any_vma_in(addr, end, [&](const Vma& v) { return (v.prot & ~vm::Write) != prot; });
  // Whether the leaves change only in write (every VMA of the range differs
  // from the new rights in that alone): then the walk is told just that, and
  // can change whole tables at their L2 entry without reading their leaves.
  const bool write_only = !any_vma_in(addr, end, [&](const Vma& v) {
    return (leaf_flags(v.prot).bits ^ leaf_flags(prot).bits) != pte_bit::Write;
  });
  TRY(unshare(addr, end, removes_write_only ? Coverage::Partial : Coverage::All));
  TRY(carve(addr, end));
  for (unsigned i = 0; i < count_; ++i)
    if (vmas_[i].start >= addr && vmas_[i].end <= end) vmas_[i].prot = prot;
  const PteFlags want = leaf_flags(prot);
  const uint64_t managed = pte_bit::Present | pte_bit::ProtNone | pte_bit::Write | pte_bit::Nx;
  const uint64_t changing = write_only ? pte_bit::Write : managed;
  const PteFlags set{want.bits & changing}, clear{~want.bits & changing};
  merge_neighbours();
  LazyMmuSection section(root_, tlb_, OnRefusal::Retry);  // the VMAs already say the new rights
  ErrorOr<void> r;
  if (!g_policy.ptshare) {
    r = PVOP_ENC(E, range.protect)(root_, addr, (end - addr) >> kPageShift, set, clear, section);
    return finish(section, r);
  }
  // ptshare: a whole table whose leaves differ from the new rights only in
  // write changes at its L2 entry — unless shared memory is mapped there: a
  // closed gate over shared frames could only open by making them Cow.
  for (VirtAddr at = addr; at < end && !r.is_error();) {
    const VirtAddr table = align_down(at, kTableSpan);
    const VirtAddr next = table + kTableSpan < end ? table + kTableSpan : end;
    const uint64_t pages = (next - at) >> kPageShift;
    r = table_holds_only_private_memory(table) ? PVOP(range.protect_tables)(root_, at, pages, set, clear, section)
                                               : PVOP_ENC(E, range.protect)(root_, at, pages, set, clear, section);
    at = next;
  }
  return finish(section, r);
}

[[gnu::noinline]] ErrorOr<void> AddressSpace::mprotect_attrs(VirtAddr addr, uint64_t len, uint32_t prot) {
  return mprotect_in<PteAccess::Attrs>(addr, len, prot);
}

[[gnu::noinline]] ErrorOr<void> AddressSpace::mprotect_flags(VirtAddr addr, uint64_t len, uint32_t prot) {
  return mprotect_in<PteAccess::Flags>(addr, len, prot);
}

// A frameless switch that jumps to one copy or the other: each pays the
// same (the switch and one jump), and neither copy's registers are spent
// on the other's path.
ErrorOr<void> AddressSpace::mprotect(VirtAddr addr, uint64_t len, uint32_t prot) {
  return pick_encoding_copy<offsetof(MmuOps, range.protect)>([&] { return mprotect_attrs(addr, len, prot); },
                                                             [&] { return mprotect_flags(addr, len, prot); });
}

ErrorOr<void> AddressSpace::unshare(VirtAddr addr, VirtAddr end, Coverage which) {
  if (!g_policy.ptshare) return {};  // no table is ever shared
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);
  return finish(section, PVOP(range.unshare)(root_, addr, (end - addr) >> kPageShift, which, section));
}

ErrorOr<VirtAddr> AddressSpace::brk(VirtAddr new_end) {
  SpinGuard guard(lock_);
  if (raw(new_end) == 0 || new_end < brk_base_ || raw(new_end) > abi::kUserTop - kPageSize) return brk_end_;
  const VirtAddr old_top = align_up(brk_end_, kPageSize), new_top = align_up(new_end, kPageSize);
  if (new_top > old_top) {
    for (unsigned i = 0; i < count_; ++i)  // would run into another mapping
      if (vmas_[i].start < new_top && vmas_[i].end > old_top) return brk_end_;
    Vma* heap = nullptr;
    for (unsigned i = 0; i < count_; ++i)
      if ((vmas_[i].flags & vm::Heap) && vmas_[i].end == old_top) heap = &vmas_[i];
    if (heap)
      heap->end = new_top;
    else if (add_vma(Vma{old_top, new_top, vm::Read | vm::Write, vm::Heap}).is_error())
      return brk_end_;
  } else if (new_top < old_top) {
    if (munmap_locked(new_top, old_top - new_top).is_error()) return brk_end_;
  }
  brk_end_ = new_end;
  return brk_end_;
}

ErrorOr<void> AddressSpace::map_frames(VirtAddr addr, const Pfn* frames_in, uint64_t count, uint32_t prot) {
  SpinGuard guard(lock_);
  return map_frames_locked(addr, frames_in, count, prot);
}

ErrorOr<void> AddressSpace::map_frames_locked(VirtAddr addr, const Pfn* frames_in, uint64_t count, uint32_t prot) {
  for (uint64_t i = 0; i < count; ++i) frame_refs().set(frames_in[i], 1);
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);  // what was not mapped is read back and undone
  auto r = finish(section, PVOP(range.map)(root_, addr, count, FrameSource{frames_in, {}}, leaf_flags(prot)));
  if (r.is_error()) {
    // The frames that made it into the tables belong to the space now (its
    // munmap drops them); the others go back.
    for (uint64_t i = 0; i < count; ++i) {
      auto e = PVOP(range.lookup)(root_, addr + i * kPageSize);
      if (e.is_error() || PVOP(pte_pfn)(e.value()) != frames_in[i]) {
        frame_refs().set(frames_in[i], 0);
        frames().must_free(frames_in[i]);
      }
    }
  }
  return r;
}

}  // namespace pvk
