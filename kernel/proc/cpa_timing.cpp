#include "kernel/proc/cpa_timing.h"

#include "base/arch/cpu.h"
#include "arch/finish.h"
#include "base/frames/frame_allocator.h"
#include "base/layout.h"
#include "mm/cpa.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

// Apart from the selftests' scratch ranges (1-3 GiB in) and the backends'.
constexpr VirtAddr kBase{PVK_SCRATCH_BASE + (uint64_t{8} << 30)};

Pfn g_frames[kMaxCpaPages];

void free_frame(void*, VirtAddr, Pte old) { frames().must_free(PVOP(pte_pfn)(old)); }

// Unmaps whatever of the range is mapped, freeing those frames.
ErrorOr<void> unmap_range(uint64_t pages) {
  LazyMmuSection section(kernel_root(), OnRefusal::Retry);
  auto r = PVOP(range.unmap)(kernel_root(), kBase, pages, UnmapVisitor{&free_frame, nullptr}, section);
  auto f = section.finish();
  return r.is_error() ? r : f;
}

}  // namespace

ErrorOr<CpaTiming> time_cpa_cycle(uint64_t pages) {
  if (pages == 0 || pages > kMaxCpaPages) return Errno::EINVAL;
  for (uint64_t i = 0; i < pages; ++i) {
    auto f = frames().try_alloc();
    if (f.is_error()) {
      while (i) frames().must_free(g_frames[--i]);
      return f.error();
    }
    g_frames[i] = f.value();
  }
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.map)(kernel_root(), kBase, pages, FrameSource{g_frames, {}}, pte_flags::KernelRw);
    auto f = section.finish();
    if (r.is_error() || f.is_error()) {
      // The frames that were not mapped are freed here, the others by the unmap.
      for (uint64_t i = 0; i < pages; ++i)
        if (PVOP(range.lookup)(kernel_root(), kBase + i * kPageSize).is_error()) frames().must_free(g_frames[i]);
      must(unmap_range(pages), "cpa timing: unmap after a failed map");
      return r.is_error() ? r.error() : f.error();
    }
  }
  CpaTiming t;
  const uint64_t t0 = cpu::rdtsc();
  auto wc = set_memory_wc(kBase, pages);
  const uint64_t t1 = cpu::rdtsc();
  auto wb = wc.is_error() ? wc : set_memory_wb(kBase, pages);
  const uint64_t t2 = cpu::rdtsc();
  t.wc_ns = tsc_to_ns(t1 - t0);
  t.wb_ns = tsc_to_ns(t2 - t1);
  TRY(unmap_range(pages));
  // A hypervisor may refuse memory types to this domain (Xen lets only a
  // domain with I/O access set PCD/PWT/PAT on its RAM): that is EPERM.
  if (wb.is_error()) return wb.error() == Errno::EINVAL ? Errno::EPERM : wb.error();
  return t;
}

}  // namespace pvk
