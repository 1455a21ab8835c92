// Unhook-and-rehook, from the guest: what Xen 3's writable page tables did
// inside Xen (seed 003's "wtpt" arm). Inside a lazy-MMU section, the first
// store the walk announces into an L1 table (begin_table) takes the table out
// of Xen's hands: its L2 entry is cleared — Xen drops the L1's last type
// reference and devalidates it (mm.c: mod_l2_entry's put_page_from_l2e,
// _put_page_type at count 0, demote_l1_table) — and the kernel's physmap
// alias of the frame is made writable (possible only now: a writable mapping
// takes PGT_writable_page, which _get_page_type refuses while the frame holds
// an L1 type reference). Later stores into it are plain stores. A flush, the
// end of the section, or any L2 store over the entry makes the alias read-only
// again and writes the saved entry back: Xen validates the whole table once
// (get_page_from_l2e -> promote_l1_table, 512 get_page_from_l1e).
//
// A table is not unhooked (it takes the queued path; unhook_fallbacks counts
// it, and the first of each reason is named on the console) when:
//  - Kernel:  it maps kernel memory (the kernel half outside the scratch
//             region): text, stacks and the physmap the walk itself reads
//             through must never vanish;
//  - Shared:  ptshare=on shares it (several L2 entries): clearing one leaves
//             its type count above 0, so Xen would refuse the writable alias,
//             and the other sharers would still see every store;
//  - Refused: Xen refused the writable alias anyway (another type reference,
//             e.g. a pinned table): the entry is written back at once.
//
// While a table is unhooked its 2 MiB are unmapped in hardware. The walk
// reads L2 entries through l2_entry() (the saved entry), so it never takes
// the range for empty (no second table over it, no L2 table freed under it);
// an L2 store over the entry rehooks first (or, for a clear, forgets the
// table: it is being released). Nothing else may touch the range until the
// section ends: g_unhooked_tables tells LazyMmuSection, which panics if a
// section opens (a fault) while tables are unhooked, and check_access()
// panics for a range that is unhooked now.
//
// SMP: the unhooked tables are the open section's, so they are kept per
// CPU (sections are per CPU and never span a switch), and every page
// operation on a space runs under its lock: a thread of the space on
// another CPU that reaches an unhooked range faults and waits on that lock
// until the section has rehooked it. So neither backend needs the kernel
// lock. Only the count of tables unhooked on any CPU (g_unhooked_tables)
// is shared: the stores' fast path reads it alone, as it read one count
// when everything ran under the kernel lock.
//
// Env is the environment: the real one under Xen (unhook_policy.h), a
// logging one in the host tests. It provides
//   bool lazy();                                    inside a lazy-MMU section?
//   unsigned cpu();                                 this CPU's id
//   Pfn pfn_of(Pte); Pfn pfn_of_slot(const Pte*);   frames of an entry / a slot
//   unsigned holders(Pfn l1);                       L2 entries referencing l1
//   unsigned present_leaves(Pfn l1);                present entries of table l1
//   bool queue_busy();                              does the update queue hold anything?
//   ErrorOr<void> set_l2(Pte* slot, Pte v);         an immediate, checked L2 update
//   ErrorOr<void> set_alias(Pfn l1, bool writable); the physmap alias's rights
//   ErrorOr<void> queued(Pte* slot, Pte v, bool preserve_ad);  the fallback L1 path
//   void fatal(const char* what);                   a rehook that cannot fail did
#pragma once
#include "base/console/console.h"
#include "base/counters.h"
#include "base/layout.h"
#include "base/lib/cpumask.h"
#include "pvops/backends/auto_choice.h"
#include "pvops/pte.h"

namespace pvk {

// Tables unhooked right now on any CPU, by whichever backend (0 outside
// unhook/auto).
extern unsigned g_unhooked_tables;

enum class UnhookFallback : uint8_t { Kernel, Shared, Refused, Count };
const char* unhook_fallback_name(UnhookFallback why);

template <typename Env>
class UnhookTables {
 public:
  // Xen 3 kept one table unhooked per CPU; more let fork's parent and child
  // tables both stay out while a stretch is written. When full, the oldest
  // is rehooked.
  static constexpr unsigned kMaxUnhooked = 8;

  // Unhook: every announced table in a section. Auto: per table, the choice
  // of auto_choice.h from the announced entry count.
  static void configure(TableMode mode, AutoThresholds thresholds) {
    mode_ = mode;
    thresholds_ = thresholds;
  }
  static TableMode mode() { return mode_; }
  static AutoThresholds thresholds() { return thresholds_; }

  static ErrorOr<void> begin_table(Pte* l2_slot, VirtAddr base, unsigned entries) {
    if (!Env::lazy() || entries == 0 || (any() && find_slot(l2_slot))) return {};
    const Pte saved = *l2_slot;
    if (!(saved.raw & pte_bit::Present)) return {};
    if (mode_ == TableMode::Auto) {
      // The rehook validates the leaves present then: those there now, or
      // at least the ones this operation stores (fork fills a child's empty
      // table; mprotect rewrites leaves already there).
      const auto present = [&] {
        const unsigned now = Env::present_leaves(Env::pfn_of(saved));
        return now > entries ? now : entries;
      };
      // Asked before anything is sent: an unhook now would send what is
      // queued ahead of its L2 clear (set_l2), a hypercall of its own.
      if (choose_strategy_lazily(entries, thresholds_, present, [] { return Env::queue_busy(); }) == Strategy::Queue) {
        count_event(g_mmu_counters.auto_queued);
        return {};
      }
      count_event(g_mmu_counters.auto_unhooked);
    }
    const Pfn l1 = Env::pfn_of(saved);
    if (maps_kernel(base)) return fallback(UnhookFallback::Kernel);
    if (Env::holders(l1) > 1) return fallback(UnhookFallback::Shared);
    if (here().count == kMaxUnhooked) TRY(rehook(0));
    // Queued stores into this table must land while Xen still owns it:
    // set_l2 sends the queue first.
    TRY(Env::set_l2(l2_slot, Pte{}));
    if (auto r = Env::set_alias(l1, true); r.is_error()) {
      // Xen still types the frame (another reference): put it back as it was.
      TRY(Env::set_l2(l2_slot, saved));
      return fallback(UnhookFallback::Refused);
    }
    CpuTables& t = here();
    t.tables[t.count++] = {l1, l2_slot, saved};
    __atomic_add_fetch(&g_unhooked_tables, 1, __ATOMIC_RELAXED);
    count_event(g_mmu_counters.unhooks);
    return {};
  }

  // An L1 store: plain if its table is unhooked, the fallback path otherwise.
  static ErrorOr<void> store(Pte* slot, Pte v, bool preserve_ad) {
    if (any() && find_l1(Env::pfn_of_slot(slot))) {
      // Nothing walks the table while it is unhooked: no A/D bit can change
      // under us, so a plain store is also a correct commit.
      __atomic_store_n(&slot->raw, v.raw, __ATOMIC_RELAXED);
      return {};
    }
    return Env::queued(slot, v, preserve_ad);
  }

  // The L2 entry as the walk must see it.
  static Pte l2_entry(const Pte* slot) {
    if (any())
      if (const Entry* e = find_slot(slot)) return e->saved;
    return *slot;
  }

  // Before any L2 store: an unhooked entry is rehooked first, so the store
  // sees (and Xen checks against) the real entry; a clear instead forgets the
  // table (it is being unhooked for good: the caller releases it, and Xen
  // already dropped its type, so there is nothing to validate).
  static ErrorOr<void> before_l2_store(Pte* slot, Pte v) {
    if (!any()) return {};
    Entry* e = find_slot(slot);
    if (!e) return {};
    const unsigned i = static_cast<unsigned>(e - here().tables);
    if (v.raw != 0) return rehook(i);
    // The caller writes the empty entry (already empty in memory), then
    // releases the frame, whose retire makes the alias writable anyway.
    remove(i);
    return {};
  }

  // Every unhooked table back under Xen's control (flush, leave, root switch).
  static ErrorOr<void> rehook_all() {
    if (!any()) return {};
    while (const unsigned n = here().count) TRY(rehook(n - 1));
    return {};
  }

  // On this CPU.
  static unsigned unhooked() { return here().count; }
  static bool is_unhooked(Pfn l1) { return find_l1(l1) != nullptr; }

  // The debug check of the invariant: nothing may reach an unhooked range.
  static void check_access(const Pte* l2_slot, VirtAddr va) {
    if (any() && find_slot(l2_slot))
      panic("unhook: access to 0x%lx, whose L1 table is unhooked inside a lazy-MMU section", raw(va));
  }

 private:
  struct Entry {
    Pfn l1;
    Pte* slot;
    Pte saved;
  };

  // The user half, and the kernel's scratch mappings (one L4 slot, used by
  // the selftests only), may be unhooked; the rest of the kernel half not.
  static bool maps_kernel(VirtAddr base) {
    constexpr uint64_t kScratchSpan = uint64_t{1} << 39;
    if (!(raw(base) >> 63)) return false;
    return !(raw(base) >= PVK_SCRATCH_BASE && raw(base) - PVK_SCRATCH_BASE < kScratchSpan);
  }

  static ErrorOr<void> fallback(UnhookFallback why) {
    count_event(g_mmu_counters.unhook_fallbacks);
    const unsigned k = static_cast<unsigned>(why);
    if (!said_[k]) {
      said_[k] = true;
      kprintf("pvk: unhook: a table stays hooked (%s); its stores are queued updates\n", unhook_fallback_name(why));
    }
    return {};
  }

  static ErrorOr<void> rehook(unsigned i) {
    const Entry e = here().tables[i];
    // Read-only first: Xen refuses to type the frame as an L1 while a
    // writable mapping of it exists.
    if (auto r = Env::set_alias(e.l1, false); r.is_error()) Env::fatal("alias of an unhooked table stays writable");
    if (auto r = Env::set_l2(e.slot, e.saved); r.is_error()) Env::fatal("Xen refused to rehook a table");
    remove(i);
    count_event(g_mmu_counters.rehooks);
    return {};
  }

  static void remove(unsigned i) {
    CpuTables& t = here();
    for (unsigned k = i + 1; k < t.count; ++k) t.tables[k - 1] = t.tables[k];
    --t.count;
    __atomic_sub_fetch(&g_unhooked_tables, 1, __ATOMIC_RELAXED);
  }

  // Newest first: a walk stores into the table it unhooked last, and fork
  // keeps up to kMaxUnhooked of its parent's tables out at once, so an
  // oldest-first scan paid one probe per older table on every plain store.
  static Entry* find_slot(const Pte* slot) {
    CpuTables& t = here();
    for (unsigned k = t.count; k-- > 0;)
      if (t.tables[k].slot == slot) return &t.tables[k];
    return nullptr;
  }
  static Entry* find_l1(Pfn l1) {
    CpuTables& t = here();
    for (unsigned k = t.count; k-- > 0;)
      if (t.tables[k].l1 == l1) return &t.tables[k];
    return nullptr;
  }

  static inline TableMode mode_ = TableMode::Unhook;
  static inline AutoThresholds thresholds_{};
  // This CPU's unhooked tables (its open section's).
  struct CpuTables {
    Entry tables[kMaxUnhooked];
    unsigned count;
  };
  static CpuTables& here() { return cpu_tables_[Env::cpu() % kCpuMaskBits]; }
  // Whether any CPU has a table unhooked: the one shared read of the
  // stores' fast path (this CPU's own are a subset).
  static bool any() { return __atomic_load_n(&g_unhooked_tables, __ATOMIC_RELAXED) != 0; }

  static inline CpuTables cpu_tables_[kCpuMaskBits]{};
  static inline bool said_[static_cast<unsigned>(UnhookFallback::Count)]{};
};

}  // namespace pvk
