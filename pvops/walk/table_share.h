// Table sharing (ptshare=on), built on the page cursor: one L1 table under
// the L2 entries of several address spaces, each entry a closed gate.
//
// Why it is shaped so. Sharing is a state machine of its own — a table's
// share count (frame_refs() of its frame), the gate of each L2 entry over
// it, and the moves between them (share, copy out, push down, open, drop) —
// and the range verbs only ask one thing of it: "this table is about to be
// stored into; make it this space's own as far as the stores need". That is
// make_private(), and ready() hands it to the cursor as the hook l1_for runs
// on an existing table. The rest of the file is the moves themselves and the
// three verbs that are sharing alone (share_table, open_for_write, unshare);
// range_ops.h composes them with the cursor's walk.
//
// The rules (docs/architecture.md, "Table sharing"): an L2 entry without the write
// bit is a closed gate, nothing under it is writable; gates and shared
// tables exist only in the user half; nothing is ever stored into a table
// with more than one holder.
#pragma once
#include "pvops/walk/cursor.h"

namespace pvk::walk {

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

template <MmuPolicy P, PteAccess Access>
class TableShare {
  using C = PageCursor<P, Access>;

 public:
  // ---- the verbs that are sharing alone (MmuRangeOps) ----

  static ErrorOr<bool> share_table(Pfn parent, Pfn child, VirtAddr va, unsigned min_leaves, LazyMmuSection& section) {
    const VirtAddr base = C::table_base(va);
    Pte* from = C::hooked_l2_slot(parent, base);
    if (!from) return false;
    const Pfn l1 = P::pfn_of(C::l2e(from));
    if (holders(l1) == 1 && mapped_leaves(phys_to_virt<const Pte>(l1)) < min_leaves) return false;
    Pte* child_l2 = TRY(C::table_for_level(child, base, Level::L2, Alloc::Yes));
    Pte* to = &child_l2[index_at(base, Level::L2)];
    if (C::present(*to)) return Errno::EEXIST;  // fork fills a fresh space: a table here is a caller's bug
    if (C::writable(C::l2e(from))) {
      // The parent's writable translations under this table go with the gate.
      TRY(C::store(from, Pte{C::l2e(from).raw & ~pte_bit::Write}, Level::L2));
      section.invalidate_range(base, kEntriesPerTable);
    }
    TRY(C::store(to, Pte{P::make_table(l1).raw & ~pte_bit::Write}, Level::L2));
    frame_refs().set(l1, static_cast<uint16_t>(holders(l1) + 1));
    count_event(g_mmu_counters.pt_shares);
    return true;
  }

  static ErrorOr<void> open_for_write(Pfn root, VirtAddr va, LeafRights rights, LazyMmuSection& section) {
    Pte* slot = C::hooked_l2_slot(root, va);
    if (!slot) return {};
    return make_private(slot, C::table_base(va), rights == LeafRights::Trusted ? Gate::Open : Gate::PushDown, section);
  }

  static ErrorOr<void> unshare(Pfn root, VirtAddr va, uint64_t pages, Coverage which, LazyMmuSection& section) {
    return C::each_stretch(va, pages, [&](VirtAddr v, unsigned, unsigned count, uint64_t) -> ErrorOr<void> {
      if (which == Coverage::Partial && count == kEntriesPerTable) return {};
      Pte* slot = C::hooked_l2_slot(root, v);
      if (!slot || holders(P::pfn_of(C::l2e(slot))) == 1) return {};
      return copy_out(slot, C::table_base(v), section);
    });
  }

  // ---- what the range verbs compose ----

  // How many L2 entries reference an L1 table (0 and 1 both mean one).
  static unsigned holders(Pfn l1) {
    const unsigned n = frame_refs().get(l1);
    return n ? n : 1;
  }

  // Whether the table under an L2 entry has another holder.
  static bool shared(const Pte* l2_slot) { return holders(P::pfn_of(C::l2e(l2_slot))) > 1; }

  // The cursor's hook for an existing L1 table about to take stores: made
  // ready for `gate` (a shared table is copied, a closed gate opened if the
  // gate asks); section is where the copy's invalidations go.
  static auto ready(Gate gate, LazyMmuSection* section) {
    return [gate, section](Pte* slot, VirtAddr va) -> ErrorOr<void> {
      // Gates and shared tables exist only in the user half (the kernel's
      // tables may have read-only upper entries of their own, e.g. Xen's).
      if (gate != Gate::None && !(raw(va) >> 63) && (!C::writable(C::l2e(slot)) || shared(slot))) {
        if (!section) panic("page walk: a shared or gated table needs a lazy-MMU section");
        TRY(make_private(slot, C::table_base(va), gate, *section));
      }
      return {};
    };
  }

  // Makes the L1 table `slot` points at this space's own before a store into
  // it (see Gate). slot may point at a new table afterwards.
  static ErrorOr<void> make_private(Pte* slot, VirtAddr base, Gate gate, LazyMmuSection& section) {
    if (gate == Gate::None) return {};
    if (shared(slot)) return copy_out(slot, base, section);
    if (C::writable(C::l2e(slot)) || gate == Gate::Keep) return {};
    return open_gate(slot, base, gate == Gate::PushDown, section);
  }

  // Unhooks a shared table from this space; the others keep it.
  static ErrorOr<void> drop_shared(Pte* slot, VirtAddr base, LazyMmuSection& section) {
    const Pfn l1 = P::pfn_of(C::l2e(slot));
    TRY(C::store(slot, Pte{}, Level::L2));
    section.invalidate_range(base, kEntriesPerTable);
    section.table_unhooked();  // the last sharer frees it later, out of this space's sight
    frame_refs().dec(l1);
    return {};
  }

  // mprotect of a whole table at its L2 entry, when the only right that
  // changes for its leaves is write: taking it away closes the gate (the
  // leaves keep theirs; effective rights are leaf ∧ L2); giving it back
  // opens it as a write fault would, which requires every leaf to be
  // writable already (or Cow). False: the leaves must change one by one.
  static ErrorOr<bool> protect_at_l2(Pte* slot, VirtAddr base, PteFlags set, PteFlags clear, LazyMmuSection& section) {
    const bool adds_write = set.bits & pte_bit::Write, removes_write = clear.bits & pte_bit::Write;
    if (adds_write == removes_write) return false;
    const Pte* l1 = phys_to_virt<const Pte>(P::pfn_of(C::l2e(slot)));
    // When the caller says only write changes (set and clear hold nothing
    // else), no leaf can differ in another right: no need to read them. A
    // leaf then left read-only under an open gate is upgraded by its first
    // write fault, as after any mprotect.
    const bool write_only = ((set.bits | clear.bits) & ~pte_bit::Write) == 0;
    for (unsigned k = 0; k < kEntriesPerTable && !write_only; ++k) {
      const Pte e = l1[k];
      if (!C::mapped(e)) continue;
      Pte updated{(e.raw | set.bits) & ~clear.bits};
      if (C::has(updated, pte_bit::Cow)) updated.raw &= ~pte_bit::Write;
      const uint64_t changed = updated.raw ^ e.raw;
      if (adds_write ? changed != 0 : (changed & ~pte_bit::Write) != 0) return false;
    }
    if (removes_write) {
      if (C::writable(C::l2e(slot))) {
        TRY(C::store(slot, Pte{C::l2e(slot).raw & ~pte_bit::Write}, Level::L2));
        section.invalidate_range(base, kEntriesPerTable);
      }
    } else {
      TRY(make_private(slot, base, Gate::Open, section));
    }
    count_event(g_mmu_counters.l2_protects);
    return true;
  }

 private:
  static unsigned mapped_leaves(const Pte* l1) {
    unsigned n = 0;
    for (unsigned k = 0; k < kEntriesPerTable; ++k) n += C::mapped(l1[k]);
    return n;
  }

  // This space's own copy of a shared table: its leaves read-only and Cow
  // (their frames are now referenced once more), built as plain memory and
  // hooked in with one validation. The old table loses one holder.
  static ErrorOr<void> copy_out(Pte* slot, VirtAddr base, LazyMmuSection& section) {
    const Pfn old = P::pfn_of(C::l2e(slot));
    const Pte* src = phys_to_virt<const Pte>(old);
    const Pfn fresh = TRY(frames().try_alloc());
    Pte* dst = phys_to_virt<Pte>(fresh);
    for (unsigned k = 0; k < kEntriesPerTable; ++k) {
      Pte e = src[k];
      if (C::mapped(e)) {
        e = Pte{(e.raw & ~pte_bit::Write) | pte_bit::Cow};
        frame_refs().inc(P::pfn_of(e));
      }
      dst[k] = e;  // not a page table yet: a plain store
    }
    auto prepared = P::prepare_table(fresh, Level::L1);
    if (!prepared.is_error()) {
      prepared = C::store(slot, P::make_table(fresh), Level::L2);
      if (prepared.is_error()) must(P::retire_table(fresh, Level::L1), "retire an unhooked copy");
    }
    if (prepared.is_error()) {
      for (unsigned k = 0; k < kEntriesPerTable; ++k)
        if (C::mapped(dst[k])) frame_refs().dec(P::pfn_of(dst[k]));  // the old table still holds each
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
    const Pfn table = P::pfn_of(C::l2e(slot));
    Pte* l1 = phys_to_virt<Pte>(table);
    // A table never shared (share count 0, not 1) has no leaf whose frame
    // became shared behind its back: every such leaf is Cow already.
    const bool scan = push_down || frame_refs().get(table) != 0;
    for (unsigned k = 0; k < kEntriesPerTable && scan; ++k) {
      const Pte e = l1[k];
      if (!C::mapped(e) || C::has(e, pte_bit::Cow)) continue;
      const bool shared_frame = frame_refs().get(P::pfn_of(e)) > 1;
      if (!shared_frame && !(push_down && C::has(e, pte_bit::Write))) continue;
      const Pte old = C::update_start(&l1[k]);
      TRY(C::update_commit(&l1[k], old,
                           Pte{(old.raw & ~pte_bit::Write) | (shared_frame ? pte_bit::Cow : uint64_t{0})}));
    }
    TRY(P::flush_queue());
    TRY(C::store(slot, Pte{C::l2e(slot).raw | pte_bit::Write}, Level::L2));
    frame_refs().set(table, 0);  // its leaves are in order again
    // Translations cached while the gate was closed say read-only.
    section.invalidate_range(base, kEntriesPerTable);
    ++(push_down ? g_mmu_counters.pt_pushdowns : g_mmu_counters.pt_gate_opens);
    return {};
  }
};

}  // namespace pvk::walk
