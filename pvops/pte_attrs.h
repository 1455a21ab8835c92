// A leaf's memory type, both ways. PAT, PCD and PWT select one of eight PAT
// slots, and what each slot means depends on how the PAT MSR was programmed
// — by pvk natively (kNativePat, at boot), by Xen under PV (kXenPat, fixed).
// Backends pass their layout: pte_attrs decodes a leaf's bits into a
// logical type (cache_attr_for), make_pte_attrs encodes a logical type into
// the bits of the layout's first slot holding it (cache_flags_for).
//
// The PAT bit is bit 7 in a 4 KiB leaf only (bit 12 in a huge leaf, where
// bit 7 means "huge"); pvk maps no huge pages, so these are leaf encodings.
#pragma once
#include "pvops/pte.h"

namespace pvk {

// x86 memory-type encodings in a PAT slot (2 and 3 are reserved).
enum class PatType : uint8_t { UC = 0, WC = 1, WT = 4, WP = 5, WB = 6, UCMinus = 7 };

constexpr uint64_t pat_value(const PatType (&slots)[8]) {
  uint64_t v = 0;
  for (unsigned i = 0; i < 8; ++i) v |= uint64_t(slots[i]) << (8 * i);
  return v;
}

// The slot a leaf selects: PAT is its bit 2, PCD bit 1, PWT bit 0.
constexpr unsigned pat_slot_of(Pte leaf) {
  return ((leaf.raw & pte_bit::Pat) ? 4 : 0) | ((leaf.raw & pte_bit::Pcd) ? 2 : 0) |
         ((leaf.raw & pte_bit::Pwt) ? 1 : 0);
}

// The leaf bits that select `slot` (0..7).
constexpr PteFlags pat_slot_flags(unsigned slot) {
  return PteFlags{((slot & 4) ? pte_bit::Pat : 0) | ((slot & 2) ? pte_bit::Pcd : 0) |
                  ((slot & 1) ? pte_bit::Pwt : 0)};
}

constexpr PatType pat_type_of(CacheAttr a) {
  switch (a) {
    case CacheAttr::WriteBack: return PatType::WB;
    case CacheAttr::WriteThrough: return PatType::WT;
    case CacheAttr::UncachedMinus: return PatType::UCMinus;
    case CacheAttr::Uncached: return PatType::UC;
    case CacheAttr::WriteCombining: return PatType::WC;
    case CacheAttr::WriteProtect: return PatType::WP;
  }
  return PatType::UC;
}

// What a slot's encoding means. The reserved encodings (2, 3) cannot be
// programmed (the MSR write faults); they read as the strictest type.
constexpr CacheAttr cache_attr_of(uint8_t pat_type) {
  switch (static_cast<PatType>(pat_type & 7)) {
    case PatType::WB: return CacheAttr::WriteBack;
    case PatType::WT: return CacheAttr::WriteThrough;
    case PatType::WC: return CacheAttr::WriteCombining;
    case PatType::WP: return CacheAttr::WriteProtect;
    case PatType::UCMinus: return CacheAttr::UncachedMinus;
    default: return CacheAttr::Uncached;
  }
}

// Decoding: the memory type a leaf has under this PAT.
constexpr CacheAttr cache_attr_for(uint64_t pat_msr, Pte leaf) {
  return cache_attr_of(static_cast<uint8_t>((pat_msr >> (8 * pat_slot_of(leaf))) & 0xff));
}

// The lowest slot of this PAT holding the type, or -1 if none does (the
// power-on layout has neither WC nor WP).
constexpr int pat_slot_for(uint64_t pat_msr, CacheAttr a) {
  for (unsigned slot = 0; slot < 8; ++slot)
    if (((pat_msr >> (8 * slot)) & 0xff) == uint64_t(pat_type_of(a))) return static_cast<int>(slot);
  return -1;
}

constexpr bool pat_has_every_type(uint64_t pat_msr) {
  for (CacheAttr a : kEveryCacheAttr)
    if (pat_slot_for(pat_msr, a) < 0) return false;
  return true;
}

// Encoding: the PWT/PCD/PAT bits that give a leaf this type under this PAT
// (the lowest such slot). Only for layouts that have every type
// (pat_has_every_type), which both of pvk's are.
constexpr PteFlags cache_flags_for(uint64_t pat_msr, CacheAttr a) {
  return pat_slot_flags(static_cast<unsigned>(pat_slot_for(pat_msr, a)) & 7);
}

// The power-on PAT (WB, WT, UC-, UC twice): what the CPU starts with. It has
// no WC, which is why pvk replaces it natively.
inline constexpr PatType kPowerOnPat[8] = {PatType::WB, PatType::WT, PatType::UCMinus, PatType::UC,
                                           PatType::WB, PatType::WT, PatType::UCMinus, PatType::UC};

// pvk's own PAT, programmed into IA32_PAT at native boot (arch/native,
// before any mapping uses a slot other than 0). Linux's layout: slots 0-3
// keep the power-on meaning of PWT/PCD except that PWT alone is WC instead of
// WT, so WB (0), WC (PWT), UC- (PCD) and UC (PCD|PWT) need no PAT bit; the
// upper half adds WP (PAT|PWT) and WT (PAT|PCD|PWT).
inline constexpr PatType kNativePat[8] = {PatType::WB, PatType::WC, PatType::UCMinus, PatType::UC,
                                          PatType::WB, PatType::WP, PatType::UCMinus, PatType::WT};
inline constexpr uint64_t kNativePatMsr = pat_value(kNativePat);
static_assert(kNativePatMsr == 0x0407050600070106ull);
static_assert(pat_has_every_type(kNativePatMsr));

// Xen's PAT, which PV guests run on and cannot change: XEN_MSR_PAT in Xen's
// xen/arch/x86/include/asm/processor.h (RELEASE-4.17.0: 0x050100070406),
// declared there "an ABI with PV guests" and pinned by a BUILD_BUG_ON in
// xen/arch/x86/mm.c. The public headers (xen.h, above MMU_NORMAL_PT_UPDATE)
// only draw it in a comment: WB, WT, UC-, UC, WC, WP, then two slots
// reserved, which Xen programs as UC. WC is the PAT bit alone (Xen's
// _PAGE_WC), WP is PAT|PWT (_PAGE_WP).
inline constexpr PatType kXenPat[8] = {PatType::WB, PatType::WT, PatType::UCMinus, PatType::UC,
                                       PatType::WC, PatType::WP, PatType::UC,      PatType::UC};
inline constexpr uint64_t kXenPatMsr = pat_value(kXenPat);
static_assert(kXenPatMsr == 0x0000050100070406ull);
static_assert(pat_has_every_type(kXenPatMsr));

}  // namespace pvk
