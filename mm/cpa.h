// Memory types of kernel mappings, in the spirit of Linux's change_page_attr
// (set_memory_wc/uc/wb): callers name a logical type (CacheAttr) and the
// leaves get the PWT/PCD/PAT bits the platform's PAT layout gives it
// (PVOP(make_pte_attrs): pvk's own layout natively, Xen's fixed one under
// PV), through the range walk (PVOP(range.protect)) in one lazy-MMU section
// that also invalidates the TLB.
//
// Kernel virtual addresses only (the upper half), page-aligned; pages with
// no leaf are skipped, as protect does. Any type but WB is followed by a
// write-back and invalidation of the range's cache lines (clflush) unless
// the CPU snoops its own caches, so no dirty write-back line lands later over
// uncached writes. Unlike Linux, other mappings of the same frames (the
// physmap) keep their type: callers change the alias they use.
//
// Under Xen a leaf may carry cache bits only in a domain with I/O memory
// rights (dom0, or a domU with devices): elsewhere Xen refuses the update
// (L1_DISALLOW_MASK) and the error is returned, with the refused pages left
// as they were.
#pragma once
#include "base/lib/error_or.h"
#include "base/lib/types.h"
#include "pvops/pte.h"

namespace pvk {

// EINVAL for a misaligned, empty, wrapping or user-half range.
ErrorOr<void> set_memory_type(VirtAddr va, uint64_t pages, CacheAttr type);

inline ErrorOr<void> set_memory_wb(VirtAddr va, uint64_t pages) {
  return set_memory_type(va, pages, CacheAttr::WriteBack);
}
inline ErrorOr<void> set_memory_wc(VirtAddr va, uint64_t pages) {
  return set_memory_type(va, pages, CacheAttr::WriteCombining);
}
inline ErrorOr<void> set_memory_wt(VirtAddr va, uint64_t pages) {
  return set_memory_type(va, pages, CacheAttr::WriteThrough);
}
// As Linux's set_memory_uc: UC-, which an MTRR may still make WC.
inline ErrorOr<void> set_memory_uc(VirtAddr va, uint64_t pages) {
  return set_memory_type(va, pages, CacheAttr::UncachedMinus);
}

// The cache-line work the last set_memory_type did (for records): whether
// it flushed lines, and why not if it did not.
enum class CacheFlush : uint8_t { None, Lines, SelfSnoop, NoClflush };
const char* cache_flush_name(CacheFlush f);
CacheFlush last_cache_flush();

}  // namespace pvk
