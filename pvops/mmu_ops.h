// The pvops MMU table: every page-table operation in the kernel goes through
// g_mmu. Its backend (native, batched, direct, wrpt) is chosen once at boot;
// verbs keep Linux's names so kernel engineers feel at home.
//
// Two kinds of entries:
//  - single-entry verbs (set_pte, ptep_modify_prot_start/commit, ...), for
//    paths that touch one entry (a fault);
//  - range operations (map/protect/unmap/lookup), which are the shared walk
//    (pvops/walk/range_ops.h) instantiated with the backend's policy, so a hot loop
//    costs one indirect call per range, not per entry — except under
//    pte=flags, where every flag read deliberately goes through pte_flags.
#pragma once
#include "base/lib/error_or.h"
#include "base/counters.h"
#include "pvops/pte.h"
#include "pvops/tlb/tlb_shootdown.h"

namespace pvk {

class LazyMmuSection;

// Where the frames of a map() come from: a contiguous run or an array.
struct FrameSource {
  const Pfn* array = nullptr;
  Pfn first{};
  Pfn at(uint64_t i) const { return array ? array[i] : first + i; }
};

// Called for each present entry unmap() removes (e.g. to free its frame).
struct UnmapVisitor {
  void (*fn)(void* ctx, VirtAddr va, Pte old) = nullptr;
  void* ctx = nullptr;
};

enum class ForkMode : uint8_t { CopyOnWrite, Share };

// Whether the writable leaves under a closed gate may keep their write right
// when it opens: Trusted when every VMA over the table allows writing (a
// whole-table mprotect may have left writable leaves under a read-only VMA
// and a read-only gate; then Reduced).
enum class LeafRights : uint8_t { Trusted, Reduced };
// Which tables of a range an operation needs to own.
enum class Coverage : uint8_t { Partial, All };

struct MmuRangeOps {
  // EEXIST if any target entry is already present (nothing is overwritten);
  // on error, entries mapped before the failure stay mapped.
  // Call it inside a lazy-MMU section: the stores may be queued until it ends.
  ErrorOr<void> (*map)(Pfn root, VirtAddr va, uint64_t pages, FrameSource src, PteFlags flags);
  // Sets then clears flag bits of every present leaf in the range, keeping
  // the accessed/dirty bits the hardware set meanwhile.
  ErrorOr<void> (*protect)(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                           LazyMmuSection& section);
  // Clears the range and frees L1/L2 tables that become empty.
  ErrorOr<void> (*unmap)(Pfn root, VirtAddr va, uint64_t pages, UnmapVisitor visit, LazyMmuSection& section);
  // The leaf entry mapping va; ENOENT if none.
  ErrorOr<Pte> (*lookup)(Pfn root, VirtAddr va);
  // Makes sure the table at `level` covering va exists (allocating the ones
  // above it), e.g. the kernel's L3 tables that every root shares.
  ErrorOr<void> (*populate)(Pfn root, VirtAddr va, Level level);
  // Points the leaf for va at pfn (creating tables as needed), whatever was
  // there before; the old translation is invalidated.
  ErrorOr<void> (*remap)(Pfn root, VirtAddr va, Pfn pfn, PteFlags flags, LazyMmuSection& section);
  // fork: every present leaf of the parent's range appears in the child.
  // CopyOnWrite write-protects the parent's writable leaves and marks both
  // copies Cow; Share copies them as they are. Frame references are taken.
  ErrorOr<void> (*fork_range)(Pfn parent, Pfn child, VirtAddr va, uint64_t pages, ForkMode mode, LazyMmuSection& section);
  // Frees the user half's remaining (empty) upper tables of a root about to
  // be dropped or cached; EBUSY if a leaf is still mapped there.
  ErrorOr<void> (*release_user_tables)(Pfn root, LazyMmuSection& section);

  // Table sharing (ptshare=on). An L1 table may be referenced by the L2
  // entries of several address spaces; those entries are then read-only (a
  // closed "gate": no write reaches a leaf under it), and the table's share
  // count (frame_refs() of the table's frame) says how many there are. The
  // walk never stores into a shared table: a verb that must first gives the
  // caller a private copy ("copy-out": every leaf read-only and Cow, frame
  // references taken for that table only, hooked in with one validation).
  //
  // fork: the child's L2 entry for the 2 MiB at va points at the parent's
  // L1 table, both entries read-only; no leaf is written. Only a table with
  // at least min_leaves mapped leaves (or one shared already) is shared;
  // false means nothing was done (no table, or too sparse): copy its leaves.
  ErrorOr<bool> (*share_table)(Pfn parent, Pfn child, VirtAddr va, unsigned min_leaves, LazyMmuSection& section);
  // A write to va is coming (a write fault the VMA allows): the table is
  // copied if shared, or its gate opened when this space is the last holder
  // (leaves whose frames are still shared lose write and become Cow first;
  // with LeafRights::Reduced every leaf loses write first).
  ErrorOr<void> (*open_for_write)(Pfn root, VirtAddr va, LeafRights rights, LazyMmuSection& section);
  // Copies out the shared tables of [va, va + pages) — all of them, or only
  // those the range covers in part — so the work that follows (mprotect,
  // munmap) needs no frame and cannot stop halfway for want of one.
  ErrorOr<void> (*unshare)(Pfn root, VirtAddr va, uint64_t pages, Coverage which, LazyMmuSection& section);
  // protect() that changes a whole table's L2 entry instead of its leaves
  // when only the write right changes for every leaf of it.
  ErrorOr<void> (*protect_tables)(Pfn root, VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear,
                                  LazyMmuSection& section);
  // Empties the user half: every leaf reported and unhooked with its table,
  // a shared table only unhooked (its count drops); L1 and L2 tables freed.
  // release_user_tables() then frees the L3 tables.
  ErrorOr<void> (*teardown)(Pfn root, UnmapVisitor visit, LazyMmuSection& section);
};

enum class PteAccess : uint8_t { Attrs, Flags };  // boot parameter pte=

// What a lazy-MMU section does when the hypervisor refuses a queued
// page-table update (Xen PV; natively nothing is ever refused).
//  Fail:  the error ends the section; what was not applied is dropped, and
//         the caller learns what happened by reading the tables back — for
//         work that grants access (a fault's mapping) and can be undone.
//  Retry: the refused requests are reported and sent again, a few times,
//         before the error is given up — for work that takes access away
//         (unmap, teardown, write-protect for fork, mprotect), which must not
//         stop halfway.
enum class OnRefusal : uint8_t { Fail, Retry };

// Which verbs of a backend are plain arithmetic on the entry, so that
// pvpatch=on may replace their call sites by the instructions themselves.
enum class InlineForms : uint8_t {
  None,
  FlagsMask,       // pte_flags is the architectural mask (flags are the same bits everywhere)
  NativeEncoding,  // also pte_val (identity), pte_pfn and make_pte (the frame field is the pfn)
};

struct MmuOps {
  const char* name;
  InlineForms inline_forms;

  ErrorOr<void> (*set_pte)(Pte* slot, Pte v);
  ErrorOr<void> (*set_pmd)(Pte* slot, Pte v);
  ErrorOr<void> (*set_pud)(Pte* slot, Pte v);
  ErrorOr<void> (*set_p4d)(Pte* slot, Pte v);
  Pte (*ptep_modify_prot_start)(Pte* slot);
  ErrorOr<void> (*ptep_modify_prot_commit)(Pte* slot, Pte old, Pte v);

  Pte (*make_pte)(Pfn pfn, PteFlags flags);
  Pfn (*pte_pfn)(Pte pte);
  uint64_t (*pte_val)(Pte pte);  // pseudo-physical value: pfn << 12 | flags
  PteFlags (*pte_flags)(Pte pte);
  CacheAttr (*pte_attrs)(Pte pte);  // a leaf's memory type, read through the platform's PAT layout
  // The other way: the PWT/PCD/PAT bits that give a leaf this memory type in
  // the platform's PAT layout (pvk's own natively, Xen's under PV).
  PteFlags (*make_pte_attrs)(CacheAttr attr);

  void (*enter_lazy_mmu)(OnRefusal on_refusal);
  ErrorOr<void> (*flush_lazy_mmu)();  // push queued updates, stay lazy
  ErrorOr<void> (*leave_lazy_mmu)();
  void (*flush_tlb_one)(VirtAddr va);
  void (*flush_tlb_all)();
  // Shootdown (pvops/tlb/tlb_shootdown.h): makes every CPU of `cpus` other than
  // this one drop what `info` names, before it returns or — Xen's hypercall
  // path inside a lazy-MMU section — in the same multicall as the section's
  // queued updates, which the section sends right after. Never fails
  // silently: a target that cannot be reached is a fallback (Xen: a full
  // flush by the hypervisor) or a panic.
  void (*flush_tlb_multi)(const CpuMask& cpus, const TlbFlushInfo& info);
  // Loads root on this CPU and records it as this CPU's current root.
  ErrorOr<void> (*load_root)(Pfn root);
  ErrorOr<void> (*alloc_pt_page)(Pfn pfn, Level level);
  ErrorOr<void> (*release_pt_page)(Pfn pfn, Level level);

  MmuRangeOps range;
};

// The active table. A copy, not a pointer, so a call is one load and one
// indirect jump.
#if !PVK_BUILTIN_NATIVE
extern MmuOps g_mmu;
#endif
// The root loaded on this CPU (TLB flushes here matter only for it and the
// kernel half): a per-CPU value (current_root(), pvops/tlb/tlb_shootdown.h),
// spelled as the one global it was before SMP so readers need not change.
struct CurrentRootRef {
  operator Pfn() const { return current_root(); }
  CurrentRootRef& operator=(Pfn root) {
    set_current_root(root);
    return *this;
  }
};
inline bool operator==(const CurrentRootRef&, Pfn b) { return current_root() == b; }
inline CurrentRootRef g_current_root;

}  // namespace pvk
