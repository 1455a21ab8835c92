// The physmap: every pseudo-physical frame is reachable at a fixed offset.
// Page tables are always read and written through it, so a walk needs no
// temporary mappings. The kernel sets the offset to PVK_PHYSMAP_BASE; host
// tests point it at an in-memory arena standing in for RAM.
#pragma once
#include "base/lib/types.h"

namespace pvk {

extern uint64_t g_physmap_offset;

template <typename T = void>
inline T* phys_to_virt(Pfn pfn) {
  return reinterpret_cast<T*>(g_physmap_offset + (raw(pfn) << kPageShift));
}
inline Pfn virt_to_pfn(const void* p) {
  return Pfn{(reinterpret_cast<uint64_t>(p) - g_physmap_offset) >> kPageShift};
}

}  // namespace pvk
