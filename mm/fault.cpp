// Page faults of an AddressSpace: demand paging (a fresh cleared frame or
// the zero page; a file's page: mm/source_fault.cpp), copy-on-write, write access returned, a stale
// translation flushed; the fresh frame taken before the space's lock.
#include "mm/address_space.h"

#include "base/counters.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "base/lib/fault_inject.h"
#include "mm/address_space_parts.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/call/pvop.h"

namespace pvk {

using namespace space;

// Inline in handle_fault, its one caller: a call between the two was a
// second frame on every fault (about 20 instructions).
[[gnu::always_inline]] inline FaultOutcome AddressSpace::handle_fault_locked(VirtAddr va, Access access, SpareFrame& spare) {
  count_event(g_mm_stats.page_faults);
  const bool write = access == Access::Write;
  const Vma* v = find(va);
  if (!v || !v->prot || (write && !(v->prot & vm::Write))) return FaultOutcome::bad_access();
  // An instruction fetch from memory without PROT_EXEC: the leaf carries NX,
  // so treating it as a stale translation would fault again forever.
  if (access == Access::Execute && !(v->prot & vm::Exec)) return FaultOutcome::bad_access();
  const VirtAddr page = align_down(va, kPageSize);
  const PteFlags flags = leaf_flags(v->prot);
  if (write && g_policy.ptshare) {
    // The L2 entry above may be a closed gate (a table shared since fork, or
    // one this space alone holds again): copy or open it first, in its own
    // section, so the leaf decision below reads the table as it now is.
    LazyMmuSection gate(root_, tlb_, OnRefusal::Fail);
    auto opened = finish(gate, PVOP(range.open_for_write)(root_, page,
                                                          leaf_rights_in_table(align_down(page, kTableSpan)), gate));
    if (opened.is_error()) return FaultOutcome::out_of_memory(opened.error());
  }
  auto pte = PVOP(range.lookup)(root_, page);
  if (pte.is_error() && v->source) {
    FaultOutcome out = FaultOutcome::handled();
    if (fault_from_source(*v, page, write, spare, out)) return out;
  }

  // A fault only grants access, so a refused update is not retried: the
  // tables are read back afterwards and say whether the new frame made it.
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);
  ErrorOr<void> r;
  Pfn fresh{};          // a frame this fault took, if any
  Pfn replaced{};       // the shared frame a copy replaces (copied = true)
  bool took = false, copied = false;
  if (pte.is_error()) {
    if (!write && !(v->flags & vm::Shared) && g_policy.zero_page) {
      count_event(g_mm_stats.zero_page_maps);
      r = PVOP(range.remap)(root_, page, g_zero_page, flags.without(pte_bit::Write).with(pte_bit::Cow), section);
    } else {
      if (spare.valid) {
        fresh = spare.pfn;  // cleared already
        spare.valid = false;
      } else {
        auto f = frames().try_alloc();
        if (f.is_error()) {
          must(section.finish(), "fault section");
          return FaultOutcome::out_of_memory(f.error());
        }
        fresh = f.value();
        clear_user_page(fresh);
      }
      took = true;
      frame_refs().set(fresh, 1);
      r = PVOP(range.remap)(root_, page, fresh, flags, section);
    }
  } else if (write && pte_has(pte.value(), pte_bit::Cow)) {
    const Pfn old = PVOP(pte_pfn)(pte.value());
    if (old != g_zero_page && frame_refs().get(old) == 1) {
      r = PVOP(range.remap)(root_, page, old, flags, section);  // the last sharer keeps it
    } else {
      auto f = frames().try_alloc();
      if (f.is_error()) {
        must(section.finish(), "fault section");
        return FaultOutcome::out_of_memory(f.error());
      }
      fresh = f.value(), took = true, replaced = old, copied = true;
      // The zero page's copy is a cleared frame: a memset writes one page
      // where a copy would also read the zero page's (seed 001).
      if (old == g_zero_page)
        clear_user_page(fresh);
      else
        copy_user_page(fresh, old);
      frame_refs().set(fresh, 1);
      r = PVOP(range.remap)(root_, page, fresh, flags, section);
    }
  } else if (write && !pte_has(pte.value(), pte_bit::Write)) {
    r = PVOP(range.remap)(root_, page, PVOP(pte_pfn)(pte.value()), flags, section);
  } else {
    section.invalidate(page);  // a stale translation: the entry already allows it
  }
  r = finish(section, r);
  if (!took) return r.is_error() ? FaultOutcome::out_of_memory(r.error()) : FaultOutcome::handled();
  const auto now = PVOP(range.lookup)(root_, page);
  if (now.is_error() || PVOP(pte_pfn)(now.value()) != fresh) {
    frame_refs().set(fresh, 0);  // never referenced by an entry: give it back
    frames().must_free(fresh);
    return FaultOutcome::out_of_memory(r.is_error() ? r.error() : Errno::ENOMEM);
  }
  if (copied) {
    count_event(g_mm_stats.cow_copies);
    put_frame_ref(replaced);
  }
  return FaultOutcome::handled();
}

FaultOutcome AddressSpace::handle_fault(VirtAddr va, Access access, EntryHint hint) {
  // A write to a page that is not there most likely needs a fresh frame:
  // taken and cleared before the lock, so the clearing (most of such a
  // fault's time) of several threads' faults overlaps instead of queueing
  // behind the lock. Not while fail= is armed: its schedule stays as it was.
  SpareFrame spare;
  if (access == Access::Write && hint == EntryHint::NotPresent && !fault_inject_armed()) {
    if (auto f = frames().try_alloc(); !f.is_error()) {
      spare = {f.value(), true};
      clear_user_page(spare.pfn);
    }
  }
  FaultOutcome out = FaultOutcome::handled();
  {
    // Serialises this fault with the space's other faults (threads on other
    // CPUs, perhaps on the same page: the second finds the entry the first
    // made and only flushes) and with every change of its VMAs and tables.
    SpinGuard guard(lock_);
    out = handle_fault_locked(va, access, spare);
  }
  // Unused: another thread's fault mapped the page first, or the fault
  // turned out not to need a frame (or not to be allowed).
  if (spare.valid) frames().must_free(spare.pfn);
  return out;
}

}  // namespace pvk
