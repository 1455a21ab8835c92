// The one page-table walk. Every backend instantiates it with its policy
// (pvops/mmu_policy.h) and publishes the instantiations in its pvops table, so
// the walk — table allocation, range splitting, emptiness tracking, TLB
// bookkeeping — exists once, and backends only vary how an entry is written.
#pragma once
#include "base/lib/kstring.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/mmu_policy.h"
#include "base/frames/physmap.h"
#include "pvops/mmu_ops.h"
#include "pvops/call/pvop_site.h"

namespace pvk {

template <MmuPolicy P, PteAccess Access>
class PageWalk {
 public:
  static ErrorOr<void> map(Pfn root, VirtAddr va, uint64_t pages, FrameSource src, PteFlags flags) {
    return each_table(root, va, pages, Alloc::Yes, Gate::PushDown, LazyMmuSection::open_section(), [&](Pte* l1, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      TRY(announce(root, va + i * kPageSize, count));
      for (unsigned k = 0; k < count; ++k) {
        if (mapped(l1[first + k])) return Errno::EEXIST;
        // A not-present entry is never cached in the TLB: no flush needed.
        TRY(store(&l1[first + k], P::make(src.at(i + k), flags), Level::L1));
      }
      return {};
    });
  }

  static ErrorOr<void> protect(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                               LazyMmuSection& section) {
    return protect_leaves(root, va, pages, set, clear, section, Tables::Leaves);
  }

  static ErrorOr<void> protect_tables(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                                      LazyMmuSection& section) {
    return protect_leaves(root, va, pages, set, clear, section, Tables::Whole);
  }

  static ErrorOr<void> unmap(Pfn root, VirtAddr va, uint64_t pages, UnmapVisitor visit, LazyMmuSection& section) {
    uint64_t i = 0;
    while (i < pages) {
      const VirtAddr v = va + i * kPageSize;
      const unsigned first = index_at(v, Level::L1);
      const uint64_t in_table = min(pages - i, uint64_t{kEntriesPerTable - first});
      auto l2_lookup = table_for_level(root, v, Level::L2);
      if (l2_lookup.is_error()) {
        i += in_table;
        continue;
      }
      if (!present(l2e(&l2_lookup.value()[index_at(v, Level::L2)]))) {
        // No L1 here, but the L2 may be empty (a map that failed after
        // creating it): reclaim it like one emptied by this unmap.
        TRY(release_if_empty(root, v, l2_lookup.value(), Level::L2, section));
        i += in_table;
        continue;
      }
      Pte* l2 = l2_lookup.value();
      Pte* l2_slot = &l2[index_at(v, Level::L2)];
      if (in_table == kEntriesPerTable && holders(P::pfn_of(l2e(l2_slot))) > 1) {
        // Another space still uses the table: this one only lets go of it.
        i += in_table;
        TRY(drop_shared(l2_slot, v, section));
        TRY(release_if_empty(root, v, l2, Level::L2, section));
        continue;
      }
      // Clearing some leaves of a shared table: this space's own copy first.
      if (in_table != kEntriesPerTable) TRY(make_private(l2_slot, v, Gate::Keep, section));
      const Pfn l1_pfn = P::pfn_of(l2e(l2_slot));
      Pte* l1 = phys_to_virt<Pte>(l1_pfn);
      if (in_table == kEntriesPerTable) {
        // The whole table goes: no need to clear its entries one by one
        // (under Xen each clear is an update or a trap). Report them, unhook
        // the table, and let its release drop what it referenced.
        for (unsigned idx = 0; idx < kEntriesPerTable; ++idx) {
          const Pte old = l1[idx];
          if (!mapped(old)) continue;
          const VirtAddr at = va + (i + idx) * kPageSize;
          section.invalidate(at);
          if (visit.fn) visit.fn(visit.ctx, at, old);
        }
        i += in_table;
        TRY(release_l1(l2_slot, v, section));
        TRY(release_if_empty(root, v, l2, Level::L2, section));
        continue;
      }
      if constexpr (P::kTableHints) {
        unsigned stores = 0;
        for (unsigned idx = first; idx < first + in_table; ++idx) stores += !l1[idx].none();
        TRY(P::begin_table(l2_slot, table_base(v), stores));
      }
      for (unsigned idx = first; idx < first + in_table; ++idx) {
        const Pte old = l1[idx];
        if (old.none()) continue;
        TRY(store(&l1[idx], Pte{}, Level::L1));
        const VirtAddr at = va + (i + (idx - first)) * kPageSize;
        if (mapped(old)) {
          section.invalidate(at);
          if (visit.fn) visit.fn(visit.ctx, at, old);
        }
      }
      i += in_table;
      // The L1 stores above may still be queued, so emptiness is judged from
      // the entries outside the range, which this call did not write. An
      // earlier call in the same lazy section may have, though: if they look
      // occupied, push the queue out and look again (at most at the two
      // partial tables at the ends of a range).
      const unsigned end = first + static_cast<unsigned>(in_table);
      bool empty = none_outside(l1, first, end);
      if (!empty) {
        TRY(P::flush_queue());
        empty = none_outside(l1, first, end);
      }
      if (empty) {
        TRY(release_l1(l2_slot, v, section));
        TRY(release_if_empty(root, v, l2, Level::L2, section));
      }
    }
    return {};
  }

  static ErrorOr<Pte> lookup(Pfn root, VirtAddr va) {
    Pte* l1 = TRY(l1_for(root, va, Alloc::No, Gate::None, nullptr));
    const Pte e = l1[index_at(va, Level::L1)];
    if (!mapped(e)) return Errno::ENOENT;
    return e;
  }

  static ErrorOr<void> populate(Pfn root, VirtAddr va, Level level) {
    TRY(table_for_level(root, va, level, Alloc::Yes));
    return {};
  }

  static ErrorOr<void> remap(Pfn root, VirtAddr va, Pfn pfn, PteFlags flags, LazyMmuSection& section) {
    Pte* l1 = TRY(l1_for(root, va, Alloc::Yes, Gate::Keep, &section));
    Pte* slot = &l1[index_at(va, Level::L1)];
    const bool was_present = mapped(*slot);
    TRY(store(slot, P::make(pfn, flags), Level::L1));
    if (was_present) section.invalidate(va);
    return {};
  }

  // Write-protects a parent's leaf and marks it shared, returning the entry
  // as the child gets it: the hot loop of fork after dirtying memory, the
  // one batching exists to speed up. Read-only and PROT_NONE leaves are
  // marked too, or a later mprotect would make the shared frame writable in
  // both.
  static ErrorOr<Pte> write_protect_for_fork(Pte* slot, VirtAddr at, LazyMmuSection& section) {
    const Pte old = P::modify_prot_start(slot);
    const Pte e{(old.raw & ~pte_bit::Write) | pte_bit::Cow};
    TRY(P::modify_prot_commit(slot, old, e));
    if (has(old, pte_bit::Write)) section.invalidate(at);
    return e;
  }

  static ErrorOr<void> fork_range(Pfn parent, Pfn child, VirtAddr va, uint64_t pages, ForkMode mode,
                                  LazyMmuSection& section) {
    return each_table(parent, va, pages, Alloc::No, Gate::Keep, &section, [&](Pte* src, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      // A table-granular backend must hear how many stores the parent's
      // table takes before the first of them. Rather than a counting pass
      // (512 entries read per table: most of a sparse fork's difference from
      // batched under mmu=auto), the copy pass notes which parent leaves
      // need the write-protect and a second pass stores those. Other
      // backends write-protect as they copy.
      uint16_t protect[P::kTableHints ? kEntriesPerTable : 1];
      unsigned protects = 0;
      // The child's table for this stretch. A table the child does not have
      // yet is filled as ordinary private memory and published (validated,
      // under Xen) in one store when complete, as Linux fills a new mm
      // before pinning it; an existing one is written entry by entry.
      Pte* dst = nullptr;
      Pte* fresh_slot = nullptr;  // the child's L2 slot a fresh table will hook into
      Pfn fresh{};
      for (unsigned k = 0; k < count; ++k) {
        Pte e = src[first + k];
        if (!mapped(e)) continue;
        const VirtAddr at = va + (i + k) * kPageSize;
        if (!dst) {
          Pte* l2 = TRY(table_for_level(child, at, Level::L2, Alloc::Yes));
          Pte* slot = &l2[index_at(at, Level::L2)];
          if (present(l2e(slot))) {
            TRY(make_private(slot, at, Gate::Keep, section));
            dst = phys_to_virt<Pte>(P::pfn_of(l2e(slot)));
            if constexpr (P::kTableHints) TRY(P::begin_table(slot, table_base(at), count - k));
          } else {
            fresh = TRY(frames().try_alloc());
            dst = phys_to_virt<Pte>(fresh);
            memset(static_cast<void*>(dst), 0, kPageSize);
            fresh_slot = slot;
          }
        }
        if (mode == ForkMode::CopyOnWrite && !has(e, pte_bit::Cow)) {
          if constexpr (P::kTableHints) {
            e = Pte{(e.raw & ~pte_bit::Write) | pte_bit::Cow};
            protect[protects++] = static_cast<uint16_t>(first + k);
          } else {
            e = TRY(write_protect_for_fork(&src[first + k], at, section));
          }
        }
        frame_refs().inc(P::pfn_of(e));
        if (fresh_slot) {
          dst[first + k] = e;  // not a page table yet: a plain store
        } else {
          TRY(store(&dst[first + k], e, Level::L1));
        }
      }
      if (fresh_slot) {
        auto prepared = P::prepare_table(fresh, Level::L1);
        if (!prepared.is_error()) prepared = store(fresh_slot, P::make_table(fresh), Level::L2);
        if (prepared.is_error()) {
          // Nothing references the entries yet: drop what they took.
          for (unsigned k = 0; k < kEntriesPerTable; ++k)
            if (mapped(dst[k])) frame_refs().dec(P::pfn_of(dst[k]));
          frames().must_free(fresh);
          return prepared.error();
        }
      }
      // After the child's table is published: a refused write-protect then
      // leaves a child whose teardown frees that table and its references.
      if (protects) {
        TRY(announce(parent, va + i * kPageSize, protects));
        for (unsigned n = 0; n < protects; ++n)
          TRY(write_protect_for_fork(&src[protect[n]], va + (i + (protect[n] - first)) * kPageSize, section));
      }
      return {};
    });
  }

  static ErrorOr<void> release_user_tables(Pfn root, LazyMmuSection& section) {
    Pte* l4 = phys_to_virt<Pte>(root);
    for (unsigned i4 = 0; i4 < kEntriesPerTable / 2; ++i4) {
      if (!present(l4[i4])) continue;
      const Pfn l3_pfn = P::pfn_of(l4[i4]);
      if (!none_outside(phys_to_virt<Pte>(l3_pfn), 0, 0)) return Errno::EBUSY;
      TRY(store(&l4[i4], Pte{}, Level::L4));
      TRY(section.release_table(l3_pfn, Level::L3));
    }
    return {};
  }

  static ErrorOr<bool> share_table(Pfn parent, Pfn child, VirtAddr va, unsigned min_leaves, LazyMmuSection& section) {
    const VirtAddr base = table_base(va);
    Pte* from = hooked_l2_slot(parent, base);
    if (!from) return false;
    const Pfn l1 = P::pfn_of(l2e(from));
    if (holders(l1) == 1 && mapped_leaves(phys_to_virt<const Pte>(l1)) < min_leaves) return false;
    Pte* child_l2 = TRY(table_for_level(child, base, Level::L2, Alloc::Yes));
    Pte* to = &child_l2[index_at(base, Level::L2)];
    if (present(*to)) return Errno::EEXIST;  // fork fills a fresh space: a table here is a caller's bug
    if (writable(l2e(from))) {
      // The parent's writable translations under this table go with the gate.
      TRY(store(from, Pte{l2e(from).raw & ~pte_bit::Write}, Level::L2));
      section.invalidate_range(base, kEntriesPerTable);
    }
    TRY(store(to, Pte{P::make_table(l1).raw & ~pte_bit::Write}, Level::L2));
    frame_refs().set(l1, static_cast<uint16_t>(holders(l1) + 1));
    count_event(g_mmu_counters.pt_shares);
    return true;
  }

  static ErrorOr<void> open_for_write(Pfn root, VirtAddr va, LeafRights rights, LazyMmuSection& section) {
    Pte* slot = hooked_l2_slot(root, va);
    if (!slot) return {};
    return make_private(slot, table_base(va), rights == LeafRights::Trusted ? Gate::Open : Gate::PushDown, section);
  }

  static ErrorOr<void> unshare(Pfn root, VirtAddr va, uint64_t pages, Coverage which, LazyMmuSection& section) {
    return each_stretch(va, pages, [&](VirtAddr v, unsigned, unsigned count, uint64_t) -> ErrorOr<void> {
      if (which == Coverage::Partial && count == kEntriesPerTable) return {};
      Pte* slot = hooked_l2_slot(root, v);
      if (!slot || holders(P::pfn_of(l2e(slot))) == 1) return {};
      return copy_out(slot, table_base(v), section);
    });
  }

  static ErrorOr<void> teardown(Pfn root, UnmapVisitor visit, LazyMmuSection& section) {
    Pte* l4 = phys_to_virt<Pte>(root);
    bool any = false;
    for (unsigned i4 = 0; i4 < kEntriesPerTable / 2; ++i4) {
      if (!present(l4[i4])) continue;
      Pte* l3 = phys_to_virt<Pte>(P::pfn_of(l4[i4]));
      for (unsigned i3 = 0; i3 < kEntriesPerTable; ++i3) {
        if (!present(l3[i3])) continue;
        const Pfn l2_pfn = P::pfn_of(l3[i3]);
        Pte* l2 = phys_to_virt<Pte>(l2_pfn);
        for (unsigned i2 = 0; i2 < kEntriesPerTable; ++i2) {
          if (!present(l2e(&l2[i2]))) continue;
          const VirtAddr base{(uint64_t{i4} << 39) | (uint64_t{i3} << 30) | (uint64_t{i2} << 21)};
          any = true;
          if (holders(P::pfn_of(l2e(&l2[i2]))) > 1) {
            TRY(drop_shared(&l2[i2], base, section));
            continue;
          }
          const Pte* l1 = phys_to_virt<const Pte>(P::pfn_of(l2e(&l2[i2])));
          if (visit.fn)
            for (unsigned k = 0; k < kEntriesPerTable; ++k)
              if (mapped(l1[k])) visit.fn(visit.ctx, base + k * kPageSize, l1[k]);
          TRY(release_l1(&l2[i2], base, section));
        }
        TRY(store(&l3[i3], Pte{}, Level::L3));
        TRY(section.release_table(l2_pfn, Level::L2));
      }
    }
    if (any) section.invalidate_all();
    return {};
  }

  static constexpr MmuRangeOps range_ops() {
    return {&map,        &protect,     &unmap,          &lookup,         &populate, &remap,
            &fork_range, &release_user_tables, &share_table, &open_for_write, &unshare, &protect_tables, &teardown};
  }

 private:
  enum class Alloc { No, Yes };

  // What a store into an L1 table needs from it when that table is behind a
  // read-only L2 entry (a closed gate, ptshare). A shared table is always
  // copied first; the gate of a table this space alone holds may stay:
  enum class Gate : uint8_t {
    None,      // no store follows (lookup): take the table as it is
    Keep,      // the stores leave every leaf within its VMA's rights and
               // change no VMA (unmap, a fault's remap, fork's write-protect):
               // the gate may stay closed
    PushDown,  // the stores change rights or add mappings of new VMAs
               // (mprotect per leaf, map): the gate's restriction moves into
               // the leaves, then it opens
    Open,      // a write is coming: leaves whose frames are shared become
               // Cow, the others keep their rights, and the gate opens
  };
  enum class Tables : uint8_t { Leaves, Whole };

  // The walk's one store choke point: the backend's store, and the count of
  // L2 stores (hooks, unhooks and gates) the ptshare figures are about.
  static ErrorOr<void> store(Pte* slot, Pte v, Level level) {
    if (level == Level::L2) count_event(g_mmu_counters.l2_writes);
    return P::store(slot, v, level);
  }

  static VirtAddr table_base(VirtAddr va) { return VirtAddr{align_down(raw(va), entry_span(Level::L2))}; }

  // How many L2 entries reference an L1 table (0 and 1 both mean one).
  static unsigned holders(Pfn l1) {
    const unsigned n = frame_refs().get(l1);
    return n ? n : 1;
  }

  static unsigned mapped_leaves(const Pte* l1) {
    unsigned n = 0;
    for (unsigned k = 0; k < kEntriesPerTable; ++k) n += mapped(l1[k]);
    return n;
  }

  // Makes the L1 table `slot` points at this space's own before a store into
  // it (see Gate). slot may point at a new table afterwards.
  static ErrorOr<void> make_private(Pte* slot, VirtAddr base, Gate gate, LazyMmuSection& section) {
    if (gate == Gate::None) return {};
    if (holders(P::pfn_of(l2e(slot))) > 1) return copy_out(slot, base, section);
    if (writable(l2e(slot)) || gate == Gate::Keep) return {};
    return open_gate(slot, base, gate == Gate::PushDown, section);
  }

  // This space's own copy of a shared table: its leaves read-only and Cow
  // (their frames are now referenced once more), built as plain memory and
  // hooked in with one validation. The old table loses one holder.
  static ErrorOr<void> copy_out(Pte* slot, VirtAddr base, LazyMmuSection& section) {
    const Pfn old = P::pfn_of(l2e(slot));
    const Pte* src = phys_to_virt<const Pte>(old);
    const Pfn fresh = TRY(frames().try_alloc());
    Pte* dst = phys_to_virt<Pte>(fresh);
    for (unsigned k = 0; k < kEntriesPerTable; ++k) {
      Pte e = src[k];
      if (mapped(e)) {
        e = Pte{(e.raw & ~pte_bit::Write) | pte_bit::Cow};
        frame_refs().inc(P::pfn_of(e));
      }
      dst[k] = e;
    }
    auto prepared = P::prepare_table(fresh, Level::L1);
    if (!prepared.is_error()) {
      prepared = store(slot, P::make_table(fresh), Level::L2);
      if (prepared.is_error()) must(P::retire_table(fresh, Level::L1), "retire an unhooked copy");
    }
    if (prepared.is_error()) {
      for (unsigned k = 0; k < kEntriesPerTable; ++k)
        if (mapped(dst[k])) frame_refs().dec(P::pfn_of(dst[k]));  // the old table still holds each
      frames().must_free(fresh);
      return prepared.error();
    }
    frame_refs().dec(old);
    section.invalidate_range(base, kEntriesPerTable);
    section.table_unhooked();  // as drop_shared: the old table is freed by another space
    count_event(g_mmu_counters.pt_copyouts);
    return {};
  }

  // Opens the closed gate of a table this space alone holds. Leaves whose
  // frames another table still references become read-only and Cow (so no
  // later mprotect can make them writable either); with push_down every
  // writable leaf loses write, so the leaves alone say the rights. The leaf
  // updates reach the tables before the gate opens.
  static ErrorOr<void> open_gate(Pte* slot, VirtAddr base, bool push_down, LazyMmuSection& section) {
    const Pfn table = P::pfn_of(l2e(slot));
    Pte* l1 = phys_to_virt<Pte>(table);
    // A table never shared (share count 0, not 1) has no leaf whose frame
    // became shared behind its back: every such leaf is Cow already.
    const bool scan = push_down || frame_refs().get(table) != 0;
    for (unsigned k = 0; k < kEntriesPerTable && scan; ++k) {
      const Pte e = l1[k];
      if (!mapped(e) || has(e, pte_bit::Cow)) continue;
      const bool shared = frame_refs().get(P::pfn_of(e)) > 1;
      if (!shared && !(push_down && has(e, pte_bit::Write))) continue;
      const Pte old = P::modify_prot_start(&l1[k]);
      TRY(P::modify_prot_commit(&l1[k], old,
                                Pte{(old.raw & ~pte_bit::Write) | (shared ? pte_bit::Cow : uint64_t{0})}));
    }
    TRY(P::flush_queue());
    TRY(store(slot, Pte{l2e(slot).raw | pte_bit::Write}, Level::L2));
    frame_refs().set(table, 0);  // its leaves are in order again
    // Translations cached while the gate was closed say read-only.
    section.invalidate_range(base, kEntriesPerTable);
    ++(push_down ? g_mmu_counters.pt_pushdowns : g_mmu_counters.pt_gate_opens);
    return {};
  }

  // Unhooks a shared table from this space; the others keep it.
  static ErrorOr<void> drop_shared(Pte* slot, VirtAddr base, LazyMmuSection& section) {
    const Pfn l1 = P::pfn_of(l2e(slot));
    TRY(store(slot, Pte{}, Level::L2));
    section.invalidate_range(base, kEntriesPerTable);
    section.table_unhooked();  // the last sharer frees it later, out of this space's sight
    frame_refs().dec(l1);
    return {};
  }

  // Unhooks a table this space alone holds and frees it after the flush.
  static ErrorOr<void> release_l1(Pte* slot, VirtAddr base, LazyMmuSection& section) {
    const Pfn l1 = P::pfn_of(l2e(slot));
    TRY(store(slot, Pte{}, Level::L2));
    // The CPU may cache the unhooked table's entry (paging-structure caches)
    // even when no leaf under it was present: invalidate an address it
    // covered before the frame is reused.
    section.invalidate(base);
    frame_refs().set(l1, 0);
    return section.release_table(l1, Level::L1);
  }

  static ErrorOr<void> protect_leaves(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                                      LazyMmuSection& section, Tables tables) {
    return each_stretch(va, pages, [&](VirtAddr v, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      Pte* l2_slot = hooked_l2_slot(root, v);
      if (!l2_slot) return {};
      if (tables == Tables::Whole && count == kEntriesPerTable && TRY(protect_at_l2(l2_slot, v, set, clear, section)))
        return {};
      TRY(make_private(l2_slot, v, Gate::PushDown, section));
      Pte* l1 = phys_to_virt<Pte>(P::pfn_of(l2e(l2_slot)));
      if constexpr (P::kTableHints) {
        unsigned stores = 0;
        for (unsigned k = 0; k < count; ++k) stores += mapped(l1[first + k]);
        TRY(P::begin_table(l2_slot, table_base(v), stores));
      }
      for (unsigned k = 0; k < count; ++k) {
        Pte* slot = &l1[first + k];
        // The leaf's one flag read; the new entry's flags follow from it
        // (set and clear are flag bits), so no second read is needed.
        const PteFlags now = flags_of(*slot);
        if (!(now.bits & (pte_bit::Present | pte_bit::ProtNone))) continue;
        const Pte old = P::modify_prot_start(slot);
        Pte updated{(old.raw | set.bits) & ~clear.bits};
        // A shared (copy-on-write) frame stays read-only whatever the new
        // protection: the write fault will give this mapping its own copy.
        if (PteFlags{(now.bits | set.bits) & ~clear.bits}.has(pte_bit::Cow)) updated.raw &= ~pte_bit::Write;
        TRY(P::modify_prot_commit(slot, old, updated));
        section.invalidate(va + (i + k) * kPageSize);
      }
      return {};
    });
  }

  // mprotect of a whole table at its L2 entry, when the only right that
  // changes for its leaves is write: taking it away closes the gate (the
  // leaves keep theirs; effective rights are leaf ∧ L2); giving it back
  // opens it as a write fault would, which requires every leaf to be
  // writable already (or Cow). False: the leaves must change one by one.
  static ErrorOr<bool> protect_at_l2(Pte* slot, VirtAddr base, PteFlags set, PteFlags clear, LazyMmuSection& section) {
    const bool adds_write = set.bits & pte_bit::Write, removes_write = clear.bits & pte_bit::Write;
    if (adds_write == removes_write) return false;
    const Pte* l1 = phys_to_virt<const Pte>(P::pfn_of(l2e(slot)));
    // When the caller says only write changes (set and clear hold nothing
    // else), no leaf can differ in another right: no need to read them. A
    // leaf then left read-only under an open gate is upgraded by its first
    // write fault, as after any mprotect.
    const bool write_only = ((set.bits | clear.bits) & ~pte_bit::Write) == 0;
    for (unsigned k = 0; k < kEntriesPerTable && !write_only; ++k) {
      const Pte e = l1[k];
      if (!mapped(e)) continue;
      Pte updated{(e.raw | set.bits) & ~clear.bits};
      if (has(updated, pte_bit::Cow)) updated.raw &= ~pte_bit::Write;
      const uint64_t changed = updated.raw ^ e.raw;
      if (adds_write ? changed != 0 : (changed & ~pte_bit::Write) != 0) return false;
    }
    if (removes_write) {
      if (writable(l2e(slot))) {
        TRY(store(slot, Pte{l2e(slot).raw & ~pte_bit::Write}, Level::L2));
        section.invalidate_range(base, kEntriesPerTable);
      }
    } else {
      TRY(make_private(slot, base, Gate::Open, section));
    }
    count_event(g_mmu_counters.l2_protects);
    return true;
  }

  static uint64_t min(uint64_t a, uint64_t b) { return a < b ? a : b; }

  // Splits [va, va + pages) at L1-table boundaries and calls
  // fn(stretch_va, first_index, count, pages_done_before) for each stretch.
  // The lambda is inlined: still one indirect call per range, none per entry.
  template <typename Fn>
  static ErrorOr<void> each_stretch(VirtAddr va, uint64_t pages, Fn&& fn) {
    for (uint64_t i = 0; i < pages;) {
      const VirtAddr v = va + i * kPageSize;
      const unsigned first = index_at(v, Level::L1);
      const unsigned count = static_cast<unsigned>(min(pages - i, uint64_t{kEntriesPerTable - first}));
      TRY(fn(v, first, count, i));
      i += count;
    }
    return {};
  }

  // each_stretch with the stretch's L1 table, made ready for `gate`:
  // fn(l1_table, first_index, count, pages_done_before). With Alloc::No,
  // stretches without an L1 table are skipped.
  template <typename Fn>
  static ErrorOr<void> each_table(Pfn root, VirtAddr va, uint64_t pages, Alloc alloc, Gate gate,
                                  LazyMmuSection* section, Fn&& fn) {
    return each_stretch(va, pages, [&](VirtAddr v, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      auto table = l1_for(root, v, alloc, gate, section);
      if (!table.is_error()) return fn(table.value(), first, count, i);
      return alloc == Alloc::Yes ? ErrorOr<void>(table.error()) : ErrorOr<void>{};
    });
  }

  // The L1 table covering va, made ready for `gate` (a shared table is
  // copied, a closed gate opened if the gate asks; section is where the
  // copy's invalidations go).
  static ErrorOr<Pte*> l1_for(Pfn root, VirtAddr va, Alloc alloc, Gate gate, LazyMmuSection* section) {
    Pte* l2 = TRY(table_for_level(root, va, Level::L2, alloc));
    Pte* slot = &l2[index_at(va, Level::L2)];
    if (!present(l2e(slot))) {
      if (alloc == Alloc::No) return Errno::ENOENT;
      return populate(slot, Level::L2);
    }
    // Gates and shared tables exist only in the user half (the kernel's
    // tables may have read-only upper entries of their own, e.g. Xen's).
    if (gate != Gate::None && !(raw(va) >> 63) && (!writable(l2e(slot)) || holders(P::pfn_of(l2e(slot))) > 1)) {
      if (!section) panic("page walk: a shared or gated table needs a lazy-MMU section");
      TRY(make_private(slot, table_base(va), gate, *section));
    }
    return phys_to_virt<Pte>(P::pfn_of(l2e(slot)));
  }

  // pte=attrs reads flag bits inline; pte=flags asks the backend each time.
  // A leaf that holds a frame: present, or made inaccessible by PROT_NONE
  // (not present, frame kept, marked ProtNone — Xen PV cannot express
  // "kernel-only" for user pages, so inaccessible must mean not present).
  static bool mapped(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flags_site(e).bits & (pte_bit::Present | pte_bit::ProtNone);
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

  static bool has(Pte e, uint64_t bit) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flags_site(e).has(bit);
    else
      return (e.raw & bit) == bit;
  }

  static bool writable(Pte e) { return has(e, pte_bit::Write); }

  static bool present(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return pte_flags_site(e).has(pte_bit::Present);
    else
      return e.present();
  }

  static bool none_outside(const Pte* table, unsigned begin, unsigned end) {
    for (unsigned k = 0; k < kEntriesPerTable; ++k)
      if ((k < begin || k >= end) && !table[k].none()) return false;
    return true;
  }

  // A table one level below `level`'s entry: allocated, prepared for the
  // backend (Xen: read-only, validated) and hooked in. Its frame is used
  // directly, so a deferred store would not matter even at L1.
  static ErrorOr<Pte*> populate(Pte* slot, Level level) {
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
  static ErrorOr<Pte*> table_for_level(Pfn root, VirtAddr va, Level target, Alloc alloc = Alloc::No) {
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

  // An L2 entry as the walk must see it: the backend's saved entry while it
  // holds the table unhooked (pvops/unhook_tables.h), else memory.
  static Pte l2e(const Pte* slot) {
    if constexpr (P::kTableHints)
      return P::l2_entry(slot);
    else
      return *slot;
  }

  // An L2 table is empty when no entry is present as the walk sees them.
  static bool l2_table_empty(const Pte* table) {
    for (unsigned k = 0; k < kEntriesPerTable; ++k)
      if (!l2e(&table[k]).none()) return false;
    return true;
  }

  // Tells a table-granular backend (kTableHints) that `stores` entries of the
  // L1 table covering va are about to be stored.
  static ErrorOr<void> announce(Pfn root, VirtAddr va, unsigned stores) {
    if constexpr (P::kTableHints) {
      if (Pte* slot = hooked_l2_slot(root, va)) return P::begin_table(slot, table_base(va), stores);
    }
    return {};
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
};

}  // namespace pvk
