// What the three Xen PV backends share: frame translation through the
// P2M/M2P, Xen's rules for page-table frames (read-only everywhere, roots
// pinned), the update queue and its error reports, TLB and root verbs.
// Backends differ only in how an L1 entry reaches the table (xen_policy.h).
#pragma once
#include "hypercalls/mmu_queue.h"
#include "pvops/mmu_ops.h"

namespace pvk::xen_pv {

struct Config {
  const char* name;
  unsigned queue_capacity;  // 1 = one hypercall per update (direct)
  bool defer_in_lazy;       // queue L1 updates and TLB flushes inside lazy sections
};

// Set up the queue and mode; called by a backend's make_*_ops.
void configure(const Config& config);

xen::MmuQueue& queue();

// shootdown=: how flush_tlb_multi reaches other vCPUs; also registers the
// TlbFlush handler with Xen's local flushes (set at boot, after the backend).
void set_shootdown_mode(ShootdownMode mode);
bool lazy();

// Sends an update now (after anything queued), reporting a refusal.
ErrorOr<void> update_now(uint64_t ptr, uint64_t val);
// Queues an update (sent at the end of the lazy section or when the queue
// fills); outside a lazy section, or when deferral is off, sends at once.
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

// Fills the verbs every Xen backend shares into ops (made by make_mmu_ops).
void install_common(MmuOps& ops);

}  // namespace pvk::xen_pv
