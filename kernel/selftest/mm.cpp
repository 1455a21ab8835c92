// selftest=mm: thousands of pages mapped, write-protected, made writable
// again and unmapped through pvops, each step checked twice — by walking the
// tables (lookup) and by touching memory (probes that survive faults). Also
// the error paths: EEXIST on a double map, ENOMEM with no frame leaked.
#include "base/arch/cpu.h"
#include "base/arch/probe.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "arch/finish.h"
#include "base/layout.h"
#include "kernel/selftest/selftest.h"
#include "base/frames/frame_allocator.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "base/frames/physmap.h"
#include "pvops/mmu_ops.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

// Enough pages to span several L1 tables and an L2 boundary.
constexpr uint64_t kPages = 4096;
// Start 5 pages below a 1 GiB boundary so the range crosses L1, L2 and L3
// table boundaries in its first few pages.
constexpr uint64_t kBase = PVK_SCRATCH_BASE + (uint64_t{1} << 30) - 5 * kPageSize;

Pfn g_frames_used[kPages];

VirtAddr page_va(uint64_t i) { return VirtAddr{kBase + i * kPageSize}; }
uint64_t pattern(uint64_t i) { return 0x5eed000000000000ull ^ (i * 0x9e3779b97f4a7c15ull); }

class Checker {
 public:
  explicit Checker(const char* step) : step_(step) {}
  bool expect(bool ok, const char* what, uint64_t page) {
    if (!ok && failures_++ < 5) kprintf("selftest mm: %s: %s (page %lu)\n", step_, what, page);
    return ok;
  }
  bool ok() const { return failures_ == 0; }
  uint64_t failures() const { return failures_; }

 private:
  const char* step_;
  uint64_t failures_ = 0;
};

struct Timed {
  uint64_t start = cpu::rdtsc();
  uint64_t ns() const { return tsc_to_ns(cpu::rdtsc() - start); }
};

void step_record(const char* step, bool pass, uint64_t ns, const MmuCounters& before) {
  Record r("selftest_step");
  r.str("name", "mm").str("step", step).boolean("pass", pass).u64("pages", kPages).u64("ns", ns);
  add_counters(r, g_mmu_counters - before);
}

bool check_mapped(Checker& c, bool writable) {
  for (uint64_t i = 0; i < kPages; ++i) {
    auto pte = PVOP(range.lookup)(kernel_root(), page_va(i));
    if (!c.expect(!pte.is_error(), "lookup found no entry", i)) continue;
    c.expect(PVOP(pte_pfn)(pte.value()) == g_frames_used[i], "entry maps the wrong frame", i);
    c.expect(PVOP(pte_flags)(pte.value()).has(pte_bit::Write) == writable, "write permission wrong", i);
    c.expect(PVOP(pte_flags)(pte.value()).has(pte_bit::Nx), "entry executable", i);
    c.expect(PVOP(pte_attrs)(pte.value()) == CacheAttr::WriteBack, "not write-back", i);
    uint64_t v = 0;
    c.expect(probe_read_u64(as_ptr<void>(page_va(i)), &v) && v == pattern(i), "read through mapping", i);
    uint8_t byte = 0;
    const bool wrote = probe_write_u8(as_ptr<uint8_t>(page_va(i)) + 8, 0x5a);
    c.expect(wrote == writable, writable ? "write faulted" : "write to read-only page did not fault", i);
    c.expect(probe_read_u8(as_ptr<uint8_t>(page_va(i)) + 8, &byte) && byte == (writable ? 0x5a : 0),
             "byte after write", i);
    if (writable) *(as_ptr<uint8_t>(page_va(i)) + 8) = 0;
  }
  return c.ok();
}

ErrorOr<void> protect(PteFlags set, PteFlags clear) {
  LazyMmuSection section(kernel_root());
  auto r = PVOP(range.protect)(kernel_root(), page_va(0), kPages, set, clear, section);
  auto f = section.finish();
  if (r.is_error()) return r;
  return f;
}

void free_unmapped_frame(void* ctx, VirtAddr, Pte old) {
  ++*static_cast<uint64_t*>(ctx);
  frames().must_free(PVOP(pte_pfn)(old));
}

// Exhausts the allocator, then asks for a mapping that needs new tables:
// it must fail with ENOMEM and give every frame back.
bool check_exhaustion() {
  const uint64_t before = frames().free_count();
  // Chain the hoarded frames through their own first word (no extra memory).
  Pfn head{};
  uint64_t hoarded = 0;
  for (;;) {
    auto f = frames().try_alloc();
    if (f.is_error()) break;
    *phys_to_virt<uint64_t>(f.value()) = raw(head);
    head = f.value();
    ++hoarded;
  }
  LazyMmuSection section(kernel_root());
  auto r = PVOP(range.map)(kernel_root(), VirtAddr{PVK_SCRATCH_BASE + (uint64_t{3} << 30)}, 1,
                           FrameSource{nullptr, Pfn{0x100}}, pte_flags::KernelRo);
  must(section.finish(), "section finish");
  for (uint64_t i = 0; i < hoarded; ++i) {
    Pfn next{*phys_to_virt<uint64_t>(head)};
    frames().must_free(head);
    head = next;
  }
  const bool ok = r.is_error() && r.error() == Errno::ENOMEM && hoarded == before &&
                  frames().free_count() == before;
  Record("selftest_step")
      .str("name", "mm")
      .str("step", "enomem")
      .boolean("pass", ok)
      .str("error", r.is_error() ? errno_name(r.error()) : "none")
      .u64("hoarded", hoarded)
      .u64("free_frames_before", before)
      .u64("free_frames_after", frames().free_count());
  return ok;
}

}  // namespace

bool selftest_mm() {
  const uint64_t baseline = frames().free_count();
  bool all = true;

  for (uint64_t i = 0; i < kPages; ++i) {
    g_frames_used[i] = frames().must_alloc();
    *phys_to_virt<uint64_t>(g_frames_used[i]) = pattern(i);  // written via the physmap
    *(phys_to_virt<uint8_t>(g_frames_used[i]) + 8) = 0;
  }

  // map
  MmuCounters c0 = g_mmu_counters;
  Timed t;
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.map)(kernel_root(), page_va(0), kPages, FrameSource{g_frames_used, {}},
                             pte_flags::KernelRw);
    must(section.finish(), "map section");
    must(r, "map");
  }
  uint64_t ns = t.ns();
  Checker mapped("map");
  all &= check_mapped(mapped, true);
  step_record("map", mapped.ok(), ns, c0);

  // A second map over the same range must be refused, not overwrite.
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.map)(kernel_root(), page_va(kPages / 2), 1, FrameSource{nullptr, Pfn{0x100}},
                             pte_flags::KernelRw);
    must(section.finish(), "remap section");
    Checker again("double map");
    again.expect(r.is_error() && r.error() == Errno::EEXIST, "double map not refused with EEXIST", kPages / 2);
    all &= check_mapped(again, true);
    Record("selftest_step").str("name", "mm").str("step", "eexist").boolean("pass", again.ok());
    all &= again.ok();
  }

  // write-protect
  c0 = g_mmu_counters;
  t = Timed{};
  must(protect({}, PteFlags{pte_bit::Write}), "protect ro");
  ns = t.ns();
  Checker ro("protect ro");
  all &= check_mapped(ro, false);
  step_record("protect_ro", ro.ok(), ns, c0);

  // and back
  c0 = g_mmu_counters;
  t = Timed{};
  must(protect(PteFlags{pte_bit::Write}, {}), "protect rw");
  ns = t.ns();
  Checker rw("protect rw");
  all &= check_mapped(rw, true);
  step_record("protect_rw", rw.ok(), ns, c0);

  // unmap, freeing each frame from the entry that mapped it
  c0 = g_mmu_counters;
  t = Timed{};
  uint64_t visited = 0;
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.unmap)(kernel_root(), page_va(0), kPages, UnmapVisitor{&free_unmapped_frame, &visited},
                               section);
    must(section.finish(), "unmap section");
    must(r, "unmap");
  }
  ns = t.ns();
  Checker gone("unmap");
  gone.expect(visited == kPages, "unmap did not visit every page", visited);
  for (uint64_t i = 0; i < kPages; ++i) {
    auto pte = PVOP(range.lookup)(kernel_root(), page_va(i));
    gone.expect(pte.is_error() && pte.error() == Errno::ENOENT, "entry still present", i);
    uint8_t b;
    gone.expect(!probe_read_u8(as_ptr<void>(page_va(i)), &b), "read of unmapped page did not fault", i);
  }
  all &= gone.ok();
  step_record("unmap", gone.ok(), ns, c0);

  all &= check_exhaustion();

  const uint64_t after = frames().free_count();
  Record("selftest")
      .str("name", "mm")
      .boolean("pass", all && after == baseline)
      .u64("pages", kPages)
      .u64("free_frames_before", baseline)
      .u64("free_frames_after", after);
  return all && after == baseline;
}

}  // namespace pvk
