// The page cursor: how the walk moves through an address space's tables
// over a backend's policy (pvops/mmu_policy.h, the concept), knowing
// nothing of table sharing or of any verb.
//
// Why it is shaped so. The walk is three parts, each over the one below:
// this cursor (the table at each level, the L1 for an address, populating
// and releasing tables, stretches, and the one place entries are written),
// table sharing with its gate (table_share.h), and the range verbs composed
// from both (range_ops.h). A feature meets the cursor at two hooks only:
//  - `ready(slot, va)`, given to l1_for/each_table, runs on an existing L1
//    before stores go into it: table sharing makes it private there;
//  - entering an L1 for stores (enter_l1, announce, GatheredStores): a
//    policy that declares kTableHints hears how many stores follow (unhook
//    and auto take the table out of Xen's hands then). The count is computed
//    only for such a policy, and only here is kTableHints read.
// Every function is a static member over (root, va): the cursor keeps no
// position between calls, so each verb walks from the root as it always
// did and its instantiation compiles to the code the single walk had.
#pragma once
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "base/lib/kstring.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/mmu_ops.h"
#include "pvops/mmu_policy.h"
#include "pvops/call/pvop_site.h"

namespace pvk::walk {

enum class Alloc : uint8_t { No, Yes };

template <MmuPolicy P, PteAccess Access>
class PageCursor {
 public:
  // ---- entries as the walk reads them ----

  // pte=attrs reads flag bits inline; pte=flags asks the backend each time.
  // A leaf that holds a frame: present, or made inaccessible by PROT_NONE
  // (not present, frame kept, marked ProtNone — Xen PV cannot express
  // "kernel-only" for user pages, so inaccessible must mean not present).
  static bool mapped(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flag_bits_site(e) & (pte_bit::Present | pte_bit::ProtNone);
    else
      return e.raw & (pte_bit::Present | pte_bit::ProtNone);
  }

  // An entry's flags: through pvops pte_flags under pte=flags, else the mask.
  static PteFlags flags_of(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flags_site(e);
    else
      return PteFlags{e.raw & pte_bit::FlagMask};
  }

  // An entry's flag image for tests of flag bits: its flag bits are the
  // entry's flags (through pvops pte_flags under pte=flags), the other bits
  // unspecified — mask it (pte_flag_bits_site: one instruction patched).
  static uint64_t flag_image(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flag_bits_site(e);
    else
      return e.raw;
  }
  // The same of the entry at slot, loaded by the site itself
  // (pte_flag_bits_at: patched, the load pte=attrs makes, nothing more).
  static uint64_t flag_image_at(const Pte* slot) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flag_bits_at(slot);
    else
      return slot->raw;
  }

  static bool has(Pte e, uint64_t bit) {
    if constexpr (Access == PteAccess::Flags)
      return (pte_flag_bits_site(e) & bit) == bit;  // bit: flag bits
    else
      return (e.raw & bit) == bit;
  }

  static bool writable(Pte e) { return has(e, pte_bit::Write); }

  static bool present(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flag_bits_site(e) & pte_bit::Present;
    else
      return e.present();
  }

  // An L2 entry as the walk must see it: the backend's saved entry while it
  // holds the table unhooked (pvops/backends/unhook_tables.h), else memory (every
  // other policy's l2_entry is the plain read).
  static Pte l2e(const Pte* slot) { return P::l2_entry(slot); }

  // The L1 table an L2 entry holding one points at.
  static Pte* l1_of(const Pte* l2_slot) { return phys_to_virt<Pte>(P::pfn_of(l2e(l2_slot))); }

  static VirtAddr table_base(VirtAddr va) { return VirtAddr{align_down(raw(va), entry_span(Level::L2))}; }

  static bool none_outside(const Pte* table, unsigned begin, unsigned end) {
    for (unsigned k = 0; k < kEntriesPerTable; ++k)
      if ((k < begin || k >= end) && !table[k].none()) return false;
    return true;
  }

  // An L2 table is empty when no entry is present as the walk sees them.
  static bool l2_table_empty(const Pte* table) {
    for (unsigned k = 0; k < kEntriesPerTable; ++k)
      if (!l2e(&table[k]).none()) return false;
    return true;
  }

  static uint64_t min(uint64_t a, uint64_t b) { return a < b ? a : b; }

  // ---- the store choke point ----

  // Every entry the walk writes goes through store(), or — for a present
  // leaf whose A/D bits the hardware may set meanwhile — through the
  // update_start/update_commit pair: the backend's store, and the count of
  // L2 stores (hooks, unhooks and gates) the ptshare figures are about.
  // (A table being built as plain memory, before it is a page table, is
  // filled with ordinary writes.)
  static ErrorOr<void> store(Pte* slot, Pte v, Level level) {
    if (level == Level::L2) count_event(g_mmu_counters.l2_writes);
    return P::store(slot, v, level);
  }
  static Pte update_start(Pte* slot) { return P::modify_prot_start(slot); }
  static ErrorOr<void> update_commit(Pte* slot, Pte old, Pte v) { return P::modify_prot_commit(slot, old, v); }

  // ---- tables per level ----

  // A table one level below `level`'s entry: allocated, prepared for the
  // backend (Xen: read-only, validated) and hooked in. Its frame is used
  // directly, so a deferred store would not matter even at L1.
  // Out of line: the rare path of the walks that inline table_for_level.
  [[gnu::noinline]] static ErrorOr<Pte*> populate(Pte* slot, Level level) {
    const Pfn pfn = TRY(frames().try_alloc());
    memset(phys_to_virt(pfn), 0, kPageSize);
    auto prepared = P::prepare_table(pfn, below(level));
    if (prepared.is_error()) {
      frames().must_free(pfn);
      return prepared.error();
    }
    auto hooked = store(slot, P::make_table(pfn), level);
    if (hooked.is_error()) {
      must(P::retire_table(pfn, below(level)), "retire unhooked table");
      frames().must_free(pfn);
      return hooked.error();
    }
    return phys_to_virt<Pte>(pfn);
  }

  // The table at `target` level covering va (the L4 table is the root).
  // Inlined into every verb, where `target` is a constant and the loop
  // unrolls: a single-entry verb (lookup, remap: a fault's three walks)
  // then costs what the compiled-in native image's inlined walk costs.
  [[gnu::always_inline]] static ErrorOr<Pte*> table_for_level(Pfn root, VirtAddr va, Level target, Alloc alloc = Alloc::No) {
    Pte* table = phys_to_virt<Pte>(root);
    for (Level l = Level::L4; l != target; l = below(l)) {
      Pte* slot = &table[index_at(va, l)];
      const Pte e = l == Level::L2 ? l2e(slot) : *slot;
      if (present(e)) {
        table = phys_to_virt<Pte>(P::pfn_of(e));
      } else if (alloc == Alloc::Yes) {
        table = TRY(populate(slot, l));
      } else {
        return Errno::ENOENT;
      }
    }
    return table;
  }

  // The L2 entry covering va when it holds an L1 table, or null.
  static Pte* hooked_l2_slot(Pfn root, VirtAddr va) {
    auto l2 = table_for_level(root, va, Level::L2);
    if (l2.is_error()) return nullptr;
    Pte* slot = &l2.value()[index_at(va, Level::L2)];
    return present(l2e(slot)) ? slot : nullptr;
  }

  // The L1 table covering va. A table made here is new and this space's
  // own; an existing one first goes through ready(l2_slot, va), which may
  // replace it (table sharing's gate: table_share.h).
  template <typename Ready>
  static ErrorOr<Pte*> l1_for(Pfn root, VirtAddr va, Alloc alloc, Ready&& ready) {
    Pte* l2 = TRY(table_for_level(root, va, Level::L2, alloc));
    Pte* slot = &l2[index_at(va, Level::L2)];
    if (!present(l2e(slot))) {
      if (alloc == Alloc::No) return Errno::ENOENT;
      return populate(slot, Level::L2);
    }
    TRY(ready(slot, va));
    return l1_of(slot);
  }

  // The L1 table covering va as it is (no store follows).
  static ErrorOr<Pte*> l1_for(Pfn root, VirtAddr va) {
    return l1_for(root, va, Alloc::No, [](Pte*, VirtAddr) -> ErrorOr<void> { return {}; });
  }

  // ---- releasing emptied tables ----

  // Unhooks a table this space alone holds and frees it after the flush.
  static ErrorOr<void> release_l1(Pte* slot, VirtAddr base, LazyMmuSection& section) {
    const Pfn l1 = P::pfn_of(l2e(slot));
    TRY(store(slot, Pte{}, Level::L2));
    // The CPU may cache the unhooked table's entry (paging-structure caches)
    // even when no leaf under it was present: invalidate an address it
    // covered before the frame is reused.
    section.invalidate(base);
    frame_refs().set(l1, 0);  // its share count (table_share.h) goes with it
    return section.release_table(l1, Level::L1);
  }

  // After an entry of `table` (at `level`) was cleared: if the table is now
  // empty, unhook it from its parent and free it. Stops at L2: L3 and L4
  // tables live as long as their address space (kernel L3s are shared).
  static ErrorOr<void> release_if_empty(Pfn root, VirtAddr va, Pte* table, Level level, LazyMmuSection& section) {
    if (level != Level::L2 || !l2_table_empty(table)) return {};
    Pte* l3 = TRY(table_for_level(root, va, Level::L3));
    TRY(store(&l3[index_at(va, Level::L3)], Pte{}, Level::L3));
    section.invalidate(va);
    return section.release_table(virt_to_pfn(table), Level::L2);
  }

  // ---- stretches ----

  // Splits [va, va + pages) at L1-table boundaries and calls
  // fn(stretch_va, first_index, count, pages_done_before) for each stretch.
  // The lambda is inlined: still one indirect call per range, none per entry.
  template <typename Fn>
  // Always inlined: a small range's loop is a few instructions, and a call
  // of its own would cost more than it (protect's native body inlines it as
  // the compiled-in image does).
  [[gnu::always_inline]] static ErrorOr<void> each_stretch(VirtAddr va, uint64_t pages, Fn&& fn) {
    for (uint64_t i = 0; i < pages;) {
      const VirtAddr v = va + i * kPageSize;
      const unsigned first = index_at(v, Level::L1);
      const unsigned count = static_cast<unsigned>(min(pages - i, uint64_t{kEntriesPerTable - first}));
      TRY(fn(v, first, count, i));
      i += count;
    }
    return {};
  }

  // each_stretch with the stretch's L1 table (through l1_for and `ready`):
  // fn(l1_table, first_index, count, pages_done_before). With Alloc::No,
  // stretches without an L1 table are skipped.
  template <typename Ready, typename Fn>
  static ErrorOr<void> each_table(Pfn root, VirtAddr va, uint64_t pages, Alloc alloc, Ready&& ready, Fn&& fn) {
    return each_stretch(va, pages, [&](VirtAddr v, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      auto table = l1_for(root, v, alloc, ready);
      if (!table.is_error()) return fn(table.value(), first, count, i);
      return alloc == Alloc::Yes ? ErrorOr<void>(table.error()) : ErrorOr<void>{};
    });
  }

  // ---- entering an L1 for stores: the table-hint hook ----

  // Whether the policy hears, before the first store into an L1 table, how
  // many of its entries the operation will store (MmuPolicy::kTableHints).
  static constexpr bool kHearsCounts = P::kTableHints;

  // The cursor enters the L1 table under l2_slot to store into it;
  // stores() says how many entries follow (called only if the policy hears).
  template <typename Count>
  static ErrorOr<void> enter_l1(Pte* l2_slot, VirtAddr va, Count&& stores) {
    return hint([l2_slot] { return l2_slot; }, va, stores);
  }

  // enter_l1 for the L1 table covering va, found from the root (only by a
  // policy that hears).
  static ErrorOr<void> announce(Pfn root, VirtAddr va, unsigned stores) {
    return hint([root, va] { return hooked_l2_slot(root, va); }, va, [stores] { return stores; });
  }

  // Stores into one L1 table whose number is known only after a pass over
  // it (fork's write-protects of the parent). A policy that hears counts
  // gets them gathered, announced and made in flush(); any other gets each
  // at once, as the pass finds it, with no second pass.
  class GatheredStores {
   public:
    // The store for entry `index`: now() at once (its result), or noted for
    // flush(), the entry then being `later` (what the store will make it).
    template <typename Now>
    ErrorOr<Pte> add(unsigned index, Pte later, Now&& now) {
      if constexpr (kHearsCounts) {
        indices_[count_++] = static_cast<uint16_t>(index);
        return later;
      } else {
        return now();
      }
    }
    // Announces the gathered stores to the table covering va and makes each
    // with store(index).
    template <typename Store>
    ErrorOr<void> flush(Pfn root, VirtAddr va, Store&& store) {
      if (!count_) return {};
      TRY(announce(root, va, count_));
      for (unsigned n = 0; n < count_; ++n) TRY(store(indices_[n]));
      return {};
    }

   private:
    uint16_t indices_[kHearsCounts ? kEntriesPerTable : 1];
    unsigned count_ = 0;
  };

 private:
  template <typename Slot, typename Count>
  static ErrorOr<void> hint(Slot&& slot, VirtAddr va, Count&& stores) {
    if constexpr (kHearsCounts) {
      if (Pte* l2_slot = slot()) return P::begin_table(l2_slot, table_base(va), stores());
    }
    return {};
  }
};

}  // namespace pvk::walk
