// File-backed VMAs (mm/page_source.h): their pages come from the VMA's
// source, mapped read-only and copy-on-write from the source's own frames.
// How much is mapped when is the boot's policy (file_map=, fault_around=):
//  - eager (the default): mmap and exec map every page the source has at
//    once (map_source_pages over the whole VMA), as pvk always did — a
//    run of range.map stores per 64 pages, no fault for anything a
//    program reads;
//  - demand: nothing at mmap; a read fault or an instruction fetch maps the
//    page and the neighbours of its aligned window of fault_around pages
//    that the source has and this space does not map yet (Linux's
//    fault-around), a write fault copies the page at once.
// Which costs less depends on how much of a file a run touches and what a
// fault costs against an entry (docs/linux-programs.md has the figures).
#include "base/counters.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "mm/address_space.h"
#include "mm/address_space_parts.h"
#include "pvops/call/pvop.h"
#include "pvops/tlb/lazy_mmu_section.h"

namespace pvk {

using namespace space;

namespace {

uint64_t source_index(const Vma& v, VirtAddr page) { return v.source.first_page + ((page - v.start) >> kPageShift); }

// Whether the leaf for `page` now maps `frame`.
bool maps(Pfn root, VirtAddr page, Pfn frame) {
  const auto now = PVOP(range.lookup)(root, page);
  return !now.is_error() && PVOP(pte_pfn)(now.value()) == frame;
}

bool mapped(Pfn root, VirtAddr page) { return !PVOP(range.lookup)(root, page).is_error(); }

}  // namespace

ErrorOr<void> AddressSpace::map_source_pages(const Vma& v, VirtAddr lo, VirtAddr hi, bool skip_mapped) {
  Pfn frame[kSourceChunk];
  VirtAddr at[kSourceChunk];
  unsigned n = 0;  // frames taken
  const PteFlags flags = leaf_flags(v.prot).without(pte_bit::Write).with(pte_bit::Cow);
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);  // what was not mapped is read back and undone
  ErrorOr<void> r;
  // Runs of pages to map (not mapped yet, or every page when !skip_mapped):
  // the source's frames for each taken in one call, mapped with one
  // range.map (a walk per table, not per page).
  for (VirtAddr p = lo; p < hi && n < kSourceChunk && !r.is_error();) {
    VirtAddr end = p;
    if (skip_mapped) {
      while (end < hi && mapped(root_, end)) end = end + kPageSize;  // the mapped ones before the run
      p = end;
    }
    while (end < hi && (end - p) >> kPageShift < kSourceChunk - n && !(skip_mapped && mapped(root_, end)))
      end = end + kPageSize;
    if (end == p) continue;
    const unsigned want = static_cast<unsigned>((end - p) >> kPageShift);
    const unsigned got = v.source.ops->take_pages(v.source.object, source_index(v, p), want, frame + n);
    for (unsigned i = 0; i < got; ++i) at[n + i] = p + i * kPageSize;
    if (got) r = PVOP(range.map)(root_, p, got, FrameSource{frame + n, {}}, flags);
    n += got;
    // Past the run, or past a page the source has no frame for (left to
    // demand paging: zeros).
    p = got < want ? p + (got + 1) * kPageSize : end;
  }
  r = finish(section, r);
  unsigned kept = n;
  if (r.is_error()) {
    kept = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (maps(root_, at[i], frame[i]))
        ++kept;
      else
        put_frame_ref(frame[i]);
    }
  }
  count_event(g_mm_stats.cow_frames_mapped, kept);
  return r;
}

ErrorOr<void> AddressSpace::populate_from_source(const Vma& v) {
  for (VirtAddr at = v.start; at < v.end;) {
    const VirtAddr next = v.end - at > kSourceChunk * kPageSize ? at + kSourceChunk * kPageSize : v.end;
    TRY(map_source_pages(v, at, next, /*skip_mapped=*/false));  // a fresh VMA: nothing is mapped
    at = next;
  }
  return {};
}

bool AddressSpace::fault_from_source(const Vma& v, VirtAddr page, bool write, SpareFrame& spare, FaultOutcome& out) {
  if (!write) {
    // The page and its window (within one L1 table: the window divides 2 MiB).
    const uint64_t window_bytes = uint64_t{g_policy.fault_around} * kPageSize;
    const VirtAddr window = align_down(page, window_bytes);
    const VirtAddr lo = window > v.start ? window : v.start;
    const VirtAddr hi = window + window_bytes < v.end ? window + window_bytes : v.end;
    auto r = map_source_pages(v, lo, hi, /*skip_mapped=*/true);
    if (mapped(root_, page)) {
      count_event(g_mm_stats.file_faults);
      out = FaultOutcome::handled();
      return true;
    }
    if (!r.is_error()) return false;  // the source has no frame for it: zeros
    out = FaultOutcome::out_of_memory(r.error());
    return true;
  }
  Pfn file_frame{};
  if (!v.source.ops->take_pages(v.source.object, source_index(v, page), 1, &file_frame)) return false;
  count_event(g_mm_stats.file_faults);
  // The page's own copy at once: one fault where mapping the file's frame
  // would be followed by a copy-on-write fault.
  Pfn fresh{};
  if (spare.valid) {
    fresh = spare.pfn;
    spare.valid = false;
  } else {
    auto f = frames().try_alloc();
    if (f.is_error()) {
      put_frame_ref(file_frame);
      out = FaultOutcome::out_of_memory(f.error());
      return true;
    }
    fresh = f.value();
  }
  copy_user_page(fresh, file_frame);
  put_frame_ref(file_frame);
  frame_refs().set(fresh, 1);
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);
  auto r = finish(section, PVOP(range.remap)(root_, page, fresh, leaf_flags(v.prot), section));
  if (!maps(root_, page, fresh)) {
    frame_refs().set(fresh, 0);
    frames().must_free(fresh);
    out = FaultOutcome::out_of_memory(r.is_error() ? r.error() : Errno::ENOMEM);
    return true;
  }
  count_event(g_mm_stats.cow_copies);
  out = FaultOutcome::handled();
  return true;
}

void AddressSpace::drop_sources() {
  for (unsigned i = 0; i < count_; ++i) vmas_[i].source.drop();
}

}  // namespace pvk
