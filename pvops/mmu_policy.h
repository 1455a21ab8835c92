// What the shared page-table walk (pvops/walk/) needs from a backend: the
// hooks of one "policy", stated as a concept so each backend can
// static_assert that it provides them (executable interface documentation).
// Inside the walk only the page cursor (pvops/walk/cursor.h) calls them.
//
// Visibility rule the walk relies on: a store at L2 or above is visible in
// memory when store() returns (the walk reads upper levels back at once); an
// L1 store may be deferred until the lazy-MMU section is flushed, and the
// walk never reads back an L1 entry it wrote in the same section.
#pragma once
#include <concepts>

#include "base/lib/error_or.h"
#include "pvops/pte.h"

namespace pvk {

template <typename P>
concept MmuPolicy = requires(Pte* slot, Pte v, Level level, Pfn pfn, PteFlags flags) {
  // The single choke point through which every entry store goes.
  { P::store(slot, v, level) } -> std::same_as<ErrorOr<void>>;
  // Read-modify-write of a present leaf that must not lose A/D bits.
  { P::modify_prot_start(slot) } -> std::same_as<Pte>;
  { P::modify_prot_commit(slot, v, v) } -> std::same_as<ErrorOr<void>>;
  // Encoding: frame numbers in entries are the environment's business.
  // make() builds a leaf (a backend may restrict it, e.g. Xen maps page-table
  // frames read-only); make_table() an entry pointing at a lower table.
  { P::make(pfn, flags) } -> std::same_as<Pte>;
  { P::make_table(pfn) } -> std::same_as<Pte>;
  { P::pfn_of(v) } -> std::same_as<Pfn>;
  // A frame becomes / stops being a page table at this level.
  { P::prepare_table(pfn, level) } -> std::same_as<ErrorOr<void>>;
  { P::retire_table(pfn, level) } -> std::same_as<ErrorOr<void>>;
  // Pushes deferred L1 stores out (the lazy-MMU section's flush), when the
  // walk must read back what it wrote in the same section.
  { P::flush_queue() } -> std::same_as<ErrorOr<void>>;
  // Table-granular writers (mmu=unhook, mmu=auto; pvops/unhook_tables.h).
  // With kTableHints the cursor names each L1 table where it enters it for
  // stores (its one table-hint hook): begin_table(l2_slot, base, entries) —
  // the L2 entry holding the table, the 2 MiB it covers, how many of its
  // entries the operation will store — so the backend may take the whole
  // table out of Xen's hands first; without it the count is never computed.
  // Such a backend may also hold an L2 entry "unhooked" (empty in memory)
  // for a while; l2_entry(slot) is the entry as the walk must see it (the
  // saved one; the plain read for every other policy), and the walk reads
  // every L2 entry through it.
  { P::kTableHints } -> std::convertible_to<bool>;
  { P::begin_table(slot, VirtAddr{}, 1u) } -> std::same_as<ErrorOr<void>>;
  { P::l2_entry(slot) } -> std::same_as<Pte>;
};

}  // namespace pvk
