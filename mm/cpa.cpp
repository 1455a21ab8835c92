#include "mm/cpa.h"

#include "base/arch/cpu.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/mmu_ops.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

CacheFlush g_last_flush = CacheFlush::None;

// What the CPU says about flushing: CPUID.01H:EDX.CLFSH (bit 19), the line
// size in EBX[15:8] (units of 8 bytes), EDX.SS (bit 27: the CPU snoops its
// own caches, so memory-type conflicts need no flush). Read once.
struct CacheInfo {
  bool known = false;
  bool clflush = false;
  bool self_snoop = false;
  unsigned line = 64;
};
CacheInfo g_cache;

const CacheInfo& cache_info() {
  if (!g_cache.known) {
    uint32_t a, b, c, d;
    cpu::cpuid(1, 0, a, b, c, d);
    g_cache.clflush = d & (1u << 19);
    g_cache.self_snoop = d & (1u << 27);
    const unsigned line = ((b >> 8) & 0xff) * 8;
    if (line) g_cache.line = line;
    g_cache.known = true;
  }
  return g_cache;
}

CacheFlush flush_lines(VirtAddr va, uint64_t pages) {
#ifdef PVK_KERNEL
  const CacheInfo& info = cache_info();
  if (info.self_snoop) return CacheFlush::SelfSnoop;
  if (!info.clflush) return CacheFlush::NoClflush;
  cpu::mfence();
  for (uint64_t i = 0; i < pages; ++i) {
    const VirtAddr page = va + i * kPageSize;
    // Only pages with a leaf: clflush of an unmapped address faults.
    auto leaf = PVOP(range.lookup)(kernel_root(), page);
    if (leaf.is_error() || !pte_has(leaf.value(), pte_bit::Present)) continue;
    for (uint64_t off = 0; off < kPageSize; off += info.line)
      cpu::clflush(reinterpret_cast<const volatile void*>(raw(page) + off));
  }
  cpu::mfence();
  return CacheFlush::Lines;
#else
  // Host tests: the addresses are the fake MMU's, not mapped in this process.
  (void)va, (void)pages, (void)&cache_info;
  return CacheFlush::None;
#endif
}

}  // namespace

const char* cache_flush_name(CacheFlush f) {
  switch (f) {
    case CacheFlush::None: return "none";
    case CacheFlush::Lines: return "clflush";
    case CacheFlush::SelfSnoop: return "self_snoop";
    case CacheFlush::NoClflush: return "no_clflush";
  }
  return "?";
}

CacheFlush last_cache_flush() { return g_last_flush; }

ErrorOr<void> set_memory_type(VirtAddr va, uint64_t pages, CacheAttr type) {
  constexpr uint64_t kKernelHalf = uint64_t{1} << 63;
  if (!pages || raw(va) % kPageSize || !(raw(va) & kKernelHalf) || pages > (~raw(va) >> kPageShift) + 1)
    return Errno::EINVAL;
  const PteFlags bits = PVOP(make_pte_attrs)(type);
  const PteFlags clear{pte_bit::CacheMask & ~bits.bits};
  LazyMmuSection section(kernel_root());
  auto r = PVOP(range.protect)(kernel_root(), va, pages, bits, clear, section);
  auto f = section.finish();
  g_last_flush = CacheFlush::None;
  if (r.is_error()) return r;
  if (f.is_error()) return f;
  if (type != CacheAttr::WriteBack) g_last_flush = flush_lines(va, pages);
  return {};
}

}  // namespace pvk
