// AddressSpace's life: the table of spaces, creation, fork, teardown; the
// boot's policy and the zero page. The rest of it: the root cache
// (root_cache.cpp), the VMA list (vma_list.cpp), mmap/munmap/mprotect/brk
// (mapping.cpp), faults (fault.cpp), switch_mm (switch_mm.cpp).
#include "mm/address_space.h"

#include "base/layout.h"
#include "base/counters.h"
#include "base/lib/kstring.h"
#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/platform.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "mm/address_space_parts.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/call/pvop.h"

namespace pvk {

MmStats g_mm_stats;

void clear_user_page(Pfn frame) {
  const uint64_t t0 = cpu::rdtsc();
  memset(phys_to_virt(frame), 0, kPageSize);
  count_event(g_mm_stats.page_clear_cycles, cpu::rdtsc() - t0);
  count_event(g_mm_stats.pages_cleared);
}

void copy_user_page(Pfn to, Pfn from) {
  const uint64_t t0 = cpu::rdtsc();
  memcpy(phys_to_virt(to), phys_to_virt(from), kPageSize);
  count_event(g_mm_stats.page_copy_cycles, cpu::rdtsc() - t0);
  count_event(g_mm_stats.pages_copied);
}

namespace space {

MmPolicy g_policy;
Pfn g_zero_page{};

}  // namespace space

using namespace space;

namespace {

constexpr unsigned kMaxSpaces = 96;

AddressSpace g_spaces[kMaxSpaces];

}  // namespace

void set_mm_policy(const MmPolicy& policy) { g_policy = policy; }
const MmPolicy& mm_policy() { return g_policy; }

ErrorOr<void> init_user_mm() {
  set_tlb_leave_hook(&leave_root_here);
  g_zero_page = TRY(frames().try_alloc());
  memset(phys_to_virt(g_zero_page), 0, kPageSize);
  frame_refs().set_immortal(g_zero_page);  // shared by any number of mappings, never freed
  return {};
}

void AddressSpace::reset() {
  root_ = Pfn{};
  tlb_ = SpaceTlb{};  // no CPU, generation 0
  count_ = 0;
  brk_base_ = brk_end_ = VirtAddr{};
  in_use_ = false;
  shared_tables_up_to_ = VirtAddr{};
}

ErrorOr<AddressSpace*> AddressSpace::try_create() {
  SpinGuard guard(spaces_lock());
  for (AddressSpace& as : g_spaces) {
    if (as.in_use_) continue;
    const Pfn root = TRY(new_root());
    as.reset();  // not in use: nobody else can reach it, no lock needed
    // As the kernel lock's: under TCG a spinning vCPU is a host thread that
    // takes the time the holder's needs (a fault clears or copies a page
    // under the lock), so where the platform says so waiters halt.
    as.lock_.set_wait(g_platform && g_platform->halt_lock_waiters ? LockWait::Halt : LockWait::Spin);
    as.root_ = root;
    as.in_use_ = true;
    return &as;
  }
  return Errno::ENOMEM;
}

namespace {
ForkMode fork_mode(const Vma& v) { return (v.flags & vm::Shared) ? ForkMode::Share : ForkMode::CopyOnWrite; }
}  // namespace

ErrorOr<AddressSpace*> AddressSpace::try_fork() {
  AddressSpace* child = TRY(try_create());
  ErrorOr<void> r;
  {
    // The parent's lock: its threads' faults wait while its leaves turn
    // read-only. The child is reachable by nobody yet.
    SpinGuard guard(lock_);
    memcpy(child->vmas_, vmas_, count_ * sizeof(Vma));  // the slots in use only
    child->count_ = count_;
    for (unsigned i = 0; i < count_; ++i) vmas_[i].source.hold();  // the child's VMAs map them too
    child->brk_base_ = brk_base_;
    child->brk_end_ = brk_end_;
    // The parent's leaves are write-protected as they are shared: that must
    // not stop halfway (a refused request is sent again), and only the child
    // is undone if the fork fails.
    LazyMmuSection section(root_, tlb_, OnRefusal::Retry);
    shared_tables_up_to_ = VirtAddr{0};
    for (unsigned i = 0; i < count_ && !r.is_error();) {
      const Vma& v = vmas_[i++];
      const ForkMode mode = fork_mode(v);
      if (g_policy.ptshare) {
        r = fork_vma_sharing_tables(*child, v, mode, section);
        continue;
      }
      // VMAs of one mode whose leaves share a page table are copied in one
      // walk: the table the child gets is filled as private memory for all
      // of them and published once, where a walk per VMA published it with
      // the first and wrote the later ones' leaves into a live table (under
      // Xen an update each: half of a forkwait's). The gap between them is
      // inside that table and has no leaves.
      VirtAddr end = v.end;
      while (i < count_ && fork_mode(vmas_[i]) == mode && vmas_[i].start < align_up(end, kTableSpan))
        end = vmas_[i++].end;
      r = PVOP(range.fork_range)(root_, child->root_, v.start, pages_of(end - v.start), mode, section);
    }
    r = finish(section, r);
  }
  if (r.is_error()) {
    must(child->destroy(), "destroy half-forked space");
    return r.error();
  }
  return child;
}

ErrorOr<void> AddressSpace::fork_vma_sharing_tables(AddressSpace& child, const Vma& v, ForkMode mode,
                                                    LazyMmuSection& section) {
  for (VirtAddr at = v.start; at < v.end;) {
    const VirtAddr table = align_down(at, kTableSpan);
    const VirtAddr next = table + kTableSpan < v.end ? table + kTableSpan : v.end;
    // A table that straddles two VMAs was shared with the first of them.
    const bool shared_already = table < v.start && shared_tables_up_to_ > table;
    bool done = shared_already;
    if (!done && table_holds_only_private_memory(table))
      done = TRY(PVOP(range.share_table)(root_, child.root_, table, kShareMinLeaves, section));
    if (done)
      shared_tables_up_to_ = table + kTableSpan;
    else
      TRY(PVOP(range.fork_range)(root_, child.root_, at, (next - at) >> kPageShift, mode, section));
    at = next;
  }
  return {};
}

ErrorOr<void> AddressSpace::destroy() {
  // No thread runs in the space any more (the last one is exiting, or exec
  // replaced it), so no fault can be waiting; the lock orders this teardown
  // after any fault that was still finishing on another CPU.
  SpinGuard guard(lock_);
  // This CPU stops running on the space first. Its root may be gone from
  // CR3 already (the scheduler loaded the kernel's, or exec loaded the new
  // image's): then only the bookkeeping follows.
  if (loaded_mm() == this) {
    if (g_current_root == root_) {
      TRY(switch_to_kernel_mm());
    } else {
      forget_loaded(mask_cpu());
    }
  }
  LazyMmuSection section(root_, tlb_, OnRefusal::Retry);
  auto r = PVOP(range.teardown)(root_, put_frames_after_flush(section), section);
  if (!r.is_error()) r = PVOP(range.release_user_tables)(root_, section);
  TRY(finish(section, r));
  // Lazy TLB: CPUs that went idle on this root still have it loaded (and
  // are still in the mask). The root must not be reused or freed under
  // them: they switch to the kernel's root first.
  const CpuMask lazy = tlb_.cpus.snapshot().without(xcpu::this_cpu_id());
  if (!lazy.empty()) {
    const CpuMask refused = ask_to_leave_root(lazy, root_);
    if (!refused.empty())
      panic("address space teardown: CPU %u still runs on root 0x%lx and cannot be asked to leave it", refused.next(0),
            raw(root_));
  }
  drop_sources();
  count_ = 0;
  SpinGuard spaces(spaces_lock());
  in_use_ = false;
  return release_root(root_);
}

}  // namespace pvk
