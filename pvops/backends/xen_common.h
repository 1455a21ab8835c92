// What the Xen PV backends share: frame translation through the P2M/M2P,
// Xen's rules for page-table frames (read-only everywhere, roots pinned), the
// update queue and its error reports, TLB and root verbs. Backends differ in
// how an L1 entry reaches the table (xen_policy.h), the length of the queue
// and whether it waits for the end of a lazy-MMU section (Deferral);
// xen_ops.h builds a backend's table from these verbs.
#pragma once
#include "hypercalls/mmu_queue.h"
#include "pvops/mmu_ops.h"

namespace pvk::xen_pv {

// Whether L1 updates and TLB flushes wait in the queue inside a lazy-MMU
// section (batched, unhook, auto) or leave at once (direct, wrpt).
enum class Deferral : uint8_t { Immediate, InLazySections };

// Sets up what every Xen backend starts from, called by its constructor:
// each CPU's queue of updates (queue_capacity entries; 1 = one hypercall per
// update) and whether it defers, and shootdown=, how flush_tlb_multi
// reaches other vCPUs (this also registers the TlbFlush handler with Xen's
// local flushes).
void init_common(unsigned queue_capacity, Deferral deferral, ShootdownMode shootdown);

xen::MmuQueue& queue();
bool lazy();

// Writable page tables (VMASST_TYPE_writable_pagetables) for the rest of the
// boot: wrpt's L1 stores are trapped and emulated by Xen. Reports a refusal.
ErrorOr<void> enable_writable_pagetables();
// Whether the assist is on for good (the event probes then need not turn it
// on around their trapped stores).
bool writable_pagetables();

// Sends an update now (after anything queued), reporting a refusal.
ErrorOr<void> update_now(uint64_t ptr, uint64_t val);
// Queues an update (sent at the end of the lazy section or when the queue
// fills); outside a lazy section, or with Deferral::Immediate, sends at once.
ErrorOr<void> update_queued(uint64_t ptr, uint64_t val);
// Sends what update_queued() holds (the batched backend's flush_lazy_mmu).
ErrorOr<void> flush_lazy();
// One line on the console and one hypercall_error record naming the
// refused request; returns the error to propagate.
Errno report_failure(const char* op, Errno e);
Errno report_rc(const char* op, long rc, uint64_t a, uint64_t b);

// Page-table frames: tracked so leaf mappings of them are made read-only.
bool is_page_table(Pfn pfn);
void mark_page_table(Pfn first, uint64_t count, bool is_table);

// 64-bit PV user mode runs on its own root, which must not map the kernel
// (Xen makes every guest mapping user-accessible). Each root gets a
// companion user root sharing its user-half L3 tables; stores to the user
// half of a root's L4 are mirrored there.
ErrorOr<void> mirror_user_l4(Pte* slot, Pte v);
// An L4 store: the root's entry and, for the user half, its user-only
// twin's change together or not at all.
ErrorOr<void> store_l4(Pte* slot, Pte v);

// The frame's one mapping the kernel writes through (its physmap alias,
// during boot Xen's initial mapping) gets these rights.
ErrorOr<void> remap_accessor(Pfn pfn, PteFlags flags);

// Work that undoes or tears down must not stop at one refusal, whatever
// section it runs in: while this lives, refusals are sent again.
class MustComplete {
 public:
  MustComplete();
  ~MustComplete();
  MustComplete(const MustComplete&) = delete;
  MustComplete& operator=(const MustComplete&) = delete;

 private:
  OnRefusal saved_;
};

ErrorOr<void> prepare_table(Pfn pfn, Level level);
ErrorOr<void> retire_table(Pfn pfn, Level level);

// The verbs every Xen backend's table holds (xen_ops.h puts them there). A
// backend that adds work around one of them (unhook: every unhooked table
// back first) puts its own verb in the slot and calls this one by its name.
CacheAttr pte_attrs(Pte e);
PteFlags make_pte_attrs(CacheAttr attr);
void enter_lazy(OnRefusal on_refusal);
ErrorOr<void> leave_lazy();
ErrorOr<void> load_root(Pfn root);
void flush_tlb_one(VirtAddr va);
void flush_tlb_all();
void flush_tlb_multi(const CpuMask& cpus, const TlbFlushInfo& info);

}  // namespace pvk::xen_pv
