// selftest=reject: asks for a mapping Xen must refuse — a page-table frame
// (the kernel's own root) mapped writable — through set_pte, bypassing
// make_pte's read-only rule. Under Xen every backend must return an error
// (and emit a hypercall_error record naming the request) and leave the
// entry as it was; natively there is no such rule and the store succeeds.
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/layout.h"
#include "base/lib/kstring.h"
#include "kernel/selftest/selftest.h"
#include "base/frames/frame_allocator.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "base/frames/physmap.h"
#include "pvops/mmu_ops.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

constexpr VirtAddr kVa{PVK_SCRATCH_BASE + (uint64_t{2} << 30)};

// Reads (never writes) down to the L1 slot mapping va.
Pte* l1_slot(Pfn root, VirtAddr va) {
  Pte* table = phys_to_virt<Pte>(root);
  for (Level l = Level::L4; l != Level::L1; l = below(l)) table = phys_to_virt<Pte>(PVOP(pte_pfn)(table[index_at(va, l)]));
  return &table[index_at(va, Level::L1)];
}

}  // namespace

bool selftest_reject() {
  const uint64_t baseline = frames().free_count();
  const bool on_xen = !strcmp(g_platform->name, "xen");
  const Pfn frame = frames().must_alloc();

  // A harmless read-only mapping first, so the tables down to L1 exist.
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.map)(kernel_root(), kVa, 1, FrameSource{nullptr, frame}, pte_flags::KernelRo);
    must(section.finish(), "section");
    must(r, "map");
  }
  Pte* slot = l1_slot(kernel_root(), kVa);
  const Pte before = *slot;
  const Pte bad{PVOP(make_pte)(kernel_root(), pte_flags::KernelRo).raw | pte_bit::Write};

  auto r = PVOP(set_pte)(slot, bad);
  const Pte after = *slot;
  bool pass;
  if (on_xen) {
    pass = r.is_error() && after == before;
    if (!r.is_error()) kprintf("selftest reject: Xen accepted a writable mapping of a page table\n");
  } else {
    pass = !r.is_error() && after == bad;
  }
  // Put the harmless entry back (natively the bad one went in), then unmap.
  if (after != before) must(PVOP(set_pte)(slot, before), "restore");
  {
    LazyMmuSection section(kernel_root());
    auto u = PVOP(range.unmap)(kernel_root(), kVa, 1, {}, section);
    must(section.finish(), "section");
    must(u, "unmap");
  }
  frames().must_free(frame);
  const uint64_t after_frames = frames().free_count();
  Record("selftest")
      .str("name", "reject")
      .boolean("pass", pass && after_frames == baseline)
      .boolean("refused", r.is_error())
      .str("error", r.is_error() ? errno_name(r.error()) : "none")
      .boolean("entry_unchanged", after == before)
      .u64("free_frames_before", baseline)
      .u64("free_frames_after", after_frames);
  return pass && after_frames == baseline;
}

}  // namespace pvk
