// The range verbs (MmuRangeOps): map, protect, unmap, lookup, populate,
// remap, fork, teardown, composed from the page cursor (cursor.h) and table
// sharing (table_share.h). Every backend instantiates PageWalk with its
// policy (pvops/mmu_policy.h) and publishes the instantiations in its pvops
// table (pvops/ops_builder.h), so the walk — table allocation, range
// splitting, emptiness tracking, TLB bookkeeping — exists once, and
// backends only vary how an entry is written.
//
// Why it is shaped so. A verb here says what it does to each stretch of its
// range and nothing about how the cursor finds tables, how a shared table is
// made private, or which backend wants to hear about stores: those are the
// cursor's walk, the `ready` hook from TableShare (the gate a verb's stores
// need, see Gate), and the cursor's enter_l1/announce (table hints). A new
// feature of the walk is a new hook on the cursor or a new part beside
// TableShare, not a flag tested in every verb.
#pragma once
#include "pvops/walk/table_share.h"

namespace pvk {

template <MmuPolicy P, PteAccess Access>
class PageWalk {
  using C = walk::PageCursor<P, Access>;
  using S = walk::TableShare<P, Access>;
  using Alloc = walk::Alloc;
  using Gate = walk::Gate;

 public:
  static ErrorOr<void> map(Pfn root, VirtAddr va, uint64_t pages, FrameSource src, PteFlags flags) {
    return C::each_table(root, va, pages, Alloc::Yes, S::ready(Gate::PushDown, LazyMmuSection::open_section()),
                         [&](Pte* l1, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
                           TRY(C::announce(root, va + i * kPageSize, count));
                           for (unsigned k = 0; k < count; ++k) {
                             if (C::mapped(l1[first + k])) return Errno::EEXIST;
                             // A not-present entry is never cached in the TLB: no flush needed.
                             TRY(C::store(&l1[first + k], P::make(src.at(i + k), flags), Level::L1));
                           }
                           return {};
                         });
  }

  // Always inlined where called by name (the compiled-in image's mprotect,
  // the pvops image's native-body sites): the body is one call of the
  // stretch lambda, and a call of its own costs a small mprotect ~13
  // instructions; the table's pointer still gets an out-of-line copy.
  [[gnu::always_inline]] static ErrorOr<void> protect(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                               LazyMmuSection& section) {
    return protect_leaves(root, va, pages, set, clear, section, Tables::Leaves);
  }

  static ErrorOr<void> protect_tables(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                                      LazyMmuSection& section) {
    return protect_leaves(root, va, pages, set, clear, section, Tables::Whole);
  }

  // A removed entry shown to the visitor; put_frames_after_flush's inline
  // (an indirect call a leaf was most of a frame's put).
  static void report(const UnmapVisitor& visit, VirtAddr at, Pte old) {
    if (visit.fn == &put_frame_after_flush_visit)
      static_cast<LazyMmuSection*>(visit.ctx)->put_frame_after_flush(P::pfn_of(old));
    else if (visit.fn)
      visit.fn(visit.ctx, at, old);
  }

  static ErrorOr<void> unmap(Pfn root, VirtAddr va, uint64_t pages, UnmapVisitor visit, LazyMmuSection& section) {
    uint64_t i = 0;
    while (i < pages) {
      const VirtAddr v = va + i * kPageSize;
      const unsigned first = index_at(v, Level::L1);
      const uint64_t in_table = C::min(pages - i, uint64_t{kEntriesPerTable - first});
      auto l2_lookup = C::table_for_level(root, v, Level::L2);
      if (l2_lookup.is_error()) {
        i += in_table;
        continue;
      }
      if (!C::present(C::l2e(&l2_lookup.value()[index_at(v, Level::L2)]))) {
        // No L1 here, but the L2 may be empty (a map that failed after
        // creating it): reclaim it like one emptied by this unmap.
        TRY(C::release_if_empty(root, v, l2_lookup.value(), Level::L2, section));
        i += in_table;
        continue;
      }
      Pte* l2 = l2_lookup.value();
      Pte* l2_slot = &l2[index_at(v, Level::L2)];
      if (in_table == kEntriesPerTable && S::shared(l2_slot)) {
        // Another space still uses the table: this one only lets go of it.
        i += in_table;
        TRY(S::drop_shared(l2_slot, v, section));
        TRY(C::release_if_empty(root, v, l2, Level::L2, section));
        continue;
      }
      // Clearing some leaves of a shared table: this space's own copy first.
      if (in_table != kEntriesPerTable) TRY(S::make_private(l2_slot, v, Gate::Keep, section));
      Pte* l1 = C::l1_of(l2_slot);
      if (in_table == kEntriesPerTable) {
        // The whole table goes: no need to clear its entries one by one
        // (under Xen each clear is an update or a trap). Report them, unhook
        // the table, and let its release drop what it referenced.
        for (unsigned idx = 0; idx < kEntriesPerTable; ++idx) {
          const Pte old = l1[idx];
          if (!C::mapped(old)) continue;
          const VirtAddr at = va + (i + idx) * kPageSize;
          section.invalidate(at);
          report(visit, at, old);
        }
        i += in_table;
        TRY(C::release_l1(l2_slot, v, section));
        TRY(C::release_if_empty(root, v, l2, Level::L2, section));
        continue;
      }
      TRY(C::enter_l1(l2_slot, v, [l1, first, in_table] {
        unsigned stores = 0;
        for (unsigned idx = first; idx < first + in_table; ++idx) stores += !l1[idx].none();
        return stores;
      }));
      for (unsigned idx = first; idx < first + in_table; ++idx) {
        const Pte old = l1[idx];
        if (old.none()) continue;
        TRY(C::store(&l1[idx], Pte{}, Level::L1));
        const VirtAddr at = va + (i + (idx - first)) * kPageSize;
        if (C::mapped(old)) {
          section.invalidate(at);
          report(visit, at, old);
        }
      }
      i += in_table;
      // The L1 stores above may still be queued, so emptiness is judged from
      // the entries outside the range, which this call did not write. An
      // earlier call in the same lazy section may have, though: if they look
      // occupied, push the queue out and look again (at most at the two
      // partial tables at the ends of a range).
      const unsigned end = first + static_cast<unsigned>(in_table);
      bool empty = C::none_outside(l1, first, end);
      if (!empty) {
        TRY(P::flush_queue());
        empty = C::none_outside(l1, first, end);
      }
      if (empty) {
        TRY(C::release_l1(l2_slot, v, section));
        TRY(C::release_if_empty(root, v, l2, Level::L2, section));
      }
    }
    return {};
  }

  static ErrorOr<Pte> lookup(Pfn root, VirtAddr va) {
    Pte* l1 = TRY(C::l1_for(root, va));
    const Pte e = l1[index_at(va, Level::L1)];
    if (!C::mapped(e)) return Errno::ENOENT;
    return e;
  }

  static ErrorOr<void> populate(Pfn root, VirtAddr va, Level level) {
    TRY(C::table_for_level(root, va, level, Alloc::Yes));
    return {};
  }

  static ErrorOr<void> remap(Pfn root, VirtAddr va, Pfn pfn, PteFlags flags, LazyMmuSection& section) {
    Pte* l1 = TRY(C::l1_for(root, va, Alloc::Yes, S::ready(Gate::Keep, &section)));
    Pte* slot = &l1[index_at(va, Level::L1)];
    const bool was_present = C::mapped(*slot);
    TRY(C::store(slot, P::make(pfn, flags), Level::L1));
    if (was_present) section.invalidate(va);
    return {};
  }

  // Write-protects a parent's leaf and marks it shared, returning the entry
  // as the child gets it: the hot loop of fork after dirtying memory, the
  // one batching exists to speed up. Read-only and PROT_NONE leaves are
  // marked too, or a later mprotect would make the shared frame writable in
  // both.
  static ErrorOr<Pte> write_protect_for_fork(Pte* slot, VirtAddr at, LazyMmuSection& section) {
    const Pte old = C::update_start(slot);
    const Pte e = cow_of(old);
    TRY(C::update_commit(slot, old, e));
    if (C::has(old, pte_bit::Write)) section.invalidate(at);
    return e;
  }

  static ErrorOr<void> fork_range(Pfn parent, Pfn child, VirtAddr va, uint64_t pages, ForkMode mode,
                                  LazyMmuSection& section) {
    return C::each_table(parent, va, pages, Alloc::No, S::ready(Gate::Keep, &section),
                         [&](Pte* src, unsigned first, unsigned count, uint64_t i) -> ErrorOr<void> {
      // A table-granular backend must hear how many stores the parent's
      // table takes before the first of them. Rather than a counting pass
      // (512 entries read per table: most of a sparse fork's difference from
      // batched under mmu=auto), the copy pass gathers the parent leaves
      // that need the write-protect and flush() stores those. Other
      // backends write-protect as they copy (GatheredStores).
      typename C::GatheredStores protects;
      // The child's table for this stretch. A table the child does not have
      // yet is filled as ordinary private memory and published (validated,
      // under Xen) in one store when complete, as Linux fills a new mm
      // before pinning it; an existing one is written entry by entry.
      Pte* dst = nullptr;
      Pte* fresh_slot = nullptr;  // the child's L2 slot a fresh table will hook into
      Pfn fresh{};
      for (unsigned k = 0; k < count; ++k) {
        Pte e = src[first + k];
        if (!C::mapped(e)) continue;
        const VirtAddr at = va + (i + k) * kPageSize;
        if (!dst) {
          Pte* l2 = TRY(C::table_for_level(child, at, Level::L2, Alloc::Yes));
          Pte* slot = &l2[index_at(at, Level::L2)];
          if (C::present(C::l2e(slot))) {
            TRY(S::make_private(slot, at, Gate::Keep, section));
            dst = C::l1_of(slot);
            TRY(C::enter_l1(slot, at, [count, k] { return count - k; }));
          } else {
            fresh = TRY(frames().try_alloc());
            dst = phys_to_virt<Pte>(fresh);
            memset(static_cast<void*>(dst), 0, kPageSize);
            fresh_slot = slot;
          }
        }
        if (mode == ForkMode::CopyOnWrite && !C::has(e, pte_bit::Cow)) {
          Pte* leaf = &src[first + k];
          e = TRY(protects.add(first + k, cow_of(e),
                               [leaf, at, &section] { return write_protect_for_fork(leaf, at, section); }));
        }
        frame_refs().inc(P::pfn_of(e));
        if (fresh_slot) {
          dst[first + k] = e;  // not a page table yet: a plain store
        } else {
          TRY(C::store(&dst[first + k], e, Level::L1));
        }
      }
      if (fresh_slot) {
        auto prepared = P::prepare_table(fresh, Level::L1);
        if (!prepared.is_error()) prepared = C::store(fresh_slot, P::make_table(fresh), Level::L2);
        if (prepared.is_error()) {
          // Nothing references the entries yet: drop what they took.
          for (unsigned k = 0; k < kEntriesPerTable; ++k)
            if (C::mapped(dst[k])) frame_refs().dec(P::pfn_of(dst[k]));
          frames().must_free(fresh);
          return prepared.error();
        }
      }
      // After the child's table is published: a refused write-protect then
      // leaves a child whose teardown frees that table and its references.
      return protects.flush(parent, va + i * kPageSize, [src, first, va, i, &section](unsigned idx) -> ErrorOr<void> {
        TRY(write_protect_for_fork(&src[idx], va + (i + (idx - first)) * kPageSize, section));
        return {};
      });
    });
  }

  static ErrorOr<void> release_user_tables(Pfn root, LazyMmuSection& section) {
    Pte* l4 = phys_to_virt<Pte>(root);
    for (unsigned i4 = 0; i4 < kEntriesPerTable / 2; ++i4) {
      if (!C::present(l4[i4])) continue;
      const Pfn l3_pfn = P::pfn_of(l4[i4]);
      if (!C::none_outside(phys_to_virt<Pte>(l3_pfn), 0, 0)) return Errno::EBUSY;
      TRY(C::store(&l4[i4], Pte{}, Level::L4));
      TRY(section.release_table(l3_pfn, Level::L3));
    }
    return {};
  }

  static ErrorOr<void> teardown(Pfn root, UnmapVisitor visit, LazyMmuSection& section) {
    Pte* l4 = phys_to_virt<Pte>(root);
    bool any = false;
    for (unsigned i4 = 0; i4 < kEntriesPerTable / 2; ++i4) {
      if (!C::present(l4[i4])) continue;
      Pte* l3 = phys_to_virt<Pte>(P::pfn_of(l4[i4]));
      for (unsigned i3 = 0; i3 < kEntriesPerTable; ++i3) {
        if (!C::present(l3[i3])) continue;
        const Pfn l2_pfn = P::pfn_of(l3[i3]);
        Pte* l2 = phys_to_virt<Pte>(l2_pfn);
        for (unsigned i2 = 0; i2 < kEntriesPerTable; ++i2) {
          if (!C::present(C::l2e(&l2[i2]))) continue;
          const VirtAddr base{(uint64_t{i4} << 39) | (uint64_t{i3} << 30) | (uint64_t{i2} << 21)};
          any = true;
          if (S::shared(&l2[i2])) {
            TRY(S::drop_shared(&l2[i2], base, section));
            continue;
          }
          const Pte* l1 = C::l1_of(&l2[i2]);
          if (visit.fn == &put_frame_after_flush_visit) {
            auto* frames_section = static_cast<LazyMmuSection*>(visit.ctx);
            for (unsigned k = 0; k < kEntriesPerTable; ++k)
              if (C::mapped(l1[k])) frames_section->put_frame_after_flush(P::pfn_of(l1[k]));
          } else if (visit.fn) {
            for (unsigned k = 0; k < kEntriesPerTable; ++k)
              if (C::mapped(l1[k])) visit.fn(visit.ctx, base + k * kPageSize, l1[k]);
          }
          TRY(C::release_l1(&l2[i2], base, section));
        }
        TRY(C::store(&l3[i3], Pte{}, Level::L3));
        TRY(section.release_table(l2_pfn, Level::L2));
      }
    }
    if (any) section.invalidate_all();
    return {};
  }

  // The pvops table's range verbs: the walk's own, then table sharing's.
  static constexpr MmuRangeOps range_ops() {
    return {
        .map = &map,
        .protect = &protect,
        .unmap = &unmap,
        .lookup = &lookup,
        .populate = &populate,
        .remap = &remap,
        .fork_range = &fork_range,
        .release_user_tables = &release_user_tables,
        .share_table = &S::share_table,
        .open_for_write = &S::open_for_write,
        .unshare = &S::unshare,
        .protect_tables = &protect_tables,
        .teardown = &teardown,
    };
  }

 private:
  enum class Tables : uint8_t { Leaves, Whole };

  // The entry a leaf becomes when its frame is shared copy-on-write.
  static Pte cow_of(Pte e) { return Pte{(e.raw & ~pte_bit::Write) | pte_bit::Cow}; }

  // Inlined into protect and protect_tables: one call's prologue per range,
  // not two (the compiled-in image inlines protect into mprotect).
  [[gnu::always_inline]] static ErrorOr<void> protect_leaves(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                                      LazyMmuSection& section, Tables tables) {
    // The stretch inlined, its leaf loop not (protect_run): the same shape
    // under both encodings, so pte=flags' loop (a patched site per leaf)
    // does not crowd the stretch's registers and neither encoding pays an
    // out-of-line stretch on a one-page call.
    return C::each_stretch(va, pages, [&](VirtAddr v, unsigned first, unsigned count, uint64_t i)
                                          __attribute__((always_inline)) -> ErrorOr<void> {
      Pte* l2_slot = C::hooked_l2_slot(root, v);
      if (!l2_slot) return {};
      if (tables == Tables::Whole && count == kEntriesPerTable &&
          TRY(S::protect_at_l2(l2_slot, v, set, clear, section)))
        return {};
      TRY(S::make_private(l2_slot, v, Gate::PushDown, section));
      Pte* l1 = C::l1_of(l2_slot);
      TRY(C::enter_l1(l2_slot, v, [l1, first, count] {
        unsigned stores = 0;
        for (unsigned k = 0; k < count; ++k) stores += C::mapped(l1[first + k]);
        return stores;
      }));
      return protect_run(&l1[first], count, va + i * kPageSize, set, clear, section);
    });
  }

  // protect's leaf loop over one table's run of `count` slots from `slots`,
  // the first mapping `at`.
  [[gnu::noinline]] static ErrorOr<void> protect_run(Pte* slots, unsigned count, VirtAddr at, PteFlags set,
                                                      PteFlags clear, LazyMmuSection& section) {
    for (unsigned k = 0; k < count; ++k) {
      Pte* slot = &slots[k];
      // The leaf's one flag read; the new entry's flags follow from it
      // (set and clear are flag bits), so no second read is needed.
      // (Its flag image: only flag bits are tested.)
      const uint64_t now = C::flag_image_at(slot);
      if (!(now & (pte_bit::Present | pte_bit::ProtNone))) continue;
      const Pte old = C::update_start(slot);
      Pte updated{(old.raw | set.bits) & ~clear.bits};
      // A shared (copy-on-write) frame stays read-only whatever the new
      // protection: the write fault will give this mapping its own copy.
      if (((now | set.bits) & ~clear.bits) & pte_bit::Cow) updated.raw &= ~pte_bit::Write;
      TRY(C::update_commit(slot, old, updated));
      section.invalidate(at + k * kPageSize);
    }
    return {};
  }
};

}  // namespace pvk
