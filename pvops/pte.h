// Typed page-table entries. A Pte holds the value exactly as the MMU (or
// Xen) sees it: under Xen PV its frame field is a machine frame, so only
// pvops may build one (make_pte) or read its frame back (pte_pfn). Flag bits
// are architectural and the same in every environment.
#pragma once
#include "base/lib/types.h"

namespace pvk {

// Page-table levels, named like Linux's 4-level tables: L1 entries are
// PTEs (set_pte), L2 PMDs (set_pmd), L3 PUDs (set_pud), L4 P4Ds (set_p4d).
enum class Level : uint8_t { L1 = 1, L2 = 2, L3 = 3, L4 = 4 };

constexpr unsigned index_at(VirtAddr va, Level l) {
  return static_cast<unsigned>((raw(va) >> (kPageShift + 9 * (static_cast<unsigned>(l) - 1))) & 511);
}
// Bytes covered by one entry at this level (4 KiB, 2 MiB, 1 GiB, 512 GiB).
constexpr uint64_t entry_span(Level l) { return kPageSize << (9 * (static_cast<unsigned>(l) - 1)); }
constexpr Level below(Level l) { return static_cast<Level>(static_cast<unsigned>(l) - 1); }
inline constexpr unsigned kEntriesPerTable = 512;

namespace pte_bit {
inline constexpr uint64_t Present = uint64_t{1} << 0;
inline constexpr uint64_t Write = uint64_t{1} << 1;
inline constexpr uint64_t User = uint64_t{1} << 2;
inline constexpr uint64_t Pwt = uint64_t{1} << 3;
inline constexpr uint64_t Pcd = uint64_t{1} << 4;
inline constexpr uint64_t Accessed = uint64_t{1} << 5;
inline constexpr uint64_t Dirty = uint64_t{1} << 6;
inline constexpr uint64_t Pat = uint64_t{1} << 7;  // L1 only; Huge at L2/L3
inline constexpr uint64_t Huge = uint64_t{1} << 7;
inline constexpr uint64_t Global = uint64_t{1} << 8;
inline constexpr uint64_t Soft0 = uint64_t{1} << 9;  // available to software
// mm's copy-on-write marker: the frame is shared; a write fault copies it
// (or takes it over if it is the last reference). Never writable while set.
inline constexpr uint64_t Cow = Soft0;
// mm's PROT_NONE marker: the leaf is not present but still owns its frame.
inline constexpr uint64_t ProtNone = uint64_t{1} << 10;
inline constexpr uint64_t Nx = uint64_t{1} << 63;
// The three bits of a leaf that pick its PAT slot, hence its memory type.
inline constexpr uint64_t CacheMask = Pwt | Pcd | Pat;
inline constexpr uint64_t FrameMask = 0x000ffffffffff000ull;
inline constexpr uint64_t FlagMask = ~FrameMask;
}  // namespace pte_bit

// Flags of an entry, without the frame. A strong type so a raw PTE value
// cannot be passed where flags are expected.
struct PteFlags {
  uint64_t bits = 0;
  constexpr bool has(uint64_t b) const { return (bits & b) == b; }
  constexpr PteFlags with(uint64_t b) const { return {bits | b}; }
  constexpr PteFlags without(uint64_t b) const { return {bits & ~b}; }
  constexpr bool operator==(const PteFlags&) const = default;
};

struct Pte {
  uint64_t raw = 0;
  constexpr bool present() const { return raw & pte_bit::Present; }
  constexpr bool none() const { return raw == 0; }
  constexpr bool operator==(const Pte&) const = default;
};
static_assert(sizeof(Pte) == 8, "a PTE is one 64-bit word");
static_assert(sizeof(PteFlags) == 8);

// Memory types a mapping can ask for (the x86 ones, as Linux's cache modes).
// Which PTE bits encode each one is environment policy (the PAT layout
// differs natively and under Xen), which is why both directions go through
// pvops: pte_attrs reads a leaf's type, make_pte_attrs gives a type's bits.
enum class CacheAttr : uint8_t { WriteBack, WriteThrough, UncachedMinus, Uncached, WriteCombining, WriteProtect };
inline constexpr CacheAttr kEveryCacheAttr[] = {CacheAttr::WriteBack,     CacheAttr::WriteThrough,
                                                CacheAttr::UncachedMinus, CacheAttr::Uncached,
                                                CacheAttr::WriteCombining, CacheAttr::WriteProtect};
// "wb", "wt", "uc-", "uc", "wc", "wp" (records, test messages).
constexpr const char* cache_attr_name(CacheAttr a) {
  switch (a) {
    case CacheAttr::WriteBack: return "wb";
    case CacheAttr::WriteThrough: return "wt";
    case CacheAttr::UncachedMinus: return "uc-";
    case CacheAttr::Uncached: return "uc";
    case CacheAttr::WriteCombining: return "wc";
    case CacheAttr::WriteProtect: return "wp";
  }
  return "?";
}

// Common flag sets.
namespace pte_flags {
inline constexpr PteFlags KernelRw{pte_bit::Present | pte_bit::Write | pte_bit::Nx};
inline constexpr PteFlags KernelRo{pte_bit::Present | pte_bit::Nx};
inline constexpr PteFlags KernelRx{pte_bit::Present};
inline constexpr PteFlags UserRo{pte_bit::Present | pte_bit::User | pte_bit::Nx};
inline constexpr PteFlags UserRw{pte_bit::Present | pte_bit::User | pte_bit::Write | pte_bit::Nx};
inline constexpr PteFlags UserRx{pte_bit::Present | pte_bit::User};
// Intermediate tables grant everything; leaves restrict.
inline constexpr PteFlags Table{pte_bit::Present | pte_bit::Write | pte_bit::User};
}  // namespace pte_flags

}  // namespace pvk
