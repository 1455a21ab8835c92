// The one page-table walk. Every backend instantiates it with its policy
// (pvops/mmu_policy.h) and publishes the instantiations in its pvops table, so
// the walk — table allocation, range splitting, emptiness tracking, TLB
// bookkeeping — exists once, and backends only vary how an entry is written.
#pragma once
#include "base/lib/kstring.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "pvops/lazy_mmu_section.h"
#include "pvops/mmu_policy.h"
#include "base/frames/physmap.h"
#include "pvops/mmu_ops.h"

namespace pvk {

template <MmuPolicy P, PteAccess Access>
class PageWalk {
 public:
  static ErrorOr<void> map(Pfn root, VirtAddr va, uint64_t pages, FrameSource src, PteFlags flags) {
    return each_table(root, va, pages, Alloc::Yes, [&](Pte* l1, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      for (unsigned k = 0; k < count; ++k) {
        if (mapped(l1[first + k])) return Errno::EEXIST;
        // A not-present entry is never cached in the TLB: no flush needed.
        TRY(P::store(&l1[first + k], P::make(src.at(i + k), flags), Level::L1));
      }
      return {};
    });
  }

  static ErrorOr<void> protect(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                               LazyMmuSection& section) {
    return each_table(root, va, pages, Alloc::No, [&](Pte* l1, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      for (unsigned k = 0; k < count; ++k) {
        Pte* slot = &l1[first + k];
        if (!mapped(*slot)) continue;
        const Pte old = P::modify_prot_start(slot);
        Pte updated{(old.raw | set.bits) & ~clear.bits};
        // A shared (copy-on-write) frame stays read-only whatever the new
        // protection: the write fault will give this mapping its own copy.
        if (updated.raw & pte_bit::Cow) updated.raw &= ~pte_bit::Write;
        TRY(P::modify_prot_commit(slot, old, updated));
        section.invalidate(va + (i + k) * kPageSize);
      }
      return {};
    });
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
      if (!present(l2_lookup.value()[index_at(v, Level::L2)])) {
        // No L1 here, but the L2 may be empty (a map that failed after
        // creating it): reclaim it like one emptied by this unmap.
        TRY(release_if_empty(root, v, l2_lookup.value(), Level::L2, section));
        i += in_table;
        continue;
      }
      Pte* l2 = l2_lookup.value();
      Pte* l2_slot = &l2[index_at(v, Level::L2)];
      const Pfn l1_pfn = P::pfn_of(*l2_slot);
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
        TRY(P::store(l2_slot, Pte{}, Level::L2));
        section.invalidate(v);
        TRY(section.release_table(l1_pfn, Level::L1));
        TRY(release_if_empty(root, v, l2, Level::L2, section));
        continue;
      }
      for (unsigned idx = first; idx < first + in_table; ++idx) {
        const Pte old = l1[idx];
        if (old.none()) continue;
        TRY(P::store(&l1[idx], Pte{}, Level::L1));
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
        TRY(g_mmu.flush_lazy_mmu());
        empty = none_outside(l1, first, end);
      }
      if (empty) {
        TRY(P::store(l2_slot, Pte{}, Level::L2));
        // The CPU may cache the unhooked table's entry (paging-structure
        // caches) even when no leaf under it was present: invalidate an
        // address it covered before the frame is reused.
        section.invalidate(v);
        TRY(section.release_table(l1_pfn, Level::L1));
        TRY(release_if_empty(root, v, l2, Level::L2, section));
      }
    }
    return {};
  }

  static ErrorOr<Pte> lookup(Pfn root, VirtAddr va) {
    Pte* l1 = TRY(table_for(root, va, Alloc::No));
    const Pte e = l1[index_at(va, Level::L1)];
    if (!mapped(e)) return Errno::ENOENT;
    return e;
  }

  static ErrorOr<void> populate(Pfn root, VirtAddr va, Level level) {
    TRY(table_for_level(root, va, level, Alloc::Yes));
    return {};
  }

  static ErrorOr<void> remap(Pfn root, VirtAddr va, Pfn pfn, PteFlags flags, LazyMmuSection& section) {
    Pte* l1 = TRY(table_for(root, va, Alloc::Yes));
    Pte* slot = &l1[index_at(va, Level::L1)];
    const bool was_present = mapped(*slot);
    TRY(P::store(slot, P::make(pfn, flags), Level::L1));
    if (was_present) section.invalidate(va);
    return {};
  }

  static ErrorOr<void> fork_range(Pfn parent, Pfn child, VirtAddr va, uint64_t pages, ForkMode mode,
                                  LazyMmuSection& section) {
    return each_table(parent, va, pages, Alloc::No, [&](Pte* src, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
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
          if (present(*slot)) {
            dst = phys_to_virt<Pte>(P::pfn_of(*slot));
          } else {
            fresh = TRY(frames().try_alloc());
            dst = phys_to_virt<Pte>(fresh);
            memset(static_cast<void*>(dst), 0, kPageSize);
            fresh_slot = slot;
          }
        }
        if (mode == ForkMode::CopyOnWrite && !(e.raw & pte_bit::Cow)) {
          // Write-protect the parent's leaf and mark it shared: the hot loop
          // of fork after dirtying memory, the one batching exists to speed
          // up. Read-only and PROT_NONE leaves are marked too, or a later
          // mprotect would make the shared frame writable in both.
          const Pte old = P::modify_prot_start(&src[first + k]);
          e = Pte{(old.raw & ~pte_bit::Write) | pte_bit::Cow};
          TRY(P::modify_prot_commit(&src[first + k], old, e));
          if (old.raw & pte_bit::Write) section.invalidate(at);
        }
        frame_refs().inc(P::pfn_of(e));
        if (fresh_slot) {
          dst[first + k] = e;  // not a page table yet: a plain store
        } else {
          TRY(P::store(&dst[first + k], e, Level::L1));
        }
      }
      if (fresh_slot) {
        auto prepared = P::prepare_table(fresh, Level::L1);
        if (!prepared.is_error()) prepared = P::store(fresh_slot, P::make_table(fresh), Level::L2);
        if (prepared.is_error()) {
          // Nothing references the entries yet: drop what they took.
          for (unsigned k = 0; k < kEntriesPerTable; ++k)
            if (mapped(dst[k])) frame_refs().dec(P::pfn_of(dst[k]));
          frames().must_free(fresh);
          return prepared.error();
        }
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
      TRY(P::store(&l4[i4], Pte{}, Level::L4));
      TRY(section.release_table(l3_pfn, Level::L3));
    }
    return {};
  }

  static constexpr MmuRangeOps range_ops() {
    return {&map, &protect, &unmap, &lookup, &populate, &remap, &fork_range, &release_user_tables};
  }

 private:
  enum class Alloc { No, Yes };

  static uint64_t min(uint64_t a, uint64_t b) { return a < b ? a : b; }

  // Splits [va, va + pages) at L1-table boundaries and calls
  // fn(l1_table, first_index, count, pages_done_before) for each stretch;
  // with Alloc::No, stretches without an L1 table are skipped. The lambda is
  // inlined: still one indirect call per range, none per entry.
  template <typename Fn>
  static ErrorOr<void> each_table(Pfn root, VirtAddr va, uint64_t pages, Alloc alloc, Fn&& fn) {
    for (uint64_t i = 0; i < pages;) {
      const VirtAddr v = va + i * kPageSize;
      const unsigned first = index_at(v, Level::L1);
      const unsigned count = static_cast<unsigned>(min(pages - i, uint64_t{kEntriesPerTable - first}));
      auto table = table_for(root, v, alloc);
      if (!table.is_error())
        TRY(fn(table.value(), first, count, i));
      else if (alloc == Alloc::Yes)
        return table.error();
      i += count;
    }
    return {};
  }

  // pte=attrs reads flag bits inline; pte=flags asks the backend each time.
  // A leaf that holds a frame: present, or made inaccessible by PROT_NONE
  // (not present, frame kept, marked ProtNone — Xen PV cannot express
  // "kernel-only" for user pages, so inaccessible must mean not present).
  static bool mapped(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return g_mmu.pte_flags(e).bits & (pte_bit::Present | pte_bit::ProtNone);
    else
      return e.raw & (pte_bit::Present | pte_bit::ProtNone);
  }

  static bool present(Pte e) {
    if constexpr (Access == PteAccess::Flags)
      return g_mmu.pte_flags(e).has(pte_bit::Present);
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
    auto hooked = P::store(slot, P::make_table(pfn), level);
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
      const Pte e = *slot;
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

  static ErrorOr<Pte*> table_for(Pfn root, VirtAddr va, Alloc alloc) {
    return table_for_level(root, va, Level::L1, alloc);
  }

  // After an entry of `table` (at `level`) was cleared: if the table is now
  // empty, unhook it from its parent and free it. Stops at L2: L3 and L4
  // tables live as long as their address space (kernel L3s are shared).
  static ErrorOr<void> release_if_empty(Pfn root, VirtAddr va, Pte* table, Level level, LazyMmuSection& section) {
    if (level != Level::L2 || !none_outside(table, 0, 0)) return {};
    Pte* l3 = TRY(table_for_level(root, va, Level::L3));
    TRY(P::store(&l3[index_at(va, Level::L3)], Pte{}, Level::L3));
    section.invalidate(va);
    return section.release_table(virt_to_pfn(table), Level::L2);
  }
};

}  // namespace pvk
