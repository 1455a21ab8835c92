// Decoding a leaf's memory type: PAT, PCD and PWT select one of eight PAT
// slots, and what each slot means depends on how the PAT MSR was programmed
// — by us natively, by Xen under PV. Backends pass their PAT layout.
#pragma once
#include "pvops/pte.h"

namespace pvk {

// x86 memory-type encodings in a PAT slot.
enum class PatType : uint8_t { UC = 0, WC = 1, WT = 4, WP = 5, WB = 6, UCMinus = 7 };

constexpr uint64_t pat_value(const PatType (&slots)[8]) {
  uint64_t v = 0;
  for (unsigned i = 0; i < 8; ++i) v |= uint64_t(slots[i]) << (8 * i);
  return v;
}

constexpr CacheAttr cache_attr_for(uint64_t pat_msr, Pte leaf) {
  const unsigned slot = ((leaf.raw & pte_bit::Pat) ? 4 : 0) | ((leaf.raw & pte_bit::Pcd) ? 2 : 0) |
                        ((leaf.raw & pte_bit::Pwt) ? 1 : 0);
  switch (static_cast<PatType>((pat_msr >> (8 * slot)) & 7)) {
    case PatType::WB: return CacheAttr::WriteBack;
    case PatType::WT: return CacheAttr::WriteThrough;
    case PatType::WC: return CacheAttr::WriteCombining;
    case PatType::UCMinus: return CacheAttr::UncachedMinus;
    default: return CacheAttr::Uncached;
  }
}

// The power-on PAT, which pvk keeps natively.
inline constexpr PatType kPowerOnPat[8] = {PatType::WB, PatType::WT, PatType::UCMinus, PatType::UC,
                                           PatType::WB, PatType::WT, PatType::UCMinus, PatType::UC};

}  // namespace pvk
