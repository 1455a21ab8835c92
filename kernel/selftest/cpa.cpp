// selftest=cpa: memory types of kernel mappings (mm/cpa.h) end to end. A
// scratch page is made WC and its leaf read back through the walk: its
// PWT/PCD/PAT bits must be the platform layout's WC slot (natively pvk's own
// PAT, slot 1 = PWT, as read back from IA32_PAT; under Xen PV Xen's fixed
// PAT, slot 4 = the PAT bit) and pte_attrs must say WC; then back to WB.
// Every logical type makes the same round trip on one page. Then
// set_memory_wc / set_memory_wb are timed on 1, 64, 512 and 4096 pages,
// one record per size with the median ns per call and per page and the
// counters of one call: the cost of set_memory_wc per page per backend.
#include "base/arch/cpu.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/arch/platform.h"
#include "base/arch/probe.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "base/layout.h"
#include "base/lib/kstring.h"
#include "base/lib/median.h"
#include "arch/native/native.h"
#include "arch/finish.h"
#include "kernel/selftest/selftest.h"
#include "mm/cpa.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/mmu_ops.h"
#include "pvops/pte_attrs.h"
#include "pvops/call/pvop.h"

namespace pvk {

namespace {

constexpr uint64_t kPages = 4096;
// 3 pages below a 16 GiB boundary of the scratch area (clear of selftest=mm's
// ranges): the sizes timed cross an L1, an L2 and an L3 boundary.
constexpr uint64_t kBase = PVK_SCRATCH_BASE + (uint64_t{16} << 30) - 3 * kPageSize;
constexpr uint64_t kSizes[] = {1, 64, 512, 4096};
// Calls timed per size (each a set_memory_wc then a set_memory_wb).
constexpr unsigned kReps[] = {64, 16, 8, 4};
constexpr unsigned kMaxReps = 64;
// Leaf bits that may change besides the cache bits: the CPU's A/D.
constexpr uint64_t kAd = pte_bit::Accessed | pte_bit::Dirty;

Pfn g_frames[kPages];

VirtAddr page_va(uint64_t i) { return VirtAddr{kBase + i * kPageSize}; }

bool on_xen() { return !strcmp(g_platform->name, "xen"); }

// The platform's PAT layout, and the WC bits it must yield — written out
// here, not derived from make_pte_attrs, so the test checks the encoder.
uint64_t layout() { return on_xen() ? kXenPatMsr : kNativePatMsr; }
uint64_t expected_wc_bits() { return on_xen() ? pte_bit::Pat : pte_bit::Pwt; }

class Checker {
 public:
  explicit Checker(const char* step) : step_(step) {}
  bool expect(bool ok, const char* what, uint64_t page) {
    if (!ok && failures_++ < 5) kprintf("selftest cpa: %s: %s (page %lu)\n", step_, what, page);
    return ok;
  }
  bool ok() const { return failures_ == 0; }

 private:
  const char* step_;
  uint64_t failures_ = 0;
};

// The flags map() left in the last page's leaf (under Xen PV with the bits
// Xen adds to kernel leaves), but for A/D and the cache bits.
uint64_t reference_flags() {
  auto leaf = PVOP(range.lookup)(kernel_root(), page_va(kPages - 1));
  return leaf.is_error() ? 0 : PVOP(pte_flags)(leaf.value()).bits & ~(kAd | pte_bit::CacheMask);
}

// Pages [first, first + n) map their frames read-write, with `type`'s bits
// in the platform's layout and nothing else changed.
void check_type(Checker& c, uint64_t first, uint64_t n, CacheAttr type) {
  const uint64_t bits = cache_flags_for(layout(), type).bits;
  const uint64_t reference = reference_flags();
  c.expect((reference & pte_flags::KernelRw.bits) == pte_flags::KernelRw.bits, "the last leaf is not read-write, no-exec",
           kPages - 1);
  for (uint64_t i = first; i < first + n; ++i) {
    auto leaf = PVOP(range.lookup)(kernel_root(), page_va(i));
    if (!c.expect(!leaf.is_error(), "lookup found no leaf", i)) continue;
    const Pte e = leaf.value();
    c.expect(PVOP(pte_pfn)(e) == g_frames[i], "leaf maps the wrong frame", i);
    c.expect((PVOP(pte_flags)(e).bits & ~(kAd | pte_bit::CacheMask)) == reference,
             "flags other than the cache bits changed", i);
    c.expect((e.raw & pte_bit::CacheMask) == bits, "cache bits are not the layout's for the type", i);
    c.expect(PVOP(pte_attrs)(e) == type, "pte_attrs reads another type", i);
  }
}


// (The boot record says which pte= mode ran.)
Record& context(Record& r, const char* step) { return r.str("name", "cpa").str("step", step).str("mmu", mmu_name()); }

// One page made WC and back, checked through the walk and by touching it.
bool step_wc_bits() {
  Checker c("wc_bits");
  const bool native = !on_xen();
  // Natively the MSR itself must hold pvk's layout (arch/native
  // programmed it); under PV the guest cannot read it, Xen's is fixed.
  const uint64_t pat_msr = native ? native::pat_msr() : kXenPatMsr;
  c.expect(pat_msr == layout(), "IA32_PAT does not hold pvk's layout", 0);
  c.expect(PVOP(make_pte_attrs)(CacheAttr::WriteCombining).bits == expected_wc_bits(),
           "make_pte_attrs(WC) is not the platform's WC slot", 0);

  c.expect(!set_memory_wc(page_va(0), 1).is_error(), "set_memory_wc failed", 0);
  const CacheFlush flush = last_cache_flush();
  auto leaf = PVOP(range.lookup)(kernel_root(), page_va(0));
  const uint64_t wc_bits = leaf.is_error() ? ~uint64_t{0} : leaf.value().raw & pte_bit::CacheMask;
  c.expect(wc_bits == expected_wc_bits(), "leaf's cache bits are not the platform's WC slot", 0);
  c.expect(!leaf.is_error() && PVOP(pte_attrs)(leaf.value()) == CacheAttr::WriteCombining, "pte_attrs is not WC", 0);
  const unsigned slot = leaf.is_error() ? 0 : pat_slot_of(leaf.value());
  c.expect(((pat_msr >> (8 * slot)) & 0xff) == uint64_t(PatType::WC), "the slot selected is not WC in the PAT", 0);
  check_type(c, 0, 1, CacheAttr::WriteCombining);
  check_type(c, 1, 1, CacheAttr::WriteBack);  // the neighbour is untouched
  // Writes through the WC mapping reach the frame (read back, once WB
  // again, through the physmap).
  *as_ptr<volatile uint64_t>(page_va(0)) = 0x3c0ffee5;
  cpu::mfence();  // drains the write-combining buffers
  c.expect(!set_memory_wb(page_va(0), 1).is_error(), "set_memory_wb failed", 0);
  check_type(c, 0, 1, CacheAttr::WriteBack);
  c.expect(*phys_to_virt<volatile uint64_t>(g_frames[0]) == 0x3c0ffee5, "write through the WC mapping lost", 0);

  Record r("selftest_step");
  context(r, "wc_bits")
      .boolean("pass", c.ok())
      .str("layout", native ? "pvk" : "xen")
      .u64("pat", layout())
      .u64("pat_msr", pat_msr)
      .u64("wc_bits", wc_bits)
      .u64("expected_wc_bits", expected_wc_bits())
      .u64("wc_slot", slot)
      .str("cache_flush", cache_flush_name(flush));
  return c.ok();
}

// Every logical type on one page, and back to WB.
bool step_types() {
  Checker c("types");
  unsigned checked = 0;
  for (CacheAttr type : kEveryCacheAttr) {
    c.expect(!set_memory_type(page_va(2), 1, type).is_error(), cache_attr_name(type), 2);
    check_type(c, 2, 1, type);
    c.expect(!set_memory_wb(page_va(2), 1).is_error(), "set_memory_wb failed", 2);
    check_type(c, 2, 1, CacheAttr::WriteBack);
    ++checked;
  }
  // Bad ranges are refused and change nothing.
  c.expect(set_memory_wc(page_va(0) + 8, 1).is_error(), "misaligned range accepted", 0);
  c.expect(set_memory_wc(page_va(0), 0).is_error(), "empty range accepted", 0);
  c.expect(set_memory_wc(VirtAddr{0x400000}, 1).is_error(), "user address accepted", 0);
  check_type(c, 0, 3, CacheAttr::WriteBack);
  Record r("selftest_step");
  context(r, "types").boolean("pass", c.ok()).u64("types", checked);
  return c.ok();
}

// set_memory_wc / set_memory_wb on n pages, reps times each.
bool step_timing(uint64_t n, unsigned reps) {
  Checker c("timing");
  uint64_t wc_ns[kMaxReps], wb_ns[kMaxReps];
  MmuCounters wc_counters{}, wb_counters{};
  CacheFlush wc_flush = CacheFlush::None;
  for (unsigned rep = 0; rep < reps; ++rep) {
    const MmuCounters c0 = g_mmu_counters;
    const uint64_t t0 = cpu::rdtsc();
    const bool wc_ok = !set_memory_wc(page_va(0), n).is_error();
    const uint64_t t1 = cpu::rdtsc();
    const MmuCounters c1 = g_mmu_counters;
    if (rep == 0) {
      wc_flush = last_cache_flush();
      c.expect(wc_ok, "set_memory_wc failed", 0);
      check_type(c, 0, n, CacheAttr::WriteCombining);
      if (n < kPages) check_type(c, n, 1, CacheAttr::WriteBack);
    }
    const MmuCounters c2 = g_mmu_counters;
    const uint64_t t2 = cpu::rdtsc();
    const bool wb_ok = !set_memory_wb(page_va(0), n).is_error();
    const uint64_t t3 = cpu::rdtsc();
    if (rep == 0) {
      wc_counters = c1 - c0;
      wb_counters = g_mmu_counters - c2;
      c.expect(wb_ok, "set_memory_wb failed", 0);
      check_type(c, 0, n, CacheAttr::WriteBack);
    }
    wc_ns[rep] = tsc_to_ns(t1 - t0);
    wb_ns[rep] = tsc_to_ns(t3 - t2);
  }
  uint64_t wc_min = ~uint64_t{0}, wc_max = 0, wb_min = ~uint64_t{0}, wb_max = 0;
  for (unsigned i = 0; i < reps; ++i) {
    wc_min = wc_ns[i] < wc_min ? wc_ns[i] : wc_min;
    wc_max = wc_ns[i] > wc_max ? wc_ns[i] : wc_max;
    wb_min = wb_ns[i] < wb_min ? wb_ns[i] : wb_min;
    wb_max = wb_ns[i] > wb_max ? wb_ns[i] : wb_max;
  }
  const uint64_t wc = sort_and_median(wc_ns, reps), wb = sort_and_median(wb_ns, reps);
  Record r("selftest_step");
  context(r, "timing")
      .boolean("pass", c.ok())
      .u64("pages", n)
      .u64("reps", reps)
      .u64("wc_ns", wc)
      .u64("wc_ns_min", wc_min)
      .u64("wc_ns_max", wc_max)
      .u64("wc_ns_per_page", wc / n)
      .u64("wb_ns", wb)
      .u64("wb_ns_min", wb_min)
      .u64("wb_ns_max", wb_max)
      .u64("wb_ns_per_page", wb / n)
      .u64("wb_hypercalls", wb_counters.hypercalls)
      .u64("wb_ptwr_traps", wb_counters.ptwr_traps)
      .str("cache_flush", cache_flush_name(wc_flush));
  add_counters(r, wc_counters);  // of one set_memory_wc call
  return c.ok();
}

void free_unmapped_frame(void* ctx, VirtAddr, Pte old) {
  ++*static_cast<uint64_t*>(ctx);
  frames().must_free(PVOP(pte_pfn)(old));
}

}  // namespace

bool selftest_cpa() {
  const uint64_t baseline = frames().free_count();
  for (uint64_t i = 0; i < kPages; ++i) {
    g_frames[i] = frames().must_alloc();
    *phys_to_virt<uint64_t>(g_frames[i]) = 0;
  }
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.map)(kernel_root(), page_va(0), kPages, FrameSource{g_frames, {}}, pte_flags::KernelRw);
    must(section.finish(), "cpa map section");
    must(r, "cpa map");
  }

  bool all = step_wc_bits();
  all &= step_types();
  // A 4 KiB leaf's cache bits, pte_attrs and pte_flags agree for every
  // combination of PWT/PCD/PAT under the platform's layout.
  for (unsigned slot = 0; slot < 8; ++slot) {
    const Pte e = PVOP(make_pte)(g_frames[0], pte_flags::KernelRw.with(pat_slot_flags(slot).bits));
    const bool agree = PVOP(pte_attrs)(e) == cache_attr_of(uint8_t(layout() >> (8 * slot))) &&
                       (PVOP(pte_flags)(e).bits & pte_bit::CacheMask) == pat_slot_flags(slot).bits;
    if (!agree) kprintf("selftest cpa: slot %u: pte_attrs/pte_flags disagree with the layout\n", slot);
    all &= agree;
  }
  for (unsigned i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) all &= step_timing(kSizes[i], kReps[i]);

  uint64_t visited = 0;
  {
    LazyMmuSection section(kernel_root());
    auto r = PVOP(range.unmap)(kernel_root(), page_va(0), kPages, UnmapVisitor{&free_unmapped_frame, &visited},
                               section);
    must(section.finish(), "cpa unmap section");
    must(r, "cpa unmap");
  }
  const uint64_t after = frames().free_count();
  const bool pass = all && visited == kPages && after == baseline;
  Record r("selftest");
  r.str("name", "cpa")
      .boolean("pass", pass)
      .str("mmu", mmu_name())
      .u64("pages", kPages)
      .u64("free_frames_before", baseline)
      .u64("free_frames_after", after);
  return pass;
}

}  // namespace pvk
